"""One policyd daemon and one renderer sidecar for the whole session, over real sockets."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from testkit.diffusion import sd15_model_index
from testkit.llama import MODEL_70B, model_70b_manifest

from policyd.clients.policyctl.conformance.daemons import serving

from .support import (
    MODEL_NAME,
    RULES,
    RUNTIME_70B,
    RUNTIME_NAME,
    isvc_manifest,
    model_manifest,
    spec_manifest,
    write_yaml,
)


@dataclass(frozen=True)
class Files:
    """Input files a user would pass to policyctl."""

    isvc: Path  # the spec's InferenceService, no runtime named: auto-selection
    isvc_named_sr: Path  # names the ServingRuntime
    isvc_named_70b: Path  # names the 70B ClusterServingRuntime, which does not declare support
    isvc_70b: Path  # spec 004's 70B InferenceService: the 70B model on the 70B runtime it names
    isvc_sideways: Path  # spec.deploymentMode: Sideways
    model_dir: Path  # a diffusers model directory with a model_index.json


@pytest.fixture(scope="session")
def catalog_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("catalog")
    write_yaml(directory / "runtime.yaml", spec_manifest("004", "ServingRuntime", RUNTIME_NAME))
    write_yaml(directory / "runtime-70b.yaml", spec_manifest("004", "ClusterServingRuntime", RUNTIME_70B))
    write_yaml(directory / "model.yaml", model_manifest(), model_70b_manifest())
    return directory


@pytest.fixture(scope="session")
def daemon(catalog_dir: Path) -> Iterator[str]:
    args = ["--rules", str(RULES), "--catalog", str(catalog_dir), "--log-level", "warning"]
    with serving("policyd.daemon.main", args, "127.0.0.1:0") as address:
        yield address


@pytest.fixture(scope="session")
def renderer() -> Iterator[str]:
    with serving("policyd.clients.renderer.main", [], "unix:{tmp}/r.sock") as address:
        yield address


@pytest.fixture(scope="session")
def files(tmp_path_factory: pytest.TempPathFactory) -> Files:
    directory = tmp_path_factory.mktemp("inputs")
    model_dir = directory / "sd15"
    model_dir.mkdir()
    (model_dir / "model_index.json").write_text(json.dumps(sd15_model_index()))
    assert isvc_manifest()["metadata"]["name"] == MODEL_NAME
    return Files(
        isvc=write_yaml(directory / "isvc.yaml", isvc_manifest()),
        isvc_named_sr=write_yaml(
            directory / "isvc-sr.yaml", isvc_manifest(runtime={"name": RUNTIME_NAME, "kind": "ServingRuntime"})
        ),
        isvc_named_70b=write_yaml(directory / "isvc-70b.yaml", isvc_manifest(runtime={"name": RUNTIME_70B})),
        isvc_70b=write_yaml(
            directory / "isvc-70b-model.yaml", isvc_manifest(model={"name": MODEL_70B}, runtime={"name": RUNTIME_70B})
        ),
        isvc_sideways=write_yaml(directory / "isvc-sideways.yaml", isvc_manifest(deploymentMode="Sideways")),
        model_dir=model_dir,
    )

"""policyctl apply / delete and the watched catalog directory, on a daemon of this module's own
(so the session daemon's catalog stays as the other tests expect it)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from clients.conformance.processes import serving

from .conftest import Files
from .support import (
    MODEL_NAME,
    NAMESPACE,
    RULES,
    RUNTIME_NAME,
    model_manifest,
    no_traceback,
    policyctl,
    spec_manifest,
    succeeded,
    write_yaml,
)


@pytest.fixture(scope="module")
def watched(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("watched")


@pytest.fixture(scope="module")
def own_daemon(watched: Path) -> Iterator[str]:
    args = ["--rules", str(RULES), "--catalog", str(watched), "--log-level", "warning"]
    with serving("policyd.server.main", args, "127.0.0.1:0") as address:
        yield address


def _status(address: str) -> dict[str, Any]:
    result = policyctl("status", address=address)
    succeeded(result)
    status: dict[str, Any] = yaml.safe_load(result.stdout)
    return status


def test_apply_select_delete(own_daemon: str, files: Files, tmp_path: Path) -> None:
    model = write_yaml(tmp_path / "model.yaml", model_manifest())
    runtime = write_yaml(tmp_path / "runtime.yaml", spec_manifest("004", "ServingRuntime", RUNTIME_NAME))
    before = _status(own_daemon)["revisions"]["catalogRevision"]

    applied = policyctl("apply", "-f", str(model), "-f", str(runtime), address=own_daemon)
    succeeded(applied)
    revision = _status(own_daemon)["revisions"]["catalogRevision"]
    assert revision != before
    assert applied.stdout.strip() == f"catalog {revision}: 1 runtimes, 1 models"

    selected = policyctl("select", "-f", str(files.isvc), address=own_daemon)
    succeeded(selected)
    assert f"Warning: Runtime {RUNTIME_NAME} will be auto-selected for model {MODEL_NAME}" in selected.stdout

    deleted = policyctl("delete", "ServingRuntime", RUNTIME_NAME, "-n", NAMESPACE, address=own_daemon)
    succeeded(deleted)
    assert deleted.stdout.strip().endswith(": 1 deleted")
    again = policyctl("delete", "ServingRuntime", RUNTIME_NAME, "-n", NAMESPACE, address=own_daemon)
    assert again.returncode == 1
    assert again.stdout.strip().endswith(": 0 deleted")

    nothing = policyctl("select", "-f", str(files.isvc), address=own_daemon)
    no_traceback(nothing)
    assert nothing.returncode == 1
    assert nothing.stdout.startswith("no runtime found to support model safetensors")


def test_apply_refuses_autoscaler_policy_ref_in_a_runtime(own_daemon: str, tmp_path: Path) -> None:
    runtime = spec_manifest("004", "ServingRuntime", RUNTIME_NAME)
    runtime["metadata"]["name"] = "with-autoscaler"
    runtime["spec"]["autoscalerPolicyRef"] = {"name": "keda"}
    result = policyctl("apply", "-f", str(write_yaml(tmp_path / "r.yaml", runtime)), address=own_daemon)
    no_traceback(result)
    assert result.returncode == 1
    assert result.stderr.startswith("error: INVALID_ARGUMENT: objects[0].spec.autoscalerPolicyRef: ")
    assert "with-autoscaler" in result.stderr


def _wait_for(address: str, predicate: Any, timeout: float = 10.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        status = _status(address)
        if predicate(status) or time.monotonic() > deadline:
            return status
        time.sleep(0.2)


def test_the_catalog_directory_is_watched(own_daemon: str, watched: Path) -> None:
    runtimes = _status(own_daemon)["runtimes"]
    write_yaml(watched / "runtime-70b.yaml", spec_manifest("004", "ClusterServingRuntime", "sglang-llama-3-3-70b"))
    status = _wait_for(own_daemon, lambda s: s["runtimes"] == runtimes + 1)
    assert status["runtimes"] == runtimes + 1
    assert status["catalogErrors"] == []

    broken = model_manifest()
    broken["metadata"]["name"] = "broken"
    broken["spec"]["modelParameterSize"] = "7Q"
    write_yaml(watched / "broken.yaml", broken)
    status = _wait_for(own_daemon, lambda s: s["catalogErrors"])
    (error,) = status["catalogErrors"]
    assert str(watched / "broken.yaml") in error
    assert "spec.modelParameterSize" in error
    assert status["runtimes"] == runtimes + 1  # the good manifests keep serving

"""policyctl apply / delete and the watched catalog directory, on a daemon of this module's own
(so the session daemon's catalog stays as the other tests expect it)."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from testkit.diffusion import sd15_model_index

from policyd.clients.policyctl.conformance.daemons import serving

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
    with serving("policyd.daemon.main", args, "127.0.0.1:0") as address:
        yield address


def _status(address: str) -> dict[str, Any]:
    result = policyctl("status", "-o", "yaml", address=address)
    succeeded(result)
    status: dict[str, Any] = yaml.safe_load(result.stdout)
    return status


def test_apply_select_delete(own_daemon: str, files: Files, tmp_path: Path) -> None:
    model = write_yaml(tmp_path / "model.yaml", model_manifest())
    runtime = write_yaml(tmp_path / "runtime.yaml", spec_manifest("004", "ServingRuntime", RUNTIME_NAME))
    before = _status(own_daemon)["revisions"]["catalogRevision"]

    applied = policyctl("apply", "-f", str(model), "-f", str(runtime), address=own_daemon)
    succeeded(applied)
    assert _status(own_daemon)["revisions"]["catalogRevision"] != before
    assert applied.stdout.splitlines() == [
        f"clusterbasemodel.ome.io/{MODEL_NAME} created",
        f"servingruntime.ome.io/{RUNTIME_NAME} created",
    ]

    selected = policyctl("select", "-f", str(files.isvc), address=own_daemon)
    succeeded(selected)
    assert f"Warning: Runtime {RUNTIME_NAME} will be auto-selected for model {MODEL_NAME}" in selected.stderr

    deleted = policyctl("delete", "ServingRuntime", RUNTIME_NAME, "-n", NAMESPACE, address=own_daemon)
    succeeded(deleted)
    assert deleted.stdout.splitlines() == [f'servingruntime.ome.io "{RUNTIME_NAME}" deleted']
    again = policyctl("delete", "ServingRuntime", RUNTIME_NAME, "-n", NAMESPACE, address=own_daemon)
    no_traceback(again)
    assert again.returncode == 1
    assert again.stderr.splitlines() == [
        f'Error from server (NotFound): servingruntimes.ome.io "{RUNTIME_NAME}" not found'
    ]

    nothing = policyctl("select", "-f", str(files.isvc), address=own_daemon)
    no_traceback(nothing)
    assert nothing.returncode == 1
    assert nothing.stdout == ""
    assert nothing.stderr.startswith("error: no runtime found to support model safetensors")


def test_apply_refuses_autoscaler_policy_ref_in_a_runtime(own_daemon: str, tmp_path: Path) -> None:
    runtime = spec_manifest("004", "ServingRuntime", RUNTIME_NAME)
    runtime["metadata"]["name"] = "with-autoscaler"
    runtime["spec"]["autoscalerPolicyRef"] = {"name": "keda"}
    result = policyctl("apply", "-f", str(write_yaml(tmp_path / "r.yaml", runtime)), address=own_daemon)
    no_traceback(result)
    assert result.returncode == 1
    assert result.stderr.startswith(
        f'error: {tmp_path / "r.yaml"}: ServingRuntime "with-autoscaler" is invalid: spec.autoscalerPolicyRef: '
    )


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
    broken["spec"]["modelFormat"]["version"] = 1.0  # a number where the CRD takes a string
    write_yaml(watched / "broken.yaml", broken)
    status = _wait_for(own_daemon, lambda s: s["catalogErrors"])
    (error,) = status["catalogErrors"]
    assert str(watched / "broken.yaml") in error
    assert "spec.modelFormat.version" in error
    assert status["runtimes"] == runtimes + 1  # the good manifests keep serving


def test_apply_and_delete_as_kubectl(own_daemon: str, tmp_path: Path) -> None:
    directory = tmp_path / "manifests"
    directory.mkdir()
    runtime = spec_manifest("004", "ClusterServingRuntime", "sglang-llama-3-3-70b")
    runtime["metadata"]["name"] = "kubectl-style"
    model = model_manifest()
    model["metadata"]["name"] = "kubectl-style-model"
    write_yaml(directory / "a-runtime.yaml", runtime)
    write_yaml(directory / "b-model.json", model)
    (directory / "notes.txt").write_text("not a manifest")

    first = policyctl("apply", "-f", str(directory), address=own_daemon)
    succeeded(first)
    assert first.stdout.splitlines() == [
        "clusterservingruntime.ome.io/kubectl-style created",
        "clusterbasemodel.ome.io/kubectl-style-model created",
    ]
    again = policyctl("apply", "-f", str(directory), address=own_daemon)
    assert again.stdout.splitlines() == [
        "clusterservingruntime.ome.io/kubectl-style unchanged",
        "clusterbasemodel.ome.io/kubectl-style-model unchanged",
    ]
    runtime["spec"]["disabled"] = True
    write_yaml(directory / "a-runtime.yaml", runtime)
    configured = policyctl("apply", "-f", str(directory / "a-runtime.yaml"), address=own_daemon)
    succeeded(configured)
    assert configured.stdout.strip() == "clusterservingruntime.ome.io/kubectl-style configured"
    named = policyctl("apply", "-f", str(directory / "a-runtime.yaml"), "-o", "name", address=own_daemon)
    assert named.stdout.splitlines() == ["clusterservingruntime.ome.io/kubectl-style"]

    for words in (["ClusterServingRuntime", "kubectl-style"], ["clusterbasemodels/kubectl-style-model"]):
        deleted = policyctl("delete", *words, address=own_daemon)
        succeeded(deleted)
    gone = policyctl("delete", "clusterbasemodel", "kubectl-style-model", address=own_daemon)
    assert gone.returncode == 1
    assert 'clusterbasemodels.ome.io "kubectl-style-model" not found' in gone.stderr
    quiet = policyctl("delete", "clusterbasemodel", "kubectl-style-model", "--ignore-not-found", address=own_daemon)
    succeeded(quiet)
    assert quiet.stdout == quiet.stderr == ""


def test_apply_and_delete_input_errors_are_kubectls(own_daemon: str, tmp_path: Path) -> None:
    (tmp_path / "empty.yaml").write_text("---\n")
    empty = policyctl("apply", "-f", str(tmp_path / "empty.yaml"), address=own_daemon)
    no_traceback(empty)
    assert (empty.returncode, empty.stderr.strip()) == (1, "error: no objects passed to apply")
    missing = policyctl("apply", "-f", str(tmp_path / "nope.yaml"), address=own_daemon)
    assert (missing.returncode, missing.stderr.strip()) == (
        1,
        f'error: the path "{tmp_path / "nope.yaml"}" does not exist',
    )
    unknown = policyctl("delete", "deployment", "web", address=own_daemon)
    assert unknown.returncode == 1
    assert unknown.stderr.startswith('error: the server doesn\'t have a resource type "deployment"')
    isvc = policyctl(
        "apply",
        "-f",
        str(write_yaml(tmp_path / "isvc.yaml", spec_manifest("004", "InferenceService", MODEL_NAME))),
        address=own_daemon,
    )
    # the catalog holds InferenceServices too (the controller syncs them; policyctl diff decides them)
    succeeded(isvc)
    assert isvc.stdout.strip() == f"inferenceservice.ome.io/{MODEL_NAME} created"
    gone = policyctl("delete", "isvc", MODEL_NAME, "-n", NAMESPACE, address=own_daemon)
    succeeded(gone)
    assert gone.stdout.strip() == f'inferenceservice.ome.io "{MODEL_NAME}" deleted'
    unknown_ome = policyctl("delete", "benchmarkjobs/x", address=own_daemon)
    assert unknown_ome.returncode == 1 and "the server doesn't have a resource type" in unknown_ome.stderr


def test_a_model_inspected_with_a_base_model_applies_as_printed(own_daemon: str, tmp_path: Path) -> None:
    model_dir = tmp_path / "sd15"
    model_dir.mkdir()
    (model_dir / "model_index.json").write_text(json.dumps(sd15_model_index()))
    base = {"apiVersion": "ome.io/v1beta1", "kind": "ClusterBaseModel", "metadata": {"name": "sd15"}, "spec": {}}
    inspected = policyctl(
        "model",
        "inspect",
        str(model_dir),
        "--base-model",
        str(write_yaml(tmp_path / "b.yaml", base)),
        address=own_daemon,
    )
    succeeded(inspected)
    applied = policyctl("apply", "-f", "-", stdin=inspected.stdout, address=own_daemon)
    succeeded(applied)
    assert applied.stdout.strip() == "clusterbasemodel.ome.io/sd15 created"
    assert applied.stderr == ""  # no unknown fields in what inspect printed


def _overrides(address: str) -> list[dict[str, Any]]:
    overrides: list[dict[str, Any]] = _status(address).get("overrides", [])
    return overrides


def test_an_api_change_to_a_watched_object_is_shown_and_ends_when_the_file_changes(
    own_daemon: str, watched: Path, tmp_path: Path
) -> None:
    name = "watched-and-applied"
    runtime = spec_manifest("004", "ClusterServingRuntime", "sglang-llama-3-3-70b")
    runtime["metadata"]["name"] = name
    file = write_yaml(watched / f"{name}.yaml", runtime)
    _wait_for(
        own_daemon,
        lambda s: name in str(policyctl("explain", "--model", MODEL_NAME, "-o", "name", address=own_daemon).stdout),
    )

    changed = dict(runtime, spec={**runtime["spec"], "disabled": True})
    applied = policyctl("apply", "-f", str(write_yaml(tmp_path / "changed.yaml", changed)), address=own_daemon)
    succeeded(applied)
    assert applied.stdout.strip() == f"clusterservingruntime.ome.io/{name} configured"
    assert applied.stderr.strip() == (
        f"Warning: clusterservingruntime.ome.io/{name} is also in the watched catalog directory ({file}): "
        "this change holds until the object changes there, or policyd restarts"
    )
    (override,) = _overrides(own_daemon)
    assert override["key"]["name"] == name and override["action"] == "applied" and override["file"] == str(file)
    table = policyctl("status", address=own_daemon).stdout
    assert "OVERRIDES OF THE WATCHED DIRECTORY" in table
    at = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC \(\d+s ago\)"
    assert re.search(rf"clusterservingruntime.ome.io/{name}\s+applied\s+{at}\s+{re.escape(str(file))}", table), table

    runtime["spec"]["supportedModelFormats"][0]["priority"] = 7  # the directory's object changes: it serves again
    write_yaml(file, runtime)
    status = _wait_for(own_daemon, lambda s: not s.get("overrides"))
    assert status.get("overrides", []) == []
    served = policyctl(
        "explain",
        "--model",
        MODEL_NAME,
        "-o",
        "jsonpath={.runtimes[?(@.name=='" + name + "')].reason.ruleId}",
        address=own_daemon,
    )
    assert served.stdout != "runtime-disabled"

    deleted = policyctl("delete", "clusterservingruntime", name, address=own_daemon)
    succeeded(deleted)
    assert "is also in the watched catalog directory" in deleted.stderr
    ((override,),) = [_overrides(own_daemon)]
    assert override["action"] == "deleted"
    file.unlink()  # the directory no longer has it either: nothing left to override
    _wait_for(own_daemon, lambda s: not s.get("overrides"))

"""policyctl diff and policyctl lint as a user runs them: real processes, a real daemon over a real
socket (its catalog a watched directory holding the spec's runtimes, model and InferenceService),
and the same commands offline with --catalog DIR. Nothing diff asks about is applied."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from policyd.clients.policyctl.conformance.daemons import serving

from .support import (
    MODEL_NAME,
    NAMESPACE,
    RULES,
    RUNTIME_70B,
    RUNTIME_NAME,
    SHARED,
    isvc_manifest,
    model_manifest,
    no_traceback,
    policyctl,
    spec_manifest,
    succeeded,
    write_yaml,
)

ISVC = f"{NAMESPACE}/{MODEL_NAME}"
OME_CATALOG = SHARED / "data" / "ome-catalog"


def _runtime(**spec: Any) -> dict[str, Any]:
    doc = spec_manifest("004", "ServingRuntime", RUNTIME_NAME)
    doc["spec"].update(spec)
    return doc


@pytest.fixture(scope="module")
def catalog_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The spec's ServingRuntime and 70B ClusterServingRuntime, the 3B model, and the
    InferenceService the controller would have synced."""
    directory = tmp_path_factory.mktemp("whatif-catalog")
    write_yaml(directory / "runtime.yaml", _runtime())
    write_yaml(directory / "runtime-70b.yaml", spec_manifest("004", "ClusterServingRuntime", RUNTIME_70B))
    write_yaml(directory / "model.yaml", model_manifest())
    write_yaml(directory / "isvc.yaml", isvc_manifest())
    return directory


@pytest.fixture(scope="module")
def daemon(catalog_dir: Path) -> Iterator[str]:
    args = ["--rules", str(RULES), "--catalog", str(catalog_dir), "--log-level", "warning"]
    with serving("policyd.daemon.main", args, "127.0.0.1:0") as address:
        yield address


def _revision(address: str) -> str:
    status = policyctl("status", "-o", "json", address=address)
    succeeded(status)
    revision: str = json.loads(status.stdout)["revisions"]["catalogRevision"]
    return revision


def test_the_catalog_holds_the_synced_inference_service(daemon: str) -> None:
    status = policyctl("status", "-o", "json", address=daemon)
    succeeded(status)
    data = json.loads(status.stdout)
    assert (data["runtimes"], data["models"], data["inferenceServices"], data["acceleratorClasses"]) == (2, 1, 1, 0)


def test_deleting_the_chosen_runtime_changes_the_decision_and_exits_1(daemon: str, catalog_dir: Path) -> None:
    before = _revision(daemon)
    result = policyctl("diff", "--delete", f"servingruntime/{RUNTIME_NAME}", "-n", NAMESPACE, address=daemon)
    no_traceback(result)
    assert result.returncode == 1, result.stderr
    assert result.stdout.splitlines() == [
        f"{ISVC}: ServingRuntime/{RUNTIME_NAME} → refused (RuntimeNotFound) (ServingRuntime/{RUNTIME_NAME} removed)"
    ]
    # nothing was applied: the catalog is as it was and the runtime still serves
    assert _revision(daemon) == before
    selected = policyctl("select", "-f", str(catalog_dir / "isvc.yaml"), "-o", "name", address=daemon)
    succeeded(selected)
    assert selected.stdout.split() == [f"servingruntime.ome.io/{RUNTIME_NAME}"]


def test_json_lists_each_change_with_its_before_and_after_verdicts(daemon: str, tmp_path: Path) -> None:
    better = _runtime(supportedModelFormats=[{**_runtime()["spec"]["supportedModelFormats"][0], "priority": 2}])
    better["metadata"]["name"] = "sglang-llama-3-2-3b-priority"
    path = write_yaml(tmp_path / "better.yaml", better)
    result = policyctl("diff", "--apply", str(path), "-o", "json", address=daemon)
    no_traceback(result)
    assert result.returncode == 1, result.stderr
    data = json.loads(result.stdout)
    (change,) = data["changes"]
    assert change["inferenceService"] == {"kind": "InferenceService", "namespace": NAMESPACE, "name": MODEL_NAME}
    assert (change["before"]["verdict"]["name"], change["before"]["verdict"]["score"]) == (RUNTIME_NAME, 2)
    assert (change["after"]["verdict"]["name"], change["after"]["verdict"]["score"]) == (better["metadata"]["name"], 4)
    outranked = next(c for c in change["causes"] if c["cause"] == "outranked")
    assert (outranked["rankKey"], outranked["value"], outranked["byValue"]) == ("score", "2", "4")
    assert data["objects"] == [
        {
            "key": {"kind": "ServingRuntime", "namespace": NAMESPACE, "name": better["metadata"]["name"]},
            "action": "created",
            "overridesFile": "",
            "kept": False,
        }
    ]
    table = policyctl("diff", "--apply", str(path), address=daemon)
    assert table.stdout.strip() == (
        f"{ISVC}: ServingRuntime/{RUNTIME_NAME} → ServingRuntime/{better['metadata']['name']}"
        f" (ServingRuntime/{better['metadata']['name']} ranks first on score: 4 over 2;"
        f" ServingRuntime/{better['metadata']['name']} added)"
    )


def test_applying_what_the_catalog_already_holds_changes_nothing_and_exits_0(daemon: str, catalog_dir: Path) -> None:
    result = policyctl("diff", "--apply", str(catalog_dir / "runtime.yaml"), address=daemon)
    succeeded(result)
    assert result.stdout == ""
    data = json.loads(policyctl("diff", "--apply", str(catalog_dir), "-o", "json", address=daemon).stdout)
    assert data["decided"] == 1 and data["changes"] == []
    assert {o["action"] for o in data["objects"]} == {"unchanged"}


def test_a_named_runtime_that_stops_declaring_support_shows_its_advisory(daemon: str, tmp_path: Path) -> None:
    named = isvc_manifest(runtime={"name": RUNTIME_NAME, "kind": "ServingRuntime"})
    named["metadata"]["name"] = "named"
    entry = {**_runtime()["spec"]["supportedModelFormats"][0]}
    entry["modelFramework"] = {"name": "transformers", "version": "4.47.0"}
    moved = write_yaml(tmp_path / "moved.yaml", _runtime(supportedModelFormats=[entry]))
    isvc = write_yaml(tmp_path / "named.yaml", named)
    result = policyctl("diff", "--apply", str(moved), "--isvc", str(isvc), address=daemon)
    no_traceback(result)
    assert result.returncode == 1
    lines = dict(line.split(": ", 1) for line in result.stdout.splitlines())
    assert lines[f"{NAMESPACE}/named"] == (
        f"ServingRuntime/{RUNTIME_NAME} → ServingRuntime/{RUNTIME_NAME} [advisory]"
        f" (ServingRuntime/{RUNTIME_NAME} stops declaring support: model format"
        " 'mt:safetensors:1.0.0:LlamaForCausalLM:transformers:4.45.0.dev0' not in supported formats:"
        " framework version mismatch (model=4.45.0.dev0, runtime=4.47.0))"
    )
    data = json.loads(
        policyctl("diff", "--apply", str(moved), "--isvc", str(isvc), "-o", "json", address=daemon).stdout
    )
    change = next(c for c in data["changes"] if c["inferenceService"]["name"] == "named")
    assert change["before"]["advisory"] == ""
    assert change["after"]["advisory"].startswith(f"Runtime {RUNTIME_NAME} does not declare support for model")


def test_a_named_runtime_that_starts_declaring_support_loses_its_advisory(daemon: str, tmp_path: Path) -> None:
    named = isvc_manifest(runtime={"name": RUNTIME_70B})
    named["metadata"]["name"] = "named-70b"
    fixed = spec_manifest("004", "ClusterServingRuntime", RUNTIME_70B)
    fixed["spec"]["supportedModelFormats"][0]["modelFramework"]["version"] = "4.45.0.dev0"
    fixed["spec"].pop("modelSizeRange", None)
    args = ["--apply", str(write_yaml(tmp_path / "fixed.yaml", fixed))]
    result = policyctl("diff", *args, "--isvc", str(write_yaml(tmp_path / "n.yaml", named)), address=daemon)
    no_traceback(result)
    line = next(x for x in result.stdout.splitlines() if x.startswith(f"{NAMESPACE}/named-70b: "))
    assert line.startswith(
        f"{NAMESPACE}/named-70b: ClusterServingRuntime/{RUNTIME_70B} [advisory] → ClusterServingRuntime/{RUNTIME_70B}"
        f" (ClusterServingRuntime/{RUNTIME_70B} declares support (was: "
    )


def test_another_rules_directory_shows_what_its_rules_would_decide(daemon: str, tmp_path: Path) -> None:
    extra = tmp_path / "extra"
    extra.mkdir()
    retired = {
        "id": "sglang-v0-5-retired",
        "order": 5000,
        "applies_to": "runtime",
        "effect": "reject",
        "kind": "NotAutoSelectable",
        "when": {"runtime_images": {"contains": _runtime()["spec"]["engineConfig"]["runner"]["image"]}},
        "reason": "this sglang image is retired",
        "tests": [{"facts": {"runtime_images": ["x"]}, "expect": {"effect": "pass"}}],
    }
    (extra / "retired.yaml").write_text(yaml.safe_dump({"rules": [retired]}))
    result = policyctl("diff", "--rules", str(extra), address=daemon)
    no_traceback(result)
    assert result.returncode == 1
    assert result.stdout.strip() == (
        f"{ISVC}: ServingRuntime/{RUNTIME_NAME} → refused (RuntimeNotFound)"
        f" (ServingRuntime/{RUNTIME_NAME}: this sglang image is retired)"
    )
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "x.yaml").write_text("rules: [")
    refused = policyctl("diff", "--rules", str(broken), address=daemon)
    no_traceback(refused)
    assert refused.returncode == 2
    assert refused.stderr.startswith(f"error: --rules {broken}: ") and "x.yaml" in refused.stderr


def test_diff_offline_over_a_directory_answers_as_the_daemon(daemon: str, catalog_dir: Path) -> None:
    args = ["diff", "--delete", f"servingruntime/{RUNTIME_NAME}", "-n", NAMESPACE]
    live = policyctl(*args, address=daemon)
    offline = policyctl(*args, "--catalog", str(catalog_dir))
    no_traceback(offline)
    assert (offline.returncode, offline.stdout) == (live.returncode, live.stdout) == (1, live.stdout)
    both = policyctl(*args, "--catalog", str(catalog_dir), "--address", daemon)
    assert both.returncode == 2 and "not both" in both.stderr


@pytest.mark.parametrize(
    ("args", "stderr"),
    [
        (
            ["--delete", "servingruntime/nope", "-n", NAMESPACE],
            f"ServingRuntime nope is not in the catalog in namespace {NAMESPACE}",
        ),
        (["--delete", "deployment/web"], 'the server doesn\'t have a resource type "deployment"'),
        (["--delete", "nope"], "--delete takes KIND/NAME"),
        ([], "must specify what would change"),
    ],
)
def test_diff_errors_exit_above_1_as_kubectl_diff_does(daemon: str, args: list[str], stderr: str) -> None:
    result = policyctl("diff", *args, address=daemon)
    no_traceback(result)
    assert result.returncode == 2, result.stdout
    assert stderr in result.stderr


def test_diff_of_an_unreachable_daemon_fails_with_2(tmp_path: Path) -> None:
    result = policyctl("diff", "--delete", "clusterservingruntime/x", address="127.0.0.1:1")
    assert result.returncode == 2
    assert result.stderr.startswith("error: cannot reach policyd at 127.0.0.1:1")


def test_isvc_takes_inference_services_only(daemon: str, catalog_dir: Path) -> None:
    result = policyctl(
        "diff", "--delete", "clusterservingruntime/x", "--isvc", str(catalog_dir / "model.yaml"), address=daemon
    )
    assert result.returncode == 2
    assert "--isvc takes InferenceServices, not ClusterBaseModel" in result.stderr


# -- lint ----------------------------------------------------------------------------------------


def test_lint_without_errors_exits_0_and_says_what_it_judged(daemon: str) -> None:
    result = policyctl("lint", address=daemon)
    succeeded(result)
    # the model in default, where only the 70B runtime (never auto-selected) is in scope
    assert result.stdout.splitlines()[1].startswith("info       model-without-auto-selectable-runtime")
    assert result.stdout.splitlines()[-1].startswith("1 finding: 0 errors, 0 warnings, 1 info (2 models decided;")
    assert result.stdout.strip().endswith(f"catalog {_revision(daemon)})")


def test_lint_finds_an_undefined_accelerator_class_an_error_and_exits_1(daemon: str, tmp_path: Path) -> None:
    classes = {"apiVersion": "ome.io/v1beta1", "kind": "AcceleratorClass", "metadata": {"name": "nvidia-h100"}}
    runtime = copy.deepcopy(_runtime(acceleratorRequirements={"acceleratorClasses": ["nvidia-a100"]}))
    applied = policyctl("apply", "-f", str(write_yaml(tmp_path / "ac.yaml", classes, runtime)), address=daemon)
    succeeded(applied)
    try:
        result = policyctl("lint", "-o", "json", address=daemon)
        no_traceback(result)
        assert result.returncode == 1
        found = [f for f in json.loads(result.stdout)["findings"] if f["id"] == "accelerator-class-undefined"]
        # nvidia-a100 of the runtime; nvidia-l40s of the 70B runtime's acceleratorConfig
        assert [(f["severity"], f["message"].split()[2], f["objects"]) for f in found] == [
            ("error", "nvidia-a100", [{"kind": "ServingRuntime", "namespace": NAMESPACE, "name": RUNTIME_NAME}]),
            ("error", "nvidia-l40s", [{"kind": "ClusterServingRuntime", "namespace": "", "name": RUNTIME_70B}]),
        ]
        table = policyctl("lint", "-o", "wide", address=daemon)
        assert table.returncode == 1
        header, row = table.stdout.splitlines()[:2]
        assert header.split() == ["SEVERITY", "ID", "MESSAGE", "OBJECTS"]
        assert re.split(r" {2,}", row)[:3] == [
            "error",
            "accelerator-class-undefined",
            "accelerator class nvidia-a100 is defined by none of the catalog's 1 AcceleratorClasses;"
            f" named by ServingRuntime/{RUNTIME_NAME}",
        ]
        assert row.endswith(f"ServingRuntime/{RUNTIME_NAME}")
    finally:
        restore = write_yaml(tmp_path / "restore.yaml", _runtime())
        succeeded(policyctl("apply", "-f", str(restore), address=daemon))
        succeeded(policyctl("delete", "acceleratorclass", "nvidia-h100", address=daemon))


def test_lint_offline_finds_the_diffusers_backend_refusal() -> None:
    result = policyctl("lint", "--catalog", "examples/diffusers-backend", "-o", "json")
    no_traceback(result)
    assert result.returncode == 1
    findings = json.loads(result.stdout)["findings"]
    assert [(f["id"], f["severity"], f["objects"][0]["name"]) for f in findings] == [
        ("runtime-refused-whatever-the-model", "error", "qwen-image-diffusers-teacache")
    ]


def test_lint_offline_over_the_ome_catalog() -> None:
    result = policyctl("lint", "--catalog", str(OME_CATALOG), "-o", "json")
    no_traceback(result)
    assert result.returncode == 0, result.stderr  # warnings and info only
    data = json.loads(result.stdout)
    ids = {f["id"] for f in data["findings"]}
    assert {"ambiguous-tie", "runtime-shadowed", "size-ranges-overlap", "model-refused"} <= ids
    assert {f["severity"] for f in data["findings"]} == {"warning", "info"}
    tie = next(f for f in data["findings"] if f["id"] == "ambiguous-tie" and f["objects"][0]["name"] == "gpt-oss-120b")
    assert [o["name"] for o in tie["objects"]][1:3] == ["srt-gpt-oss-120b-grpc", "srt-gpt-oss-20b"]


def test_lint_severity_hides_the_lesser_findings() -> None:
    everything = json.loads(policyctl("lint", "--catalog", "examples/catalog", "-o", "json").stdout)["findings"]
    assert {f["severity"] for f in everything} == {"info"}
    warnings = policyctl("lint", "--catalog", "examples/catalog", "--severity", "warning")
    succeeded(warnings)
    assert warnings.stdout.startswith(
        f"{len(everything)} findings: 0 errors, 0 warnings, {len(everything)} info, 0 shown"
    )


def test_lint_of_a_broken_directory_reports_its_manifest_errors(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text("apiVersion: ome.io/v1beta1\nkind: ClusterServingRuntime\nmetadata: {}\n")
    result = policyctl("lint", "--catalog", str(tmp_path))
    no_traceback(result)
    assert result.returncode == 1
    assert result.stderr.startswith(f"error: catalog: {tmp_path / 'bad.yaml'}: metadata.name: is required")
    missing = policyctl("lint", "--catalog", str(tmp_path / "nope"))
    assert missing.returncode == 1 and "does not exist" in missing.stderr

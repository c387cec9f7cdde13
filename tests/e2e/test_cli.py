"""policyctl against the session's daemon, as a user runs it."""

from __future__ import annotations

import json
import re
import socket
from pathlib import Path

import yaml
from testkit.shared import CATALOG

from policyd.policy.loader import load_policy

from .conftest import Files
from .support import (
    MODEL_NAME,
    NAMESPACE,
    ROOT,
    RULES,
    RUNTIME_70B,
    RUNTIME_NAME,
    isvc_manifest,
    last_line,
    no_traceback,
    policyctl,
    spec_manifest,
    succeeded,
    write_yaml,
)

HEADER = ("RUNTIME", "KIND", "SELECTABLE", "COMPATIBLE", "SCORE", "REASON")
FORMAT = "mt:safetensors:1.0.0:LlamaForCausalLM:transformers:4.45.0.dev0"
# The formats come before the size range: the 3B model's framework version is the 70B runtime's first problem.
FORMAT_REASON = (
    "model format 'mt:safetensors:1.0.0:LlamaForCausalLM:transformers:4.45.0.dev0' not in supported formats: "
    "framework version mismatch (model=4.45.0.dev0, runtime=4.47.0.dev0)"
)


def _table(stdout: str) -> list[list[str]]:
    """The rows of the kubectl-style table that starts at the RUNTIME header; checks the columns line up."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("RUNTIME "))
    header, rows = lines[start], lines[start + 1 :]
    assert re.split(r" {2,}", header) == list(HEADER), header
    offsets = [header.index(h) for h in HEADER]
    out = []
    for row in rows:
        cells = [row[a:b].strip() for a, b in zip(offsets, [*offsets[1:], None], strict=True)]
        assert all(row[o - 1] == " " for o in offsets[1:]), f"columns do not line up: {row!r}"
        out.append(cells)
    return out


def test_explain_prints_a_kubectl_style_table(daemon: str, files: Files) -> None:
    result = policyctl("explain", "-f", str(files.isvc), address=daemon)
    succeeded(result)
    assert result.stdout.startswith(f"MODEL {MODEL_NAME} {FORMAT} (rules {load_policy(RULES).revision}, catalog ")
    assert _table(result.stdout) == [
        [RUNTIME_NAME, "ServingRuntime", "Yes", "Yes", "2", "<none>"],
        [RUNTIME_70B, "ClusterServingRuntime", "No", "No", "<none>", FORMAT_REASON],
    ]


def test_explain_as_json(daemon: str, files: Files) -> None:
    result = policyctl("explain", "-f", str(files.isvc), "-o", "json", address=daemon)
    succeeded(result)
    reply = json.loads(result.stdout)
    assert [(r["name"], r["selectable"]) for r in reply["runtimes"]] == [(RUNTIME_NAME, True), (RUNTIME_70B, False)]
    reason = reply["runtimes"][1]["reason"]
    assert (reason["ruleId"], reason["kind"]) == ("supported-formats", "Advisory")
    assert [p["ruleId"] for p in reason["parts"]] == ["framework-version-mismatch"]
    assert reply["modelName"] == MODEL_NAME
    assert reply["runtimes"][0]["score"] == 2  # a JSON number, not the proto3 mapping's "2"


def test_select_prints_the_admission_warning_on_stderr(daemon: str, files: Files) -> None:
    result = policyctl("select", "-f", str(files.isvc), address=daemon)
    succeeded(result)
    assert result.stderr.splitlines() == [
        f"Warning: Runtime {RUNTIME_NAME} will be auto-selected for model {MODEL_NAME}"
    ]
    lines = result.stdout.splitlines()
    assert re.split(r" {2,}", lines[0]) == ["RUNTIME", "KIND", "SCORE", "ENTRY"]
    assert re.split(r" {2,}", lines[1]) == [RUNTIME_NAME, "ServingRuntime", "2", "0"]


def test_select_reads_the_manifest_from_stdin(daemon: str, files: Files) -> None:
    result = policyctl("select", "-f", "-", address=daemon, stdin=files.isvc.read_text())
    succeeded(result)
    assert f"Runtime {RUNTIME_NAME} will be auto-selected" in result.stderr
    assert result.stdout.splitlines()[1].startswith(RUNTIME_NAME)


def test_explain_a_model_in_a_namespace(daemon: str) -> None:
    result = policyctl("explain", "--model", MODEL_NAME, "-n", NAMESPACE, address=daemon)
    succeeded(result)
    assert [row[:4] for row in _table(result.stdout)] == [
        [RUNTIME_NAME, "ServingRuntime", "Yes", "Yes"],
        [RUNTIME_70B, "ClusterServingRuntime", "No", "No"],
    ]
    elsewhere = policyctl("explain", "--model", MODEL_NAME, "-n", "default", address=daemon)
    succeeded(elsewhere)
    assert [row[0] for row in _table(elsewhere.stdout)] == [RUNTIME_70B]  # the ServingRuntime lives in llama-demo


def test_resolve_a_named_runtime(daemon: str, files: Files) -> None:
    result = policyctl("resolve", "-f", str(files.isvc_named_sr), address=daemon)
    succeeded(result)
    lines = result.stdout.splitlines()
    assert re.split(r" {2,}", lines[0]) == ["RUNTIME", "KIND", "COMPATIBLE", "EVENT"]
    assert re.split(r" {2,}", lines[1]) == [RUNTIME_NAME, "ServingRuntime", "Yes", "<none>"]
    assert result.stderr == ""
    named = policyctl("resolve", "-f", str(files.isvc_named_sr), "-o", "name", address=daemon)
    assert named.stdout.splitlines() == [f"servingruntime.ome.io/{RUNTIME_NAME}"]


def test_resolve_a_named_runtime_that_does_not_declare_support(daemon: str, files: Files) -> None:
    result = policyctl("resolve", "-f", str(files.isvc_named_70b), "-o", "wide", address=daemon)
    succeeded(result)
    (warning,) = result.stderr.splitlines()
    assert warning.startswith(f'Warning: runtime "{RUNTIME_70B}" does not declare support for model "{MODEL_NAME}" (')
    row = result.stdout.splitlines()[1]
    assert re.split(r" {2,}", row)[:4] == [RUNTIME_70B, "ClusterServingRuntime", "No", "RuntimeCompatibilityAdvisory"]
    event = f"Runtime {RUNTIME_70B} does not declare support for model {MODEL_NAME}"
    assert row.split("   ")[-1].strip().startswith(event)  # the event's message, in -o wide
    assert FORMAT_REASON in row


def test_effective_modes(daemon: str, files: Files) -> None:
    result = policyctl("effective", "-f", str(files.isvc), address=daemon)
    succeeded(result)
    lines = result.stdout.splitlines()
    assert lines[0] == f"RUNTIME ServingRuntime/{RUNTIME_NAME}"
    assert re.split(r" {2,}", lines[1]) == ["COMPONENT", "MODE", "SET BY"]
    assert re.split(r" {2,}", lines[2]) == ["engine", "RawDeployment", "default"]


def test_effective_json_names_the_selected_runtime_and_the_rule_that_decided(
    daemon: str, files: Files, tmp_path: Path
) -> None:
    result = policyctl("effective", "-f", str(files.isvc), "-o", "json", address=daemon)
    succeeded(result)
    selection = json.loads(result.stdout)["selection"]
    assert selection["runtime"] == {"kind": "ServingRuntime", "namespace": NAMESPACE, "name": RUNTIME_NAME}
    assert (selection["named"], selection["decidedBy"], selection["selectable"]) == (False, "only-selectable", 1)
    assert (selection["entryIndex"], selection["entry"]["priority"], selection["score"]) == (0, 1, 2)
    assert (selection["compatible"], selection["reasons"], selection["rankKey"]) == (True, [], "")
    # a second selectable runtime, a ClusterServingRuntime: the ServingRuntime ranks first on kind
    rival = spec_manifest("004", "ServingRuntime", RUNTIME_NAME)
    rival["kind"], rival["metadata"] = "ClusterServingRuntime", {"name": "aaa-rival"}
    objects = write_yaml(tmp_path / "rival.yaml", rival)
    result = policyctl("effective", "-f", str(files.isvc), "--objects", str(objects), "-o", "yaml", address=daemon)
    succeeded(result)
    selection = yaml.safe_load(result.stdout)["selection"]
    assert (selection["runtime"]["name"], selection["decidedBy"], selection["selectable"]) == (
        RUNTIME_NAME,
        "ranking",
        2,
    )
    assert selection["runnerUp"] == {"kind": "ClusterServingRuntime", "namespace": "", "name": "aaa-rival"}
    assert (selection["rankKey"], selection["value"], selection["runnerUpValue"]) == (
        "kind",
        "ServingRuntime",
        "ClusterServingRuntime",
    )


def test_effective_json_shows_what_each_component_inherits_from_the_runtime(
    daemon: str, files: Files, tmp_path: Path
) -> None:
    engine = {
        "annotations": {"team": "serving"},
        "tolerations": [],
        "runner": {"image": "example.com/sglang:dev", "resources": {"limits": {"nvidia.com/gpu": "2"}}},
    }
    isvc = write_yaml(tmp_path / "isvc.yaml", isvc_manifest(engine=engine, router={}))
    result = policyctl("effective", "-f", str(isvc), "-o", "json", address=daemon)
    succeeded(result)
    inheritance = json.loads(result.stdout)["inheritance"]
    assert list(inheritance) == ["engine", "router"]
    assert inheritance["engine"]["overridden"] == [
        "runner.image",
        "runner.resources.limits[nvidia.com/gpu]",
        "tolerations",
    ]
    assert inheritance["engine"]["inherited"] == [
        "runner.args",
        "runner.command",
        "runner.name",  # the InferenceService's runner merges into the runtime's, whatever its name
        "runner.ports[8080]",
        "runner.readinessProbe",
        "runner.resources.limits[cpu]",
        "runner.resources.limits[memory]",
        "runner.resources.requests[cpu]",
        "runner.resources.requests[memory]",
        "runner.resources.requests[nvidia.com/gpu]",
        "runner.startupProbe",
        "runner.volumeMounts[/dev/shm]",
        "volumes[dshm]",
    ]
    assert {k: v for k, v in inheritance["engine"].items() if k not in ("inherited", "overridden")} == {
        "runtimeConfig": "engineConfig",
        "mode": "RawDeployment",
        "modeSource": "default",
    }
    # the runtime has no routerConfig: the router inherits nothing
    assert inheritance["router"] == {
        "runtimeConfig": "routerConfig",
        "mode": "RawDeployment",
        "modeSource": "default",
        "inherited": [],
        "overridden": [],
    }
    table = policyctl("effective", "-f", str(isvc), address=daemon)
    succeeded(table)
    assert "inherit" not in table.stdout.lower()  # the table stays as it was: -o json|yaml only


def test_effective_json_of_spec_002s_named_runtime_says_it_was_named_and_what_the_engine_inherits(
    daemon: str, tmp_path: Path
) -> None:
    # spec 002's example: the ClusterServingRuntime and the model from the OME catalog, with the
    # fields the model agent records
    model = yaml.safe_load((CATALOG / "models" / "meta" / "Llama-3.2-1B-Instruct.yaml").read_text())
    model["spec"].update(
        modelFormat={"name": "safetensors", "version": "1.0.0"},
        modelFramework={"name": "transformers", "version": "4.45.0.dev0"},
        modelArchitecture="LlamaForCausalLM",
        modelParameterSize="1.24B",
    )
    isvc = ROOT / "examples" / "inferenceservices" / "llama-3-2-1b-named.yaml"  # spec 002's, as printed
    runtime = CATALOG / "runtimes" / "srt" / "meta" / "llama-3-2-1b-instruct-rt.yaml"
    objects = ["--objects", str(runtime), "--objects", str(write_yaml(tmp_path / "model.yaml", model))]
    result = policyctl("effective", "-f", str(isvc), *objects, "-o", "yaml", address=daemon)
    succeeded(result)
    answer = yaml.safe_load(result.stdout)
    selection = answer["selection"]
    assert selection["runtime"] == {
        "kind": "ClusterServingRuntime",
        "namespace": "",
        "name": "srt-llama-3-2-1b-instruct",
    }
    assert (selection["named"], selection["decidedBy"], selection["selectable"], selection["score"]) == (
        True,
        "spec.runtime.name",
        0,
        0,
    )
    assert (selection["entryIndex"], selection["entry"]["autoSelect"], selection["entry"]["priority"]) == (0, False, 1)
    assert (selection["compatible"], selection["reasons"]) == (True, [])
    assert list(answer["inheritance"]) == ["engine"]  # no router is declared: the routerConfig goes unused
    engine = answer["inheritance"]["engine"]
    assert engine["overridden"] == []  # spec 002's engine sets only its replicas, which the runtime leaves
    assert {
        "annotations[prometheus.io/scrape]",
        "labels[logging-forward]",
        "runner.image",
        "runner.resources.limits[nvidia.com/gpu]",
        "tolerations",
        "volumes[dshm]",
    } <= set(engine["inherited"])
    table = policyctl("effective", "-f", str(isvc), *objects, address=daemon)
    succeeded(table)
    assert table.stdout.splitlines()[0] == "RUNTIME ClusterServingRuntime/srt-llama-3-2-1b-instruct"


def test_effective_json_gives_the_rule_by_which_a_named_runtime_does_not_declare_support(
    daemon: str, files: Files
) -> None:
    result = policyctl("effective", "-f", str(files.isvc_named_70b), "-o", "json", address=daemon)
    succeeded(result)
    selection = json.loads(result.stdout)["selection"]
    assert (selection["named"], selection["compatible"]) == (True, False)
    (reason,) = selection["reasons"]
    assert (reason["ruleId"], reason["message"]) == ("supported-formats", FORMAT_REASON)
    assert [p["ruleId"] for p in reason["parts"]] == ["framework-version-mismatch"]


def test_status(daemon: str) -> None:
    result = policyctl("status", "-o", "yaml", address=daemon)
    succeeded(result)
    status = yaml.safe_load(result.stdout)
    assert status["revisions"]["rulesRevision"] == load_policy(RULES).revision
    assert status["revisions"]["catalogRevision"]
    assert status["lastAttempt"]["ok"] is True
    assert (status["runtimes"], status["models"]) == (2, 2)  # the catalog directory, watched
    assert status["catalogErrors"] == []


def test_model_inspect_prints_the_recorded_pipeline(daemon: str, files: Files) -> None:
    result = policyctl("model", "inspect", str(files.model_dir), address=daemon)
    succeeded(result)
    spec = yaml.safe_load(result.stdout)["spec"]
    assert spec["diffusionPipeline"]["transformer"] == {"library": "diffusers", "type": "UNet2DConditionModel"}
    assert "unet" not in spec["diffusionPipeline"]
    assert spec["modelArchitecture"] == "StableDiffusionPipeline"
    assert spec["modelFormat"] == {"name": "diffusers", "version": "0.24.0"}


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def test_unreachable_daemon_is_a_clear_message(files: Files) -> None:
    address = f"127.0.0.1:{_closed_port()}"
    result = policyctl("explain", "-f", str(files.isvc), address=address)
    no_traceback(result)
    assert result.returncode == 1
    assert (
        result.stderr.strip()
        == f"error: cannot reach policyd at {address} (start it with `policyd`, or pass --address)"
    )
    assert result.stdout == ""


def test_unknown_deployment_mode_names_the_field(daemon: str, files: Files) -> None:
    for command in ("select", "explain"):
        result = policyctl(command, "-f", str(files.isvc_sideways), address=daemon)
        no_traceback(result)
        assert result.returncode == 1
        assert result.stderr.startswith(
            f'error: {files.isvc_sideways}: InferenceService "{MODEL_NAME}" is invalid: spec.deploymentMode: '
        )
        assert "Sideways" in result.stderr


def test_bad_request_object_names_its_field(daemon: str, files: Files, tmp_path: Path) -> None:
    runtime = spec_manifest("004", "ServingRuntime", RUNTIME_NAME)
    runtime["spec"]["supportedModelFormats"][0]["priority"] = 0  # below the CRD's minimum
    objects = write_yaml(tmp_path / "objects.yaml", runtime)
    result = policyctl("select", "-f", str(files.isvc), "--objects", str(objects), address=daemon)
    no_traceback(result)
    assert result.returncode == 1
    assert result.stderr.startswith(
        f'error: {objects}: ServingRuntime "{RUNTIME_NAME}" is invalid: '
        "spec.supportedModelFormats[0].priority: must be between 1"
    )


def test_unreachable_renderer_is_named_in_the_message(daemon: str, files: Files, tmp_path: Path) -> None:
    renderer = f"unix:{tmp_path}/no-renderer.sock"
    result = policyctl("render", "-f", str(files.isvc), "--renderer", renderer, address=daemon)
    no_traceback(result)
    assert result.returncode == 1
    # The daemon is up; it is the renderer that cannot be reached, and the message must say so.
    assert f"cannot reach policyd at {daemon}" not in result.stderr
    assert renderer in result.stderr
    assert last_line(result.stderr).startswith("error: ")

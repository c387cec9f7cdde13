"""policyctl as an operator with kubectl habits uses it: usage errors exit 2, Ctrl-C exits 130,
results on stdout and warnings and errors on stderr, exit 1 when nothing can be selected,
-o on every command, namespaces and --address as kubectl takes them, --version, and the
kubectl plugin."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from policyd.policy.loader import load_policy

from .conftest import Files
from .support import (
    CASES,
    MODEL_NAME,
    NAMESPACE,
    REPO,
    RULES,
    RUNTIME_70B,
    RUNTIME_NAME,
    isvc_manifest,
    no_traceback,
    policyctl,
    succeeded,
    write_yaml,
)


def usage_error(result: subprocess.CompletedProcess[str], words: str) -> None:
    no_traceback(result)
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    assert result.stderr.startswith(f"error: {words}"), result.stderr
    assert result.stderr.rstrip().endswith("--help' for usage.")


@pytest.mark.parametrize("command", ["explain", "select", "resolve", "effective", "render", "apply"])
def test_a_missing_filename_is_a_usage_error(daemon: str, command: str) -> None:
    usage_error(policyctl(command, address=daemon), "must specify -f FILENAME")


def test_unknown_flags_and_output_formats_are_usage_errors(daemon: str, files: Files) -> None:
    usage_error(policyctl("select", "-f", str(files.isvc), "--colour", address=daemon), "unrecognized arguments")
    bad = policyctl("select", "-f", str(files.isvc), "-o", "xml", address=daemon)
    usage_error(bad, "argument -o/--output: unable to match a printer")


def _waiting_for_stdin(pid: int) -> bool:
    """Whether the process waits on fd 0, as /proc/PID/syscall says: select(1, ...) or read(0, ...)
    (policyctl waits for its stdin in select slices, so that Ctrl-C can interrupt it)."""
    try:
        fields = Path(f"/proc/{pid}/syscall").read_text().split()
    except OSError:
        return False
    # x86-64: read 0, select 23, pselect6 270; arm64: read 63, pselect6 72
    return fields[:2] in (["0", "0x0"], ["63", "0x0"]) or fields[:2] in (["23", "0x1"], ["270", "0x1"], ["72", "0x1"])


def test_ctrl_c_exits_130_without_a_traceback(daemon: str) -> None:
    cmd = [sys.executable, "-m", "policyd.clients.policyctl.main", "--address", daemon, "select", "-f", "-"]
    env = {**os.environ, "PYTHONFAULTHANDLER": "1"}  # SIGABRT below prints where it hangs, should it
    # as from a terminal: SIGINT at its default (a suite run as a shell's background job hands its
    # children SIGINT ignored, which Python, like Go, then leaves ignored: no KeyboardInterrupt)
    proc = subprocess.Popen(
        cmd,
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        # waiting for the manifest on stdin, which never comes
        deadline = time.monotonic() + 60
        while not _waiting_for_stdin(proc.pid):
            assert time.monotonic() < deadline, "policyctl never read its stdin"
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        # stdin stays open until it exits: communicate() would close it, and an end of input that
        # wins the race with the signal is no manifest (exit 1), not Ctrl-C
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            signals = [line for line in Path(f"/proc/{proc.pid}/status").read_text().splitlines() if "Sig" in line]
            proc.send_signal(signal.SIGABRT)
            raise AssertionError(f"no exit 30 s after SIGINT: {signals}\n{proc.communicate()[1].decode()}") from None
        _, stderr = proc.communicate()
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stderr.decode()
    assert b"Traceback" not in stderr


def test_nothing_selectable_is_exit_1_with_omes_message_on_stderr(daemon: str, tmp_path: Path) -> None:
    isvc = isvc_manifest(model={"name": MODEL_NAME})
    isvc["metadata"]["namespace"] = "elsewhere"  # no ServingRuntime there, and the 70B runtime is out of range
    path = str(write_yaml(tmp_path / "isvc.yaml", isvc))
    for output in ([], ["-o", "json"], ["-o", "yaml"], ["-o", "jsonpath={.ranking}"]):
        result = policyctl("select", "-f", path, *output, address=daemon)
        no_traceback(result)
        assert (result.returncode, result.stdout) == (1, "")
        (line,) = result.stderr.splitlines()
        assert line.startswith("error: no runtime found to support model safetensors")
    effective = policyctl("effective", "-f", path, address=daemon)
    no_traceback(effective)
    assert effective.returncode == 1
    assert effective.stdout == ""  # a command that fails prints nothing on stdout
    # the cause, once: the daemon's own words, not a guess of policyctl's before them
    (line,) = effective.stderr.splitlines()
    assert line.startswith("error: spec.model.name: no runtime found to support model safetensors")


def test_a_rejection_is_exit_1_on_stderr(daemon: str, tmp_path: Path) -> None:
    isvc = isvc_manifest(runtime={"name": "no-such-runtime"})
    result = policyctl("resolve", "-f", str(write_yaml(tmp_path / "isvc.yaml", isvc)), address=daemon)
    no_traceback(result)
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        f"error: no-such-runtime not found in namespace {NAMESPACE} (RuntimeReady=False reason=RuntimeNotFound)"
    ]


def _outputs(daemon: str, renderer: str, files: Files, tmp_path: Path) -> dict[str, list[str]]:
    """Every command, with names -o name must print for it (render prints a Service and more too)."""
    base = write_yaml(
        tmp_path / "base.yaml",
        {"apiVersion": "ome.io/v1beta1", "kind": "ClusterBaseModel", "metadata": {"name": "sd15"}, "spec": {}},
    )
    return {
        f"explain -f {files.isvc}": [
            f"servingruntime.ome.io/{RUNTIME_NAME}",
            f"clusterservingruntime.ome.io/{RUNTIME_70B}",
        ],
        f"select -f {files.isvc}": [f"servingruntime.ome.io/{RUNTIME_NAME}"],
        f"resolve -f {files.isvc_named_70b}": [f"clusterservingruntime.ome.io/{RUNTIME_70B}"],
        f"effective -f {files.isvc}": [f"servingruntime.ome.io/{RUNTIME_NAME}"],
        f"render -f {files.isvc} --renderer {renderer}": ["deployment.apps/llama-3-2-3b-instruct-engine"],
        f"model inspect {files.model_dir} --base-model {base}": ["clusterbasemodel.ome.io/sd15"],
        "status": [],
        "rules fields": ["runtime_disabled"],
    }


@pytest.mark.parametrize("fmt", ["json", "yaml", "name", "table", "wide", "jsonpath"])
def test_every_command_prints_every_output_format(
    daemon: str, renderer: str, files: Files, tmp_path: Path, fmt: str
) -> None:
    for line, names in _outputs(daemon, renderer, files, tmp_path).items():
        flag = "jsonpath={}" if fmt == "jsonpath" else fmt
        result = policyctl(*line.split(), "-o", flag, address=daemon)
        succeeded(result)
        out = result.stdout
        if fmt in ("json", "jsonpath"):
            data = json.loads(out)  # {} is the whole document as JSON, as in kubectl
            assert data, line
        elif fmt == "yaml":
            assert yaml.safe_load(out), line
        elif fmt == "name":
            assert set(names) <= set(out.splitlines()), line
            objects = not line.startswith("rules")  # rules fields names its fields
            assert all(re.fullmatch(r"[a-z.]+/[a-z0-9.-]+", n) for n in out.splitlines()) or not objects, line
        else:
            assert out.strip(), line
    # -o wide has every column of the table, in its order, and more
    table = policyctl("explain", "-f", str(files.isvc), "-o", "table", address=daemon).stdout.splitlines()[1].split()
    wide = policyctl("explain", "-f", str(files.isvc), "-o", "wide", address=daemon).stdout.splitlines()[1].split()
    assert [h for h in wide if h in table] == table and len(wide) > len(table)


def test_numbers_are_json_numbers(daemon: str, files: Files) -> None:
    result = policyctl("select", "-f", str(files.isvc), "-o", "json", address=daemon)
    succeeded(result)
    (top,) = json.loads(result.stdout)["ranking"]
    assert top["score"] == 2 and top["entryIndex"] == 0


def test_jsonpath_templates_as_kubectl_takes_them(daemon: str, files: Files) -> None:
    names = policyctl("explain", "-f", str(files.isvc), "-o", "jsonpath={.runtimes[*].name}", address=daemon)
    succeeded(names)
    assert names.stdout == f"{RUNTIME_NAME} {RUNTIME_70B}"
    template = 'jsonpath={range .runtimes[*]}{.name}{"\\t"}{.score}{"\\n"}{end}'
    rows = policyctl("explain", "-f", str(files.isvc), "-o", template, address=daemon)
    succeeded(rows)
    assert rows.stdout == f"{RUNTIME_NAME}\t2\n{RUNTIME_70B}\t0\n"
    picked = policyctl(
        "explain", "-f", str(files.isvc), "-o", "jsonpath={.runtimes[?(@.selectable==true)].name}", address=daemon
    )
    assert picked.stdout == RUNTIME_NAME


def test_a_manifest_without_a_namespace_is_in_default_or_in_n(daemon: str, tmp_path: Path) -> None:
    isvc = isvc_manifest()
    del isvc["metadata"]["namespace"]
    path = str(write_yaml(tmp_path / "isvc.yaml", isvc))
    runtimes = "jsonpath={.runtimes[*].name}"
    in_default = policyctl("explain", "-f", path, "-o", runtimes, address=daemon)
    succeeded(in_default)
    assert in_default.stdout == RUNTIME_70B  # the ServingRuntime lives in llama-demo, not default
    in_n = policyctl("explain", "-f", path, "-n", NAMESPACE, "-o", runtimes, address=daemon)
    succeeded(in_n)
    assert in_n.stdout == f"{RUNTIME_NAME} {RUNTIME_70B}"


def test_n_contradicting_the_manifest_is_refused_as_kubectl_does(daemon: str, files: Files) -> None:
    for command in ("explain", "select", "resolve", "effective", "render", "apply"):
        result = policyctl(command, "-f", str(files.isvc), "-n", "other", address=daemon)
        no_traceback(result)
        assert result.returncode == 1
        assert result.stderr.strip() == (
            f'error: the namespace from the provided object "{NAMESPACE}" does not match the namespace "other". '
            f"You must pass '--namespace={NAMESPACE}' to perform this operation."
        ), command


def test_address_and_namespace_go_anywhere_on_the_line(daemon: str, files: Files) -> None:
    before = policyctl("--address", daemon, "-n", NAMESPACE, "explain", "--model", MODEL_NAME, "-o", "name")
    after = policyctl("explain", "--model", MODEL_NAME, "-o", "name", "--address", daemon, "-n", NAMESPACE)
    succeeded(before)
    assert before.stdout == after.stdout
    assert f"servingruntime.ome.io/{RUNTIME_NAME}" in before.stdout.splitlines()


def test_version() -> None:
    result = policyctl("--version")
    succeeded(result)
    assert result.stdout.strip() == "policyctl 0.1.0"


def test_policyctl_is_a_kubectl_plugin(daemon: str) -> None:
    """kubectl runs `kubectl-policy` from PATH for `kubectl policy …`; the console script is installed."""
    plugin = Path(sys.executable).parent / "kubectl-policy"
    assert plugin.is_file() and os.access(plugin, os.X_OK)
    version = subprocess.run([plugin, "--version"], capture_output=True, text=True, timeout=60)
    assert version.stdout.strip() == "kubectl policy 0.1.0"
    status = subprocess.run(
        [plugin, "status", "--address", daemon, "-o", "json"], capture_output=True, text=True, timeout=60
    )
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["revisions"]["rulesRevision"]


def test_status_table_has_readable_times(daemon: str) -> None:
    result = policyctl("status", address=daemon)
    succeeded(result)
    header, row = result.stdout.splitlines()[:2]
    assert re.split(r" {2,}", header) == [
        "RULES",
        "CATALOG",
        "RUNTIMES",
        "MODELS",
        "ISVCS",
        "ACCELERATORS",
        "ERRORS",
        "OVERRIDES",
        "LAST RELOAD",
    ]
    assert re.search(r"ok, \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC \(\d+[smhd] ago\)$", row), row


def test_model_inspect_with_a_base_model_prints_the_whole_manifest_ready_to_apply(
    daemon: str, files: Files, tmp_path: Path
) -> None:
    base = {
        "apiVersion": "ome.io/v1beta1",
        "kind": "ClusterBaseModel",
        "metadata": {"name": "sd15", "labels": {"team": "images"}},
        "spec": {"storage": {"storageUri": "hf://runwayml/stable-diffusion-v1-5"}, "modelArchitecture": "Mine"},
    }
    result = policyctl(
        "model",
        "inspect",
        str(files.model_dir),
        "--base-model",
        str(write_yaml(tmp_path / "b.yaml", base)),
        address=daemon,
    )
    succeeded(result)
    manifest = yaml.safe_load(result.stdout)
    assert manifest["apiVersion"] == "ome.io/v1beta1" and manifest["kind"] == "ClusterBaseModel"
    assert manifest["metadata"] == base["metadata"]
    assert manifest["spec"]["modelArchitecture"] == "Mine"  # set fields are kept
    assert manifest["spec"]["modelFormat"] == {"name": "diffusers", "version": "0.24.0"}
    assert manifest["spec"]["storage"] == base["spec"]["storage"]


def test_rules_and_conformance_commands_take_o_too(daemon: str, renderer: str) -> None:
    checked = policyctl("rules", "check", str(RULES), "-o", "json")
    succeeded(checked)
    assert json.loads(checked.stdout)["revision"] == load_policy(RULES).revision
    tested = policyctl("rules", "test", str(RULES), "-o", "jsonpath={.failed}")
    assert (tested.returncode, tested.stdout) == (0, "0")
    folder = CASES / "inspect"
    ran = policyctl("conformance", str(folder), "--address", daemon, "--renderer", renderer, "-o", "yaml")
    succeeded(ran)
    report = yaml.safe_load(ran.stdout)
    assert report["failed"] == 0 and report["passed"] == len(report["cases"]) > 0
    assert all(case["passed"] for case in report["cases"])


def test_explain_names_each_kind_as_select_does_and_keeps_the_reason_last_in_wide(daemon: str, files: Files) -> None:
    explained = policyctl("explain", "-f", str(files.isvc), "-o", "wide", address=daemon)
    succeeded(explained)
    header, *rows = explained.stdout.splitlines()[1:]
    assert header.split()[-1] == "REASON" and header.split()[:2] == ["RUNTIME", "KIND"]
    selected = policyctl("select", "-f", str(files.isvc), "-o", "jsonpath={.ranking[0].kind}", address=daemon)
    assert rows[0].split()[:2] == [RUNTIME_NAME, selected.stdout] == [RUNTIME_NAME, "ServingRuntime"]


def test_kinds_take_the_names_of_omes_crds_not_short_names_kubectl_gives_other_kinds(daemon: str) -> None:
    taken = policyctl("diff", "--delete", "clusterservingruntime.ome.io/nope", address=daemon)
    assert "clusterservingruntime.ome.io/nope: ClusterServingRuntime nope is not in the catalog" in taken.stderr
    refused = policyctl("diff", "--delete", "csr/nope", address=daemon)  # kubectl's CertificateSigningRequest
    no_traceback(refused)
    assert (refused.returncode, refused.stderr.splitlines()) == (
        2,
        [
            "error: the server doesn't have a resource type \"csr\" (policyd's catalog has ClusterServingRuntime, "
            "ServingRuntime, ClusterBaseModel, BaseModel, InferenceService (isvc), AcceleratorClass)"
        ],
    )

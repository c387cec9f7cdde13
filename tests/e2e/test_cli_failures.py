"""How policyctl fails: the real cause first and once, one line on stderr naming the file, the
field or the flag; nothing on stdout; exit 1, or 2 for a usage error, as kubectl does."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from policyd.clients.policyctl.conformance.daemons import serving

from .conftest import Files
from .support import (
    NAMESPACE,
    ROOT,
    RULES,
    RUNTIME_NAME,
    isvc_manifest,
    model_manifest,
    no_traceback,
    policyctl,
    succeeded,
    write_yaml,
)

CONFIG_MAP = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": NAMESPACE}}
TAKES = "ClusterServingRuntime, ServingRuntime, ClusterBaseModel, BaseModel, InferenceService, AcceleratorClass"


def _failed(result: Any, code: int = 1) -> list[str]:
    """The stderr lines of a command that failed with ``code`` and printed nothing on stdout."""
    no_traceback(result)
    assert (result.returncode, result.stdout) == (code, ""), result.stdout + result.stderr
    lines: list[str] = result.stderr.splitlines()
    return lines


def test_effective_of_a_missing_named_runtime_says_it_is_not_found_first_and_once(daemon: str, tmp_path: Path) -> None:
    isvc = write_yaml(tmp_path / "isvc.yaml", isvc_manifest(runtime={"name": "no-such-runtime"}))
    result = policyctl("effective", "-f", str(isvc), address=daemon)
    no_traceback(result)
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"error: spec.runtime.name: no-such-runtime not found in namespace {NAMESPACE}"
    ]


def test_render_that_fails_prints_nothing_on_stdout(daemon: str, renderer: str, tmp_path: Path) -> None:
    isvc = write_yaml(tmp_path / "isvc.yaml", isvc_manifest(runtime={"name": "no-such-runtime"}))
    for output in ([], ["-o", "json"], ["-o", "yaml"]):
        result = policyctl("render", "-f", str(isvc), "--renderer", renderer, *output, address=daemon)
        assert _failed(result) == [f"error: no-such-runtime not found in namespace {NAMESPACE}"]


def test_rules_check_of_a_missing_directory_says_so_once(tmp_path: Path) -> None:
    for command in ("check", "test"):
        result = policyctl("rules", command, str(tmp_path / "nope"))
        assert _failed(result) == [f'error: the path "{tmp_path / "nope"}" does not exist']


def test_rules_check_of_a_file_says_it_is_not_a_directory() -> None:
    file = RULES / "10-runtime.yaml"
    result = policyctl("rules", "check", str(file))
    assert _failed(result) == [f'error: the path "{file}" is not a directory (give the directory of rule files)']


def test_rules_check_of_broken_rules_prints_the_error_once_on_stderr(tmp_path: Path) -> None:
    rules = tmp_path / "rules"
    shutil.copytree(RULES, rules)
    (rules / "99-broken.yaml").write_text("rules:\n  - id: x\n   when: [\n")
    for output in ([], ["-o", "json"]):
        (line,) = _failed(policyctl("rules", "check", str(rules), *output))
        assert line.startswith(f"error: {rules / '99-broken.yaml'}:3: not valid YAML: ")


@pytest.mark.parametrize("flags", [["--tls-cert", "client.pem"], ["--tls-key", "client.key"]])
def test_a_client_certificate_without_its_key_is_a_usage_error(flags: list[str]) -> None:
    result = policyctl("status", *flags, address="127.0.0.1:1")
    assert _failed(result, 2) == [
        "error: --tls-cert and --tls-key go together",
        "See 'policyctl status --help' for usage.",
    ]


def test_jsonpath_of_a_missing_field_is_kubectls_error(daemon: str, files: Files) -> None:
    for template, field in (("{.foo}", "foo"), ("{range .runtimes[*]}{.name}{end}", "runtimes")):
        result = policyctl("select", "-f", str(files.isvc), "-o", f"jsonpath={template}", address=daemon)
        assert _failed(result)[-1] == (
            f'error: error executing jsonpath "{template}": Error executing template: {field} is not found.'
        )
    nested = policyctl("explain", "-f", str(files.isvc), "-o", "jsonpath={.runtimes[*].nmae}", address=daemon)
    assert _failed(nested)[-1].endswith("Error executing template: nmae is not found.")


def test_jsonpath_that_selects_nothing_is_no_error(daemon: str, files: Files) -> None:
    """An empty list or a filter that keeps nothing finds no field missing: empty output, exit 0."""
    template = "jsonpath={.runtimes[?(@.score==99)].name}"
    result = policyctl("explain", "-f", str(files.isvc), "-o", template, address=daemon)
    succeeded(result)
    assert result.stdout == ""
    ranking = policyctl("select", "-f", str(files.isvc), "-o", "jsonpath={.ranking[*].name}", address=daemon)
    succeeded(ranking)
    assert ranking.stdout == RUNTIME_NAME


def test_a_config_map_is_refused_by_its_kind_and_file(daemon: str, files: Files, tmp_path: Path) -> None:
    config_map = write_yaml(tmp_path / "settings.yaml", CONFIG_MAP)
    refusal = f'error: {config_map}: ConfigMap "settings" is not a kind policyd takes (it takes {TAKES})'
    bundle = write_yaml(tmp_path / "bundle.yaml", isvc_manifest(), CONFIG_MAP)
    for args in (
        ["select", "-f", str(config_map)],
        ["explain", "-f", str(files.isvc), "--objects", str(config_map)],
        ["apply", "-f", str(config_map)],
        ["delete", "-f", str(config_map)],
    ):
        assert _failed(policyctl(*args, address=daemon)) == [refusal], args
    assert _failed(policyctl("diff", "--apply", str(config_map), address=daemon), 2) == [refusal]
    assert _failed(policyctl("select", "-f", str(bundle), address=daemon)) == [
        refusal.replace(f"{config_map}:", f"{bundle}#1:")
    ]


def test_a_yaml_error_names_the_file_line_and_column(daemon: str, tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("apiVersion: ome.io/v1beta1\nkind: InferenceService\nmetadata:\n  name: x\n spec: [\n")
    assert _failed(policyctl("select", "-f", str(broken), address=daemon)) == [
        f"error: {broken}:5:2: not valid YAML: did not find expected key "
        "(while parsing a block mapping at line 1, column 1)"
    ]
    piped = policyctl("select", "-f", "-", stdin="a: b: c\n", address=daemon)
    assert _failed(piped) == ["error: -:1:5: not valid YAML: mapping values are not allowed in this context"]


def test_stdin_that_is_closed_or_not_text_is_one_line_naming_it(daemon: str) -> None:
    cmd = [sys.executable, "-m", "policyd.clients.policyctl.main", "--address", daemon, "select", "-f", "-"]
    closed = subprocess.run(
        cmd,
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=lambda: os.close(0),
    )
    assert _failed(closed) == ["error: cannot read the standard input: it is closed"]
    binary = subprocess.run(cmd, cwd=ROOT, input=b"\xff\xfe", capture_output=True, timeout=60)
    assert (binary.returncode, binary.stdout) == (1, b"")
    assert binary.stderr.decode().splitlines() == ["error: the standard input: not UTF-8: byte 0xff at offset 0"]


@pytest.fixture(scope="module")
def editable(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path, Path]]:
    """A daemon of this module's own on a copy of the rules and a watched catalog: (address, rules, catalog)."""
    root = tmp_path_factory.mktemp("editable")
    rules, catalog = root / "rules", root / "catalog"
    shutil.copytree(RULES, rules)
    catalog.mkdir()
    write_yaml(catalog / "model.yaml", model_manifest())
    args = ["--rules", str(rules), "--catalog", str(catalog), "--log-level", "error"]
    with serving("policyd.daemon.main", args, "127.0.0.1:0") as address:
        yield address, rules, catalog


def _status(address: str) -> dict[str, Any]:
    result = policyctl("status", "-o", "yaml", address=address)
    succeeded(result)
    status: dict[str, Any] = yaml.safe_load(result.stdout)
    return status


def test_status_wide_shows_a_refused_rule_file_on_one_line_with_its_place(editable: tuple[str, Path, Path]) -> None:
    address, rules, _ = editable
    broken = rules / "99-broken.yaml"
    broken.write_text("rules:\n  - id: x\n   when: [\n")
    try:
        deadline = time.monotonic() + 30
        while _status(address)["lastAttempt"]["ok"]:
            assert time.monotonic() < deadline, "the broken rule file was not reloaded"
            time.sleep(0.1)
        result = policyctl("status", "-o", "wide", address=address)
        succeeded(result)
        header, row = result.stdout.splitlines()[:2]
        assert header.split()[-1] == "AT"
        assert row.endswith(f"   {broken}:3")
        error = f"{broken}:3: not valid YAML: did not find expected '-' indicator at line 3, column 4"
        assert error in row
    finally:
        broken.unlink()


def test_apply_of_an_unchanged_watched_object_does_not_warn(editable: tuple[str, Path, Path]) -> None:
    address, _, catalog = editable
    result = policyctl("apply", "-f", str(catalog / "model.yaml"), address=address)
    succeeded(result)
    assert result.stdout.strip().endswith(" unchanged")
    assert result.stderr == ""
    model = model_manifest()
    model["metadata"]["labels"] = {"changed": "yes"}
    configured = policyctl("apply", "-f", str(write_yaml(catalog.parent / "changed.yaml", model)), address=address)
    succeeded(configured)
    assert configured.stdout.strip().endswith(" configured")
    assert "is also in the watched catalog directory" in configured.stderr  # a change does warn

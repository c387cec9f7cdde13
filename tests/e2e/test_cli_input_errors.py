"""What policyctl says of input it cannot use: one line naming the file (and, for what policyd
refuses, the object and every field), never a traceback or a gRPC request path."""

from __future__ import annotations

from pathlib import Path

from .conftest import Files
from .support import (
    MODEL_NAME,
    NAMESPACE,
    RUNTIME_NAME,
    isvc_manifest,
    model_manifest,
    no_traceback,
    policyctl,
    spec_manifest,
    write_yaml,
)

LATIN = b"kind: \xff\xfe\n"  # Latin-1 bytes: not UTF-8 from offset 6


def test_every_file_that_is_not_utf8_is_named_with_its_first_bad_byte(
    daemon: str, renderer: str, tmp_path: Path
) -> None:
    latin = tmp_path / "latin.yaml"
    latin.write_bytes(LATIN)
    said = f"error: {latin}: not UTF-8: byte 0xff at offset 6"
    for args in (
        ["select", "-f", str(latin)],
        ["apply", "-f", str(latin)],
        ["diff", "--apply", str(latin)],
        ["diff", "--delete", "servingruntime/x", "--isvc", str(latin)],
    ):
        result = policyctl(*args, address=daemon)
        no_traceback(result)
        code = 2 if args[0] == "diff" else 1  # diff's failure is above kubectl diff's 1 for "it differs"
        assert (result.returncode, result.stdout, result.stderr.splitlines()) == (code, "", [said])
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_bytes(b'{"a": "\xff"}')
    inspected = policyctl("model", "inspect", str(model), address=daemon)
    no_traceback(inspected)
    assert (inspected.returncode, inspected.stderr.splitlines()) == (
        1,
        [f"error: {model / 'config.json'}: not UTF-8: byte 0xff at offset 7"],
    )
    cases = tmp_path / "cases"
    cases.mkdir()
    (cases / "latin.yaml").write_bytes(LATIN)
    ran = policyctl("conformance", str(cases), "--renderer", renderer, address=daemon)
    no_traceback(ran)
    assert ran.returncode == 1
    assert f"FAIL latin ({cases / 'latin.yaml'}): not UTF-8: byte 0xff at offset 6" in ran.stdout.splitlines()


def test_a_refused_request_names_the_file_the_object_and_every_wrong_field(
    daemon: str, files: Files, tmp_path: Path
) -> None:
    isvc = isvc_manifest()
    isvc["spec"]["modle"], isvc["spec"]["engien"] = {"name": "x"}, {}
    typo = write_yaml(tmp_path / "typo.yaml", isvc)
    selected = policyctl("select", "-f", str(typo), "--strict", address=daemon)
    no_traceback(selected)
    assert (selected.returncode, selected.stdout) == (1, "")
    assert selected.stderr.splitlines() == [
        f'error: {typo}: InferenceService "{MODEL_NAME}" is invalid: spec.{field}: unknown field "spec.{field}"'
        for field in ("modle", "engien")
    ]


def test_a_refused_object_of_a_file_is_named_by_its_document_and_name(daemon: str, tmp_path: Path) -> None:
    runtime = spec_manifest("004", "ServingRuntime", RUNTIME_NAME)
    runtime["metadata"]["name"] = "typo-runtime"
    runtime["spec"]["supportedModelFormat"] = runtime["spec"]["disabeld"] = True
    model = model_manifest()
    both = write_yaml(tmp_path / "both.yaml", model, runtime)
    applied = policyctl("diff", "--apply", str(both), "--strict", address=daemon)
    no_traceback(applied)
    assert applied.returncode == 2
    head = f'error: {both}#1: ServingRuntime "typo-runtime" is invalid: spec.'
    assert all(line.startswith(head) for line in applied.stderr.splitlines()), applied.stderr
    assert {line[len(head) :].partition(":")[0] for line in applied.stderr.splitlines()} == {
        "supportedModelFormat",
        "disabeld",
    }


def test_a_request_path_or_call_name_never_reaches_the_user(daemon: str, files: Files) -> None:
    resolved = policyctl("resolve", "-f", str(files.isvc), address=daemon)
    no_traceback(resolved)
    assert resolved.stderr.splitlines() == [
        f'error: {files.isvc}: InferenceService "{MODEL_NAME}" is invalid: spec.runtime.name: '
        "is required to resolve a named runtime (use `policyctl select` otherwise)"
    ]
    deleted = policyctl("diff", "--delete", "servingruntime/nope", "-n", NAMESPACE, address=daemon)
    no_traceback(deleted)
    assert deleted.returncode == 2
    assert deleted.stderr.startswith("error: --delete servingruntime/nope: ServingRuntime nope is not in the catalog")

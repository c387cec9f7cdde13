"""`policyctl conformance` over the shared case directories, and over cases it must count as failed."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from .support import CASES, ROOT, last_line, no_traceback, policyctl

FOLDERS = sorted(d.name for d in CASES.iterdir() if d.is_dir())  # every folder: new ones arrive
# cases of our own, in the same format, for behaviours the shared folders do not check
OWN_CASES = ROOT / "tests" / "conformance-cases"


def _case_count(directory: Path) -> int:
    return sum(1 for p in directory.rglob("*") if p.is_file() and p.suffix in (".yaml", ".yml"))


@pytest.mark.parametrize("directory", [CASES / f for f in FOLDERS] + sorted(OWN_CASES.iterdir()), ids=lambda p: p.name)
def test_conformance_cases_pass_through_the_real_daemon(directory: Path, daemon: str, renderer: str) -> None:
    count = _case_count(directory)
    assert count > 0, f"no cases in {directory}"
    result = policyctl("conformance", str(directory), "--address", daemon, "--renderer", renderer)
    no_traceback(result)
    assert result.returncode == 0, result.stdout + result.stderr
    assert last_line(result.stdout) == f"{count} passed, 0 failed"
    assert len(re.findall(r"^PASS ", result.stdout, re.MULTILINE)) == count


def _select_case() -> dict[str, Any]:
    case: dict[str, Any] = yaml.safe_load((CASES / "select" / "servingruntime-auto-selected.yaml").read_text())
    return case


def test_cases_the_runner_cannot_run_or_check_count_as_failed(tmp_path: Path) -> None:
    unknown_action = _select_case()
    unknown_action["name"] = "mine/unknown-action"
    unknown_action["request"]["action"] = "frobnicate"
    unknown_expectation = _select_case()
    unknown_expectation["name"] = "mine/unknown-expectation"
    unknown_expectation["expect"]["colour"] = "blue"  # everything else in it holds
    (tmp_path / "a.yaml").write_text(yaml.safe_dump(unknown_action))
    (tmp_path / "b.yaml").write_text(yaml.safe_dump(unknown_expectation))

    result = policyctl("conformance", str(tmp_path))  # starts a daemon and a renderer of its own
    no_traceback(result)
    assert result.returncode == 1, result.stdout + result.stderr
    assert last_line(result.stdout) == "0 passed, 2 failed"
    assert re.search(r"^FAIL mine/unknown-action .*unknown request\.action 'frobnicate'", result.stdout, re.MULTILINE)
    assert re.search(r"^FAIL mine/unknown-expectation .*'colour'", result.stdout, re.MULTILINE)


def test_a_case_whose_expectation_is_wrong_fails(tmp_path: Path, daemon: str, renderer: str) -> None:
    right = _select_case()
    right["name"] = "mine/right"
    wrong = _select_case()
    wrong["name"] = "mine/wrong"
    wrong["expect"]["selected"] = "some-other-runtime"
    nested = tmp_path / "any" / "depth"
    nested.mkdir(parents=True)
    (tmp_path / "right.yaml").write_text(yaml.safe_dump(right))
    (nested / "a file name that says nothing.yml").write_text(yaml.safe_dump(wrong))

    result = policyctl("conformance", str(tmp_path), "--address", daemon, "--renderer", renderer)
    no_traceback(result)
    assert result.returncode == 1, result.stdout + result.stderr
    assert last_line(result.stdout) == "1 passed, 1 failed"
    assert "PASS mine/right" in result.stdout
    assert re.search(
        r"^FAIL mine/wrong .*selected: expected 'some-other-runtime', got 'sglang-llama-3-2-3b'",
        result.stdout,
        re.MULTILINE,
    )

"""Expecting an error (``error`` / ``errorContains``) in a conformance case, for every action:
`policyctl conformance` on a directory of cases whose expected error does not come, is another
one, or comes when none is expected, fails each with a message that says which and why."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from .support import CASES, ROOT, last_line, no_traceback, policyctl

REFUSALS = ROOT / "tests" / "conformance-cases" / "expected-errors"
# a case of each action that the daemon answers without an error
ANSWERED = {
    "select": CASES / "select" / "servingruntime-auto-selected.yaml",
    "explain": CASES / "explain" / "score-is-weights-times-priority.yaml",
    "resolve": CASES / "resolve" / "named-runtime-supports-model.yaml",
    "render": CASES / "render" / "inferenceservice-settings-on-top.yaml",
    "inspect-model": CASES / "inspect" / "model-index-records-pipeline.yaml",
}
# a case of each action that expects the daemon to refuse it
REFUSED = {
    "select": REFUSALS / "select-refuses-a-subject-that-is-not-an-inferenceservice.yaml",
    "explain": REFUSALS / "explain-refuses-a-subject-that-is-not-an-inferenceservice.yaml",
    "resolve": REFUSALS / "resolve-refuses-an-inferenceservice-among-the-objects.yaml",
    "render": REFUSALS / "render-refuses-a-subject-that-is-not-an-inferenceservice.yaml",
    "inspect-model": REFUSALS / "inspect-model-refuses-a-request-without-a-file.yaml",
}
ACTIONS = sorted(ANSWERED)
# an expectation of each action that holds when the call is refused (nothing selected, listed...)
HOLDS_WHEN_REFUSED: dict[str, dict[str, Any]] = {
    "select": {"selected": None},
    "explain": {"verdicts": {}},
    "resolve": {"runtime": None},
    "render": {"assertions": [{"path": "workloads", "equals": []}]},
    "inspect-model": {"assertions": []},
}


def _case(path: Path, name: str, expect: dict[str, Any]) -> dict[str, Any]:
    case: dict[str, Any] = yaml.safe_load(path.read_text())
    return {**case, "name": name, "expect": expect}


def _run(directory: Path, daemon: str, renderer: str) -> str:
    result = policyctl("conformance", str(directory), "--address", daemon, "--renderer", renderer)
    no_traceback(result)
    assert result.returncode == 1, result.stdout + result.stderr
    return result.stdout


def _failure(stdout: str, name: str) -> str:
    match = re.search(rf"^FAIL {re.escape(name)} \(.*?\): (.*)$", stdout, re.MULTILINE)
    assert match, f"no FAIL line for {name}:\n{stdout}"
    return match.group(1)


def test_the_refusal_cases_cover_every_action() -> None:
    for action, path in {**ANSWERED, **REFUSED}.items():
        assert yaml.safe_load(path.read_text())["request"]["action"] == action, path


def test_an_expected_error_that_does_not_come_fails_for_every_action(
    tmp_path: Path, daemon: str, renderer: str
) -> None:
    for action in ACTIONS:
        exact = _case(ANSWERED[action], f"mine/{action}-error", {"error": "refused"})
        part = _case(ANSWERED[action], f"mine/{action}-error-contains", {"errorContains": "refused"})
        (tmp_path / f"{action}-error.yaml").write_text(yaml.safe_dump(exact))
        (tmp_path / f"{action}-error-contains.yaml").write_text(yaml.safe_dump(part))

    stdout = _run(tmp_path, daemon, renderer)

    assert last_line(stdout) == f"0 passed, {2 * len(ACTIONS)} failed"
    for action in ACTIONS:
        assert re.fullmatch(r"error: expected 'refused', got no error \(.+\)", _failure(stdout, f"mine/{action}-error"))
        assert re.fullmatch(
            r"error: expected one containing 'refused', got no error \(.+\)",
            _failure(stdout, f"mine/{action}-error-contains"),
        )
    # what came instead is said in the action's own words
    assert _failure(stdout, "mine/select-error").endswith("(selected 'sglang-llama-3-2-3b')")
    assert _failure(stdout, "mine/resolve-error").endswith("(resolved to 'srt-llama-3-2-1b-instruct')")
    assert re.search(r"\(\d+ workloads rendered\)$", _failure(stdout, "mine/render-error"))


def test_a_different_error_than_the_one_expected_fails_for_every_action(
    tmp_path: Path, daemon: str, renderer: str
) -> None:
    actual: dict[str, str] = {}
    for action in ACTIONS:
        case = yaml.safe_load(REFUSED[action].read_text())
        actual[action] = case["expect"]["error"]
        exact = _case(REFUSED[action], f"mine/{action}-other-error", {"error": "some other refusal"})
        part = _case(REFUSED[action], f"mine/{action}-other-part", {"errorContains": "some other refusal"})
        (tmp_path / f"{action}-other-error.yaml").write_text(yaml.safe_dump(exact))
        (tmp_path / f"{action}-other-part.yaml").write_text(yaml.safe_dump(part))

    stdout = _run(tmp_path, daemon, renderer)

    assert last_line(stdout) == f"0 passed, {2 * len(ACTIONS)} failed"
    for action in ACTIONS:
        assert _failure(stdout, f"mine/{action}-other-error") == (
            f"error: expected 'some other refusal', got {actual[action]!r}"
        )
        assert _failure(stdout, f"mine/{action}-other-part") == (
            f"error: expected one containing 'some other refusal', got {actual[action]!r}"
        )


def test_a_refusal_where_none_is_expected_fails_for_every_action(tmp_path: Path, daemon: str, renderer: str) -> None:
    actual: dict[str, str] = {}
    for action in ACTIONS:
        actual[action] = yaml.safe_load(REFUSED[action].read_text())["expect"]["error"]
        # error: null says there must be no error; a case that does not mention one must not be refused either
        none = _case(REFUSED[action], f"mine/{action}-no-error", {"error": None})
        unmentioned = _case(REFUSED[action], f"mine/{action}-unmentioned", HOLDS_WHEN_REFUSED[action])
        (tmp_path / f"{action}-no-error.yaml").write_text(yaml.safe_dump(none))
        (tmp_path / f"{action}-unmentioned.yaml").write_text(yaml.safe_dump(unmentioned))

    stdout = _run(tmp_path, daemon, renderer)

    assert last_line(stdout) == f"0 passed, {2 * len(ACTIONS)} failed"
    for action in ACTIONS:
        assert _failure(stdout, f"mine/{action}-no-error") == f"error: expected none, got {actual[action]!r}"
        assert re.fullmatch(
            rf"\w+ refused: INVALID_ARGUMENT: {re.escape(actual[action])}",
            _failure(stdout, f"mine/{action}-unmentioned"),
        )

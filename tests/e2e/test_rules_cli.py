"""policyctl rules check / rules test, and a daemon that refuses broken rules at start."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from policyd.clients.policyctl.conformance.daemons import StartError, serving
from policyd.policy.loader import load_policy

from .support import RULES, last_line, no_traceback, policyctl

RULE_FILE = "10-runtime.yaml"
BROKEN = {
    # an unknown fact field in the rule's condition
    "when": ("when: {runtime_disabled: true}", "when: {runtime_disabld: true}", "when: unknown fact field"),
    # an unknown fact field in one of the rule's stored tests
    "test-facts": ("facts: {runtime_disabled: false}", "facts: {runtime_disabld: false}", "unknown fact field"),
}


def _broken_copy(tmp_path: Path, kind: str) -> Path:
    rules = tmp_path / "rules"
    shutil.copytree(RULES, rules)
    old, new, _ = BROKEN[kind]
    path = rules / RULE_FILE
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    return rules


def test_rules_check_passes_on_the_bundled_rules() -> None:
    policy = load_policy(RULES)
    result = policyctl("rules", "check", str(RULES))
    assert result.returncode == 0, result.stdout + result.stderr
    assert last_line(result.stdout) == (
        f"ok: {len(policy.rules)} rules in {len(policy.sources)} files, revision {policy.revision}"
    )


def test_rules_test_passes_every_stored_test() -> None:
    policy = load_policy(RULES)
    stored = sum(len(item.tests) for item in (*policy.rules, *policy.groups))
    assert stored > 0
    result = policyctl("rules", "test", str(RULES))
    assert result.returncode == 0, result.stdout + result.stderr
    assert last_line(result.stdout) == f"{stored} passed, 0 failed"
    assert "FAIL" not in result.stdout


@pytest.mark.parametrize("kind", list(BROKEN))
def test_rules_check_names_the_file_rule_and_reason(tmp_path: Path, kind: str) -> None:
    rules = _broken_copy(tmp_path, kind)
    for command in ("check", "test"):
        result = policyctl("rules", command, str(rules))
        no_traceback(result)
        assert result.returncode == 1, f"rules {command}: {result.stdout}{result.stderr}"
        out = result.stdout + result.stderr
        assert str(rules / RULE_FILE) in out
        assert "rule runtime-disabled" in out
        assert BROKEN[kind][2] in out
        assert "runtime_disabld" in out


def test_daemon_refuses_to_start_on_broken_rules(tmp_path: Path) -> None:
    rules = _broken_copy(tmp_path, "when")
    with (
        pytest.raises(StartError) as caught,
        serving("policyd.daemon.main", ["--rules", str(rules), "--log-level", "warning"], "127.0.0.1:0", timeout=20),
    ):
        pytest.fail("policyd started on broken rules")
    message = str(caught.value)
    assert "exited with 2" in message
    assert "rules refused" in message
    assert f"{rules / RULE_FILE}:" in message
    assert "rule runtime-disabled" in message
    assert "Traceback" not in message


def test_rules_fields_lists_every_fact_field_a_rule_may_test_with_what_it_reads() -> None:
    result = policyctl("rules", "fields")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["FIELD", "TYPE", "ABOUT", "SOURCE", "MEANING"]
    listed = {line.split()[0]: line.split()[3] for line in lines[1:]}
    assert {"framework_version_match", "runtime_labels", "pipeline_mismatch", "namespace"} <= listed.keys()
    assert (listed["namespace"], listed["runtime_labels"], listed["accelerator_memory_min_gib"]) == (
        "request",
        "runtime",
        "catalog",
    )

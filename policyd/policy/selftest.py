"""Run the tests stored with the rules and groups: input facts → the rules that fire, the
first rule, its effect, kind and severity, the reason the record (or the runtime, for a group)
gets, advisories, findings and points."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from policyd.facts.fields import neutral_record
from policyd.policy.effects import DECIDING
from policyd.policy.engine import Fired, RuleEngine
from policyd.policy.model import Group, Policy, Rule, RuleTest
from policyd.policy.outcomes import Check, rule_reason, runtime_checks
from policyd.records import ENTRY, RUNTIME


@dataclass(frozen=True)
class TestFailure:
    source: str
    line: int
    what: str  # rule or group
    item_id: str
    test: str
    message: str

    def __str__(self) -> str:
        return f"{self.source}:{self.line}: {self.what} {self.item_id}: test {self.test}: {self.message}"


def _entry_reason(policy: Policy, record: Mapping[str, Any], fired: Fired) -> str:
    """One record's reason: each group's reasons (first or every match, joined), then loose rules'."""
    parts = []
    for group in policy.groups:
        members = [r for r in fired if r.group == group.id and r.effect in DECIDING]
        if members:
            chosen = members[:1] if group.combine == "first" else members
            parts.append(group.join.join(rule_reason(r, record).message for r in chosen))
    loose = [r for r in fired if not r.group and r.effect in DECIDING]
    if loose and not parts:
        parts.append(rule_reason(loose[0], record).message)
    return "; ".join(parts)


def _compare(problems: list[str], what: str, got: Any, expect: Mapping[str, Any], key: str) -> None:
    if key in expect and got != expect[key]:
        problems.append(f"{what} {got!r}, expected {expect[key]!r}")


def _check_rule(test: RuleTest, rule: Rule, policy: Policy, engine: RuleEngine) -> list[str]:
    record = {**neutral_record(rule.applies_to, policy.fields), **test.facts}
    fired = engine.fire(rule.applies_to, [record])[0]
    deciding = [r for r in fired if r.effect in DECIDING]
    findings = [rule_reason(r, record).message for r in fired if r.effect == "finding"]
    # a lint record decides nothing: its first rule is its first finding
    first = next(iter(deciding or [r for r in fired if r.effect == "finding"]), None)
    expect, problems = test.expect, list[str]()
    _compare(problems, "first rule", first.id if first else None, expect, "rule")
    _compare(problems, "effect", first.effect if first else "pass", expect, "effect")
    _compare(problems, "kind", first.kind if first else "", expect, "kind")
    _compare(problems, "severity", first.severity if first else "", expect, "severity")
    _compare(problems, "fired", [r.id for r in fired], expect, "fired")
    reason = _entry_reason(policy, record, fired) or (findings[0] if findings else "")
    _compare(problems, "reason", reason, expect, "reason")
    _compare(problems, "findings", findings, expect, "findings")
    advisories = [rule_reason(r, record).message for r in fired if r.effect == "advise"]
    _compare(problems, "advisories", advisories, expect, "advisories")
    _compare(problems, "points", sum(r.points for r in fired if r.effect == "score"), expect, "points")
    return problems


def _check_group(test: RuleTest, group: Group, policy: Policy, engine: RuleEngine) -> list[str]:
    scope = RUNTIME if group.applies_to == ENTRY else group.applies_to
    record = {**neutral_record(scope, policy.fields), **test.facts}
    entries: Sequence[tuple[Mapping[str, Any], Fired]] = ()
    fired: Fired = ()
    if group.applies_to == ENTRY:
        records = [
            {**neutral_record(ENTRY, policy.fields), **test.facts, "entry_index": i, **e}
            for i, e in enumerate(test.entries)
        ]
        entries = list(zip(records, engine.fire(ENTRY, records), strict=True))
    else:
        fired = engine.fire(scope, [record])[0]
    checks, _ = runtime_checks(policy, record, fired, entries)
    check: Check | None = next((c for c in checks if c.group is not None and c.group.id == group.id), None)
    expect, problems = test.expect, list[str]()
    _compare(problems, "effect", check.effect if check else "pass", expect, "effect")
    _compare(problems, "kind", check.kind if check else "", expect, "kind")
    _compare(problems, "reason", check.reason().message if check else "", expect, "reason")
    _compare(problems, "rule", group.id if check else None, expect, "rule")
    return problems


def run_tests(policy: Policy, engine: RuleEngine, within: Path | None = None) -> tuple[int, list[TestFailure]]:
    """How many tests ran, and the failures; with ``within``, only the tests of the files there."""
    count, failures = 0, list[TestFailure]()
    for rule in policy.rules:
        if within is not None and Path(rule.source).parent != within:
            continue
        for test in rule.tests:
            count += 1
            failures += [
                TestFailure(rule.source, rule.line, "rule", rule.id, test.name, p)
                for p in _check_rule(test, rule, policy, engine)
            ]
    for group in policy.groups:
        if within is not None and Path(group.source).parent != within:
            continue
        for test in group.tests:
            count += 1
            failures += [
                TestFailure(group.source, group.line, "group", group.id, test.name, p)
                for p in _check_group(test, group, policy, engine)
            ]
    return count, failures

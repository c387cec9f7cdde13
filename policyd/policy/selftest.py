"""Run the tests stored with the rules: input facts → expected first rule,
effect, reason, advisories and points."""

from __future__ import annotations

from dataclasses import dataclass

from policyd.facts.fields import neutral_record
from policyd.policy import templates
from policyd.policy.engine import RuleEngine
from policyd.policy.model import Policy, Rule, RuleTest


@dataclass(frozen=True)
class TestFailure:
    rule: Rule
    test: str
    message: str

    def __str__(self) -> str:
        return f"{self.rule.source}:{self.rule.line}: rule {self.rule.id}: test {self.test}: {self.message}"


def _check(test: RuleTest, engine: RuleEngine) -> list[str]:
    record = {**neutral_record(), **test.facts}
    verdict = engine.evaluate([record])[0]
    first = verdict.first
    expect = test.expect
    problems = []
    if "rule" in expect and (first.id if first else None) != expect["rule"]:
        problems.append(f"first rule {first.id if first else None!r}, expected {expect['rule']!r}")
    if "effect" in expect:
        effect = first.effect if first else "pass"
        if effect != expect["effect"]:
            problems.append(f"effect {effect!r}, expected {expect['effect']!r}")
    if "reason" in expect:
        reason = templates.render(first.reason, record) if first else ""
        if reason != expect["reason"]:
            problems.append(f"reason {reason!r}, expected {expect['reason']!r}")
    if "advisories" in expect:
        got = [templates.render(r.reason, record) for r in verdict.advisories]
        if got != expect["advisories"]:
            problems.append(f"advisories {got!r}, expected {expect['advisories']!r}")
    if "points" in expect and verdict.points != expect["points"]:
        problems.append(f"points {verdict.points}, expected {expect['points']}")
    return problems


def run_tests(policy: Policy, engine: RuleEngine) -> tuple[int, list[TestFailure]]:
    """How many tests ran, and the failures."""
    count, failures = 0, list[TestFailure]()
    for rule in policy.rules:
        for test in rule.tests:
            count += 1
            failures.extend(TestFailure(rule, test.name, p) for p in _check(test, engine))
    return count, failures

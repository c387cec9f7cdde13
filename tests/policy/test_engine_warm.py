"""A new rules revision is warmed from the last one's verdicts, off the request path."""

from __future__ import annotations

import dataclasses

import pytest
from testkit.shared import RULES

from policyd.facts.fields import neutral_record
from policyd.policy.conditions import compile_condition
from policyd.policy.engine import RuleEngine
from policyd.policy.loader import load_policy


def _records() -> list[dict[str, object]]:
    out = []
    for disabled in (False, True):
        for arch in ("LlamaForCausalLM", "Qwen2ForCausalLM"):
            record = neutral_record("entry")
            record.update(format_name_match=disabled, model_architecture="LlamaForCausalLM", entry_architecture=arch)
            out.append(record)
    return out


def test_a_new_revision_judges_the_records_the_last_one_saw_before_serving(monkeypatch: pytest.MonkeyPatch) -> None:
    rules = load_policy(RULES).rules
    old, new = RuleEngine(rules), RuleEngine(rules)
    expected = old.fire("entry", _records())
    assert new.warm_from(old) == 4

    def no_engine(scope: object, records: object) -> None:
        raise AssertionError("a warmed revision should not need the engine for these records")

    monkeypatch.setattr(new, "_run", no_engine)
    assert new.fire("entry", _records()) == expected


def test_a_revision_that_tests_a_new_field_is_not_warmed() -> None:
    rules = load_policy(RULES).rules
    old = RuleEngine(rules)
    old.fire("entry", _records())
    condition, fields = compile_condition({"namespace": "team-a"})
    entry_rule = next(r for r in rules if r.applies_to == "entry")
    extra = dataclasses.replace(entry_rule, id="namespace-rule", order=99, condition=condition, fields=fields)
    assert RuleEngine((*rules, extra)).warm_from(old) == 0

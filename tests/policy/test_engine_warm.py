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
            record = neutral_record()
            record.update(runtime_disabled=disabled, model_architecture="LlamaForCausalLM", entry_architecture=arch)
            out.append(record)
    return out


def test_a_new_revision_judges_the_records_the_last_one_saw_before_serving(monkeypatch: pytest.MonkeyPatch) -> None:
    rules = load_policy(RULES).rules
    old, new = RuleEngine(rules), RuleEngine(rules)
    expected = [(v.compat, v.select) for v in old.evaluate(_records())]
    assert new.warm_from(old) == 4

    def no_engine(records: object) -> None:
        raise AssertionError("a warmed revision should not need the engine for these records")

    monkeypatch.setattr(new, "_run", no_engine)
    assert [(v.compat, v.select) for v in new.evaluate(_records())] == expected


def test_a_revision_that_tests_a_new_field_is_not_warmed() -> None:
    rules = load_policy(RULES).rules
    old = RuleEngine(rules)
    old.evaluate(_records())
    condition, fields = compile_condition({"namespace": "team-a"})
    extra = dataclasses.replace(rules[0], id="namespace-rule", order=99, condition=condition, fields=fields)
    assert RuleEngine((*rules, extra)).warm_from(old) == 0

"""``effect: allow`` with ``overrides`` waives other rules where its condition holds; a kind whose
``when_named`` is block makes Resolve reject, instead of warn about, a runtime named explicitly
that the rule finds not compatible."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from policyd.facts.fields import neutral_record
from policyd.policy.conditions import negate
from policyd.policy.engine import RuleEngine
from policyd.policy.loader import RuleFileError, load_policy
from policyd.policy.revision import build_revision

from .builders import copy_rules
from .test_rule_loader import append_rule

ALLOW = """
  - id: allow-dev-framework
    order: 429
    applies_to: entry
    effect: allow
    overrides: [framework-version-mismatch]
    when: {namespace: dev, entry_framework_version: {in: ["4.45.0", "4.46.0"]}}
    reason: the dev namespace runs any framework version
"""


def _rules_with(tmp_path: Path, rule: str, file: str = "20-formats.yaml") -> Path:
    rules = copy_rules(tmp_path)
    append_rule(rules / file, rule)
    return rules


def _first(revision: Any, **facts: Any) -> str | None:
    fired = revision.engine.fire("entry", [{**neutral_record("entry"), **facts}])[0]
    return fired[0].id if fired else None


def test_allow_waives_the_rule_it_overrides_only_where_its_condition_holds(tmp_path: Path) -> None:
    revision = build_revision(_rules_with(tmp_path, ALLOW))
    mismatch = {
        "framework_version_match": False,
        "entry_framework_version": "4.45.0",
        "model_framework_version_set": True,
        "entry_framework_version_set": True,
    }
    assert _first(revision, namespace="dev", **mismatch) is None
    assert _first(revision, namespace="prod", **mismatch) == "framework-version-mismatch"
    assert _first(revision, **{**mismatch, "namespace": "dev", "entry_framework_version": "5.0.0"}) == (
        "framework-version-mismatch"
    )


def test_allow_leaves_the_other_rules_in_force(tmp_path: Path) -> None:
    revision = build_revision(_rules_with(tmp_path, ALLOW))
    facts = {"namespace": "dev", "framework_version_match": False, "entry_framework_version": "4.45.0"}
    both = {"model_format_version_set": True, "entry_format_version_set": True}
    assert _first(revision, format_version_match=False, **both, **facts) == "format-version-mismatch"


def test_an_allow_rule_never_fires_itself(tmp_path: Path) -> None:
    revision = build_revision(_rules_with(tmp_path, ALLOW))
    assert "allow-dev-framework" not in {r.id for r in revision.engine.rules}
    assert "allow-dev-framework" in {r.id for r in revision.policy.rules}


@pytest.mark.parametrize(
    ("overrides", "words"),
    [
        ("[no-such-rule]", "overrides unknown rule no-such-rule"),
        ("[preferred-or-advice]", "cannot be overridden"),
        ("[runtime-disabled]", "applies to entry but overrides runtime-disabled, which applies to runtime"),
    ],
)
def test_allow_must_override_first_match_rules_of_its_scope(tmp_path: Path, overrides: str, words: str) -> None:
    advice = """
  - id: preferred-or-advice
    order: 951
    applies_to: runtime
    effect: advise
    when: {runtime_disabled: true}
    reason: advice
"""
    rules = _rules_with(tmp_path, ALLOW.replace("[framework-version-mismatch]", overrides))
    (rules / "95-advice.yaml").write_text("rules:" + advice)
    with pytest.raises(RuleFileError) as err:
        load_policy(rules)
    assert err.value.rule_id == "allow-dev-framework" and words in err.value.reason


@pytest.mark.parametrize(
    ("rule", "words"),
    [
        (ALLOW.replace("    overrides: [framework-version-mismatch]\n", ""), "overrides is required with effect allow"),
        (ALLOW.replace("effect: allow", "effect: exclude"), "overrides is required with effect allow and allowed only"),
        (ALLOW.replace("effect: allow", "effect: allow\n    kind: Advisory"), "kind is declared only on rules that"),
    ],
)
def test_overrides_go_with_allow_and_kinds_with_refusals(tmp_path: Path, rule: str, words: str) -> None:
    with pytest.raises(RuleFileError) as err:
        load_policy(_rules_with(tmp_path, rule))
    assert words in err.value.reason


def test_a_named_runtime_gets_omes_warning_unless_the_kind_rejects_it() -> None:
    policy = load_policy(Path(__file__).resolve().parents[2] / "rules")
    by_id = {r.id: r for r in policy.rules}
    assert policy.kinds[by_id["framework-version-mismatch"].kind].when_named == "warn"
    assert policy.kinds[by_id["diffusers-cfg-parallel-not-supported"].kind].when_named == "block"


WHENS: list[dict[str, Any]] = [
    {"namespace": "dev"},
    {"namespace": {"ne": "dev"}, "priority": {"gt": 2}},
    {"any": [{"entry_index": {"lte": 0}}, {"runtime_labels": {"contains": "a=b"}}]},
    {"all": [{"model_name": {"in": ["x", "y"]}}, {"model_kind": {"not_in": ["BaseModel"]}}]},
    {"runtime_labels": {"not_contains": "a=b"}, "entry_format_name": {"fact": "model_format_name"}},
    {"priority": {"lt": 3}, "format_weight": {"gte": 1}, "size_in_range": False},
]
RECORDS: list[dict[str, Any]] = [
    {},
    {"namespace": "dev", "priority": 3},
    {"namespace": "prod", "priority": 5, "runtime_labels": ["a=b"], "entry_index": 2},
    {"model_name": "x", "model_kind": "ClusterBaseModel", "size_in_range": False},
    {"model_name": "y", "model_kind": "BaseModel", "entry_format_name": "onnx", "model_format_name": "onnx"},
    {"priority": 2, "format_weight": 0, "entry_index": -1, "runtime_labels": ["c=d"]},
]


@pytest.mark.parametrize("when", WHENS, ids=range(len(WHENS)))
def test_negate_holds_exactly_where_the_condition_does_not(tmp_path: Path, when: dict[str, Any]) -> None:
    rules = copy_rules(tmp_path)
    pair = {
        "rules": [
            {"id": "cond", "order": 1, "applies_to": "entry", "effect": "advise", "when": when, "reason": "c"},
            {"id": "neg", "order": 2, "applies_to": "entry", "effect": "advise", "when": negate(when), "reason": "n"},
        ]
    }
    (rules / "99-pair.yaml").write_text(yaml.safe_dump(pair))
    engine = RuleEngine(load_policy(rules).rules)  # the other rules' stored tests expect no such advice
    for record in RECORDS:
        ids = {r.id for r in engine.fire("entry", [{**neutral_record("entry"), **record}])[0]}
        assert ids & {"cond", "neg"} in ({"cond"}, {"neg"}), (record, ids)

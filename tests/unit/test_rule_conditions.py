"""Rule conditions are data: comparisons of known fact fields with literals of the field's type or
with other fact fields, compiled to durable-rules' JSON form and evaluated by durable-rules."""

from __future__ import annotations

import json
from typing import Any

import pytest

from policyd.facts.fields import FIELDS, neutral_record
from policyd.policy.conditions import ConditionError, compile_condition
from policyd.policy.engine import RuleEngine
from policyd.policy.model import Rule


def refused(when: dict[str, Any]) -> str:
    with pytest.raises(ConditionError) as err:
        compile_condition(when)
    return str(err.value)


def make_rule(when: dict[str, Any], rule_id: str = "r", order: int = 1, effect: str = "exclude") -> Rule:
    condition, fields = compile_condition(when)
    return Rule(
        id=rule_id,
        order=order,
        applies_to="entry",
        effect=effect,
        kind="Advisory",
        group="g",
        when=when,
        condition=condition,
        fields=fields,
        reason="reason",
        refusal="",
        condition_message="",
        admission=True,
        field="",
        component="",
        model_value="",
        runtime_value="",
        advisory="",
        points=0,
        overrides=(),
        severity="",
        tests=(),
        source="test",
        line=1,
    )


def matches(when: dict[str, Any], *facts: dict[str, Any]) -> list[bool]:
    """Whether each record (the neutral record with ``facts``) matches ``when`` in durable-rules."""
    engine = RuleEngine([make_rule(when)])
    fired = engine.fire("entry", [{**neutral_record("entry"), **f} for f in facts])
    return [bool(hits) for hits in fired]


# -- fields -------------------------------------------------------------------------------------


def test_conditions_compile_only_known_fact_fields() -> None:
    assert "unknown fact field 'runtime_nmae'" in refused({"runtime_nmae": "x"})
    assert "unknown fact field" in refused({"all": [{"model_name": "m"}, {"spec.model.name": "m"}]})


def test_compile_reports_the_fields_a_condition_tests() -> None:
    _, fields = compile_condition(
        {"runtime_disabled": True, "any": [{"priority": {"gt": 1}}, {"runtime_labels": {"contains": "a=b"}}]}
    )
    assert fields == frozenset({"runtime_disabled", "priority", "runtime_labels"})


def test_every_fact_field_has_a_known_type() -> None:
    assert {f.type for f in FIELDS.values()} == {"string", "boolean", "integer", "list"}


# -- literals and their types ----------------------------------------------------------------------


def test_a_plain_value_means_equal() -> None:
    assert compile_condition({"runtime_disabled": True})[0] == {"runtime_disabled": True}
    assert compile_condition({"runtime_name": {"eq": "rt"}})[0] == {"runtime_name": "rt"}


@pytest.mark.parametrize(
    "when",
    [
        {"runtime_disabled": "true"},
        {"runtime_disabled": 1},
        {"priority": True},
        {"priority": "1"},
        {"runtime_name": 3},
        {"runtime_name": None},
        {"runtime_name": ["a"]},
    ],
)
def test_a_literal_must_have_the_field_s_type(when: dict[str, Any]) -> None:
    assert "expected a" in refused(when)


@pytest.mark.parametrize("op", ["lt", "lte", "gt", "gte"])
def test_ordering_operators_need_an_integer_field(op: str) -> None:
    assert compile_condition({"priority": {op: 2}})[0] == {f"${op}": {"priority": 2}}
    assert "needs an integer field" in refused({"runtime_name": {op: "a"}})
    assert "needs an integer field" in refused({"runtime_disabled": {op: True}})


def test_ne_compiles_to_neq() -> None:
    assert compile_condition({"engine_mode_runtime": {"ne": ""}})[0] == {"$neq": {"engine_mode_runtime": ""}}


def test_contains_is_only_for_list_fields() -> None:
    assert compile_condition({"runtime_images": {"contains": "x"}})[0] == {"$iany": {"runtime_images": {"$i": "x"}}}
    assert "unknown operator 'contains'" in refused({"runtime_name": {"contains": "x"}})
    assert "unknown operator 'not_contains'" in refused({"priority": {"not_contains": 1}})


@pytest.mark.parametrize(
    "spec", ["x", {"eq": "x"}, {"ne": "x"}, {"in": ["x"]}, {"contains": ""}, {"contains": 1}, {"not_contains": ["x"]}]
)
def test_a_list_field_takes_only_contains_or_not_contains_with_a_non_empty_string(spec: Any) -> None:
    assert "a list field takes contains / not_contains" in refused({"runtime_labels": spec})


def test_in_and_not_in_take_a_non_empty_list_of_literals_of_the_field_s_type() -> None:
    assert compile_condition({"runtime_kind": {"in": ["ServingRuntime"]}})[0] == {
        "$or": [{"runtime_kind": "ServingRuntime"}]
    }
    assert "takes a non-empty list" in refused({"runtime_kind": {"in": []}})
    assert "takes a non-empty list" in refused({"runtime_kind": {"not_in": "ServingRuntime"}})
    assert "expected a string" in refused({"runtime_kind": {"in": ["ServingRuntime", 1]}})


@pytest.mark.parametrize("op", ["regex", "matches", "eval", "exec", "$m", "$neq", "startswith"])
def test_an_operator_that_is_not_in_the_list_is_refused(op: str) -> None:
    assert f"unknown operator {op!r}" in refused({"runtime_name": {op: "x"}})


def test_an_operator_mapping_with_two_operators_is_refused() -> None:
    refused({"priority": {"gt": 1, "lt": 5}})


def test_an_empty_operator_mapping_is_refused() -> None:
    refused({"priority": {}})


# -- references to other facts ----------------------------------------------------------------------


def test_a_fact_reference_compares_with_another_known_field_of_the_same_type() -> None:
    condition, _ = compile_condition({"model_architecture": {"ne": {"fact": "entry_architecture"}}})
    assert condition == {"$neq": {"model_architecture": {"$m": "entry_architecture"}}}
    assert compile_condition({"model_architecture": {"fact": "entry_architecture"}})[0] == {
        "model_architecture": {"$m": "entry_architecture"}
    }


def test_a_fact_reference_to_a_field_of_another_type_is_refused() -> None:
    assert "of another type" in refused({"runtime_name": {"ne": {"fact": "priority"}}})


@pytest.mark.parametrize("ref", ["runtime_nmae", "__class__", "__import__('os')", "", None, 1])
def test_a_fact_reference_to_a_non_field_is_refused(ref: Any) -> None:
    assert "a value must be a literal or {fact: <known field>}" in refused({"runtime_name": {"ne": {"fact": ref}}})


def test_a_fact_reference_takes_nothing_but_fact() -> None:
    assert "a value must be a literal" in refused({"runtime_name": {"ne": {"fact": "model_name", "x": 1}}})


def test_a_fact_reference_counts_as_a_field_the_condition_tests() -> None:
    # the engine sends a record only the fields rules test, so a referenced field must be among them
    _, fields = compile_condition({"model_architecture": {"ne": {"fact": "entry_architecture"}}})
    assert fields == frozenset({"model_architecture", "entry_architecture"})


# -- all / any ------------------------------------------------------------------------------------


def test_all_and_any_nest_conditions() -> None:
    condition, _ = compile_condition({"any": [{"priority": 1}, {"all": [{"runtime_disabled": True}, {"priority": 2}]}]})
    assert condition == {"$or": [{"priority": 1}, {"$and": [{"runtime_disabled": True}, {"priority": 2}]}]}


def test_several_keys_in_one_mapping_all_have_to_hold() -> None:
    condition, _ = compile_condition({"runtime_disabled": True, "priority": 2})
    assert condition == {"$and": [{"runtime_disabled": True}, {"priority": 2}]}


@pytest.mark.parametrize("when", [{"all": []}, {"any": "x"}, {"all": [{}]}, {}, {"any": [[{"priority": 1}]]}])
def test_empty_or_malformed_groups_are_refused(when: dict[str, Any]) -> None:
    refused(when)


def test_a_compiled_condition_is_plain_json_data() -> None:
    condition, _ = compile_condition(
        {
            "runtime_name": {"not_in": ["a", "b"]},
            "any": [{"runtime_images": {"not_contains": "x:latest"}}, {"priority": {"gte": 3}}],
            "all": [{"model_architecture": {"ne": {"fact": "entry_architecture"}}}],
        }
    )
    assert json.loads(json.dumps(condition)) == condition


# -- what durable-rules makes of them ---------------------------------------------------------------


def test_durable_rules_evaluates_equal_and_not_equal() -> None:
    assert matches({"runtime_name": "a"}, {"runtime_name": "a"}, {"runtime_name": "b"}) == [True, False]
    assert matches({"runtime_name": {"ne": "a"}}, {"runtime_name": "a"}, {"runtime_name": "b"}) == [False, True]


def test_durable_rules_evaluates_in_and_not_in() -> None:
    records = [{"runtime_name": n} for n in ("a", "b", "c")]
    assert matches({"runtime_name": {"in": ["a", "b"]}}, *records) == [True, True, False]
    assert matches({"runtime_name": {"not_in": ["a", "b"]}}, *records) == [False, False, True]


def test_durable_rules_evaluates_integer_comparisons() -> None:
    records = [{"priority": p} for p in (1, 2, 3)]
    assert matches({"priority": {"lt": 2}}, *records) == [True, False, False]
    assert matches({"priority": {"gte": 2}}, *records) == [False, True, True]


def test_durable_rules_evaluates_contains_and_not_contains_including_an_empty_list() -> None:
    records = [{"runtime_images": ["a", "b"]}, {"runtime_images": ["b"]}, {"runtime_images": []}]
    assert matches({"runtime_images": {"contains": "a"}}, *records) == [True, False, False]
    assert matches({"runtime_images": {"not_contains": "a"}}, *records) == [False, True, True]


def test_durable_rules_evaluates_any_and_all() -> None:
    when = {"any": [{"priority": 1}, {"all": [{"runtime_disabled": True}, {"priority": 2}]}]}
    records = [
        {"priority": 1},
        {"priority": 2, "runtime_disabled": True},
        {"priority": 2},
        {"priority": 3, "runtime_disabled": True},
    ]
    assert matches(when, *records) == [True, True, False, False]


def test_durable_rules_compares_two_facts_when_one_is_also_tested_directly() -> None:
    # as the default architecture-mismatch rule does
    when = {
        "model_architecture": {"ne": ""},
        "entry_architecture": {"ne": ""},
        "all": [{"model_architecture": {"ne": {"fact": "entry_architecture"}}}],
    }
    records = [
        {"model_architecture": "A", "entry_architecture": "A"},
        {"model_architecture": "A", "entry_architecture": "B"},
    ]
    assert matches(when, *records) == [False, True]


def test_durable_rules_compares_two_facts_named_only_by_a_reference() -> None:
    records = [{"runtime_name": "a", "model_name": "a"}, {"runtime_name": "a", "model_name": "b"}]
    assert matches({"runtime_name": {"fact": "model_name"}}, *records) == [True, False]
    assert matches({"runtime_name": {"ne": {"fact": "model_name"}}}, *records) == [False, True]

"""The fact catalogue is declared once (policyd/facts/fields.py): every record derivation makes —
a request's and the lint scopes' records of a catalog alike — carries exactly the fields declared
for its scope — none derived but undeclared, none declared but never derived — and the neutral
records pass every bundled rule."""

from __future__ import annotations

import pytest

from policyd.facts.admission import admit_pair_records, admit_runtime_record
from policyd.facts.derive import Derivation, Subject, component_records
from policyd.facts.fields import FIELDS, fields_of, neutral_record, reader
from policyd.policy.effects import DECIDING
from policyd.records import (
    ADMISSION_SCOPES,
    ADMIT_PAIR,
    ADMIT_RUNTIME,
    COMPONENT,
    ENTRY,
    LINT_SCOPES,
    MODEL,
    REQUEST,
    RUNTIME,
    SCOPES,
)
from policyd.resources.manifests import parse_model, parse_runtime
from policyd.whatif.lint_facts import lint_records

from .builders import catalog, default_revision, entry, isvc, model, parsed_isvc, plain, runtime

SCORING = default_revision().policy.scoring


def _records() -> dict[str, dict[str, object]]:
    request = parsed_isvc(isvc(decoder={}, router={}))
    base_model = parse_model(model())
    rt = parse_runtime(runtime(entries=[entry()], classes=["nvidia-h100"], size_range=("1B", "8B")))
    subject = Subject(request.meta.namespace, request, base_model, request.model, False)
    facts = Derivation()
    base = facts.subject_record(subject)
    entries = facts.entries(base_model, rt, SCORING)
    record = facts.runtime_record(subject, base, rt, entries, SCORING, named=False)
    accelerator = {"apiVersion": "ome.io/v1beta1", "kind": "AcceleratorClass", "metadata": {"name": "nvidia-h100"}}
    lint, _ = lint_records(
        catalog(model(), runtime("a", classes=["nvidia-h100"]), runtime("b"), accelerator), plain(default_revision())
    )
    # Go compares versions and operators by pointer: entries that pair set neither
    unpinned = {"modelFormat": {"name": "safetensors"}, "modelFramework": {"name": "transformers"}, "autoSelect": True}
    pairs = catalog(runtime("a", entries=[unpinned]), runtime("b", entries=[unpinned]))
    reviewed = pairs.runtimes[next(k for k in pairs.runtimes if k[2] == "b")]
    admitted = admit_runtime_record(reviewed, pairs, facts)
    return {
        ADMIT_RUNTIME: admitted,
        ADMIT_PAIR: admit_pair_records(reviewed, admitted, pairs, facts)[0],
        REQUEST: base,
        RUNTIME: record,
        ENTRY: {**record, **entries[0]},
        COMPONENT: component_records(record, request, rt)[0],
        **{scope: next(r.record for r in lint if r.scope == scope) for scope in LINT_SCOPES},
    }


@pytest.mark.parametrize("scope", [REQUEST, RUNTIME, ENTRY, COMPONENT, *LINT_SCOPES, *ADMISSION_SCOPES])
def test_derived_records_carry_exactly_the_declared_fields_of_their_scope(scope: str) -> None:
    derived = set(_records()[scope])
    declared = set(fields_of(scope))
    assert derived - declared == set(), "derived but not declared"
    assert declared - derived == set(), "declared but never derived"


TYPES = {"string": str, "boolean": bool, "integer": int, "list": list}


@pytest.mark.parametrize("scope", [REQUEST, RUNTIME, ENTRY, COMPONENT, *LINT_SCOPES, *ADMISSION_SCOPES])
def test_derived_records_hold_values_of_each_fields_declared_type(scope: str) -> None:
    # memo keys (fields.reader) make a list field's value a tuple by its declared type
    record = _records()[scope]
    assert {
        name: type(value).__name__ for name, value in record.items() if type(value) is not TYPES[FIELDS[name].type]
    } == {}


def test_a_key_holds_each_fields_value_and_a_list_fields_items_as_a_tuple() -> None:
    names = ["model_name", "accelerator_classes_requested", "isvc_has_engine"]
    key = reader(names)
    record = {"model_name": "m", "accelerator_classes_requested": ["a", "b"], "isvc_has_engine": True, "other": 1}
    assert key(record) == ("m", ("a", "b"), True)
    assert hash(key(record)) == hash(key({**record, "other": 2}))
    assert reader(["accelerator_classes_requested"])(record) == (("a", "b"),)
    assert reader(["model_name", "isvc_has_engine"])(record) == ("m", True)
    assert reader([])(record) == ()


def test_every_field_belongs_to_a_scope_and_has_a_neutral_value_of_its_type() -> None:
    for name, spec in FIELDS.items():
        assert spec.scope in SCOPES, name
        assert type(spec.neutral_value) is TYPES[spec.type], name
    assert set(fields_of(MODEL)) <= set(fields_of(REQUEST))


@pytest.mark.parametrize("scope", SCOPES)
def test_a_neutral_record_passes_every_bundled_rule(scope: str) -> None:
    fired = default_revision().engine.fire(scope, [neutral_record(scope)])[0]
    assert [r.id for r in fired if r.effect in DECIDING] == []

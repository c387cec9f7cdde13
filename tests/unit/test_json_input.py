"""A manifest sent as JSON (what clients and the controller send) is read on a quicker path than
YAML; it must hold to the same rule: only what JSON can carry, within the limits, and anything
else refused naming its field."""

from __future__ import annotations

import json

import pytest
import yaml

from policyd.errors import InvalidInput
from policyd.resources.safe_yaml import MAX_DEPTH, load_all


def _nested(levels: int) -> str:
    return "{" + '"a": {' * (levels - 1) + "}" * levels


@pytest.mark.parametrize(
    ("text", "field", "message"),
    [
        ('{"spec": {"priority": 100000000000000000000}}', "input.spec.priority", "integer out of range"),
        ('{"spec": {"sizes": [1, -9223372036854775809]}}', "input.spec.sizes[1]", "integer out of range"),
        ('{"spec": {"weight": 1e999}}', "input.spec.weight", "inf is not a number JSON can carry"),
        (_nested(MAX_DEPTH + 1), "input" + ".a" * MAX_DEPTH, f"nested more than {MAX_DEPTH} levels deep"),
    ],
    ids=["int-beyond-64-bits", "negative-int-beyond-64-bits", "infinity", "too-deep"],
)
def test_json_holds_only_what_json_can_carry_and_names_the_field(text: str, field: str, message: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        load_all(text)
    assert refused.value.field == field and message in refused.value.message, refused.value


def test_json_nested_to_the_limit_is_read() -> None:
    assert load_all(_nested(MAX_DEPTH))[0]["a"]


def test_json_reads_as_the_same_yaml_does() -> None:
    doc = {
        "apiVersion": "ome.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {"name": "m", "labels": {"team": "a"}},
        "spec": {"model": {"name": "m"}, "engine": {"minReplicas": 1, "ratio": 0.5, "on": True, "x": None}},
        "status": {"sizes": [1, 2.5, -3, 9223372036854775807]},
    }
    assert load_all(json.dumps(doc)) == load_all(yaml.safe_dump(doc)) == [doc]

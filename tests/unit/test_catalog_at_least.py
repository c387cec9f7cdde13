"""The policyd-catalog-at-least metadata: Kind=resourceVersion pairs, the newest of each kind asked
for; anything else is refused naming the metadata and the pair."""

from __future__ import annotations

import pytest

from policyd.errors import InvalidInput
from policyd.kube.sync import parse_at_least, parse_resource_version


def test_each_kind_asks_for_the_newest_resource_version_given_for_it() -> None:
    wanted = parse_at_least("ServingRuntime=12, ClusterServingRuntime=7,ServingRuntime=30")
    assert wanted == {"ServingRuntime": 30, "ClusterServingRuntime": 7}
    assert parse_at_least("") == {}


@pytest.mark.parametrize("pair", ["ServingRuntime", "Deployment=3", "ServingRuntime=abc", "=4"])
def test_a_pair_that_is_not_an_ome_kind_and_a_resource_version_is_refused_naming_it(pair: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        parse_at_least(f"BaseModel=1,{pair}")
    assert refused.value.field == "policyd-catalog-at-least"
    assert repr(pair) in refused.value.message


def test_a_resource_version_that_is_not_a_number_is_not_compared() -> None:
    assert parse_resource_version("1234") == 1234
    assert parse_resource_version("") is None
    assert parse_resource_version("abc/12") is None

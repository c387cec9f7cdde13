"""Model version matching (004 "Supported model formats", 000 "Declare a pipeline in a runtime"):
Equal by default; with GreaterThan or GreaterThanOrEqual the entry's version is an upper limit
on the model's, not a lower one; a dev or pre-release version matches only the same version,
whatever the operator; precision and the ``v`` prefix must agree."""

from __future__ import annotations

import pytest

from policyd.errors import InvalidInput
from policyd.resources.versions import (
    DEFAULT_OPERATOR,
    OPERATORS,
    parse_version,
    read_operator,
    unreadable_version,
    version_satisfies,
)


def satisfies(model: str, entry: str, operator: str = "Equal") -> bool:
    return version_satisfies(parse_version(model), parse_version(entry), operator)


# -- operators ----------------------------------------------------------------------------


def test_equal_is_the_default_operator() -> None:
    assert DEFAULT_OPERATOR == "Equal"
    assert read_operator("", "spec.x.operator") == ("Equal", "")


def test_the_three_operators_are_accepted_as_written() -> None:
    assert OPERATORS == ("Equal", "GreaterThan", "GreaterThanOrEqual")
    for operator in OPERATORS:
        assert read_operator(operator, "spec.x.operator") == (operator, "")


def test_equal_matches_only_the_same_version() -> None:
    assert satisfies("4.46.0", "4.46.0")
    assert not satisfies("4.46.1", "4.46.0")
    assert not satisfies("4.45.0", "4.46.0")


def test_greater_than_makes_the_entry_version_an_upper_limit() -> None:
    # entry GreaterThan 4.47.0: the entry's version must be greater than the model's
    assert satisfies("4.46.0", "4.47.0", "GreaterThan")
    assert satisfies("1.0.0", "4.47.0", "GreaterThan")
    assert not satisfies("4.47.0", "4.47.0", "GreaterThan")
    assert not satisfies("4.48.0", "4.47.0", "GreaterThan")


def test_greater_than_or_equal_makes_the_entry_version_an_inclusive_upper_limit() -> None:
    assert satisfies("4.46.0", "4.46.0", "GreaterThanOrEqual")
    assert satisfies("4.45.0", "4.46.0", "GreaterThanOrEqual")
    assert not satisfies("4.46.0", "4.45.0", "GreaterThanOrEqual")


def test_versions_compare_part_by_part_as_numbers_not_as_text() -> None:
    assert satisfies("4.9.0", "4.10.0", "GreaterThan")
    assert not satisfies("4.10.0", "4.9.0", "GreaterThan")


@pytest.mark.parametrize("operator", ["Equal", "GreaterThan", "GreaterThanOrEqual"])
def test_dev_version_matches_only_itself_whatever_the_operator(operator: str) -> None:
    assert satisfies("0.34.0.dev0", "0.34.0.dev0", operator)
    assert not satisfies("0.33.0", "0.34.0.dev0", operator)
    assert not satisfies("0.34.0", "0.34.0.dev0", operator)
    assert not satisfies("0.34.0.dev1", "0.34.0.dev0", operator)


@pytest.mark.parametrize("operator", ["Equal", "GreaterThan", "GreaterThanOrEqual"])
def test_pre_release_and_build_versions_match_only_the_same_version(operator: str) -> None:
    # a lower limit reading would accept these; an upper limit on a release would too
    assert not satisfies("2.0.0-beta.1", "2.0.0", operator)
    assert not satisfies("4.47.0-rc1", "4.48.0", operator)
    assert satisfies("4.47.0-rc1", "4.47.0-rc1", operator)
    assert satisfies("4.43.0+build", "4.43.0+build", operator)
    assert not satisfies("4.43.0+build", "4.43.0+other", operator)
    assert not satisfies("4.43.0", "4.43.0+build", operator)


def test_every_unofficial_form_modelver_reads() -> None:
    for text in ("0.34.0.dev0", "2.0.0-beta.1", "4.51.3-SAM-HQ-preview", "4.43.0+build", "1.2.3.4", "1.0.0-rc.1+b.2"):
        assert parse_version(text).unofficial, text
    assert not parse_version("4.46.0").unofficial


def test_equal_ignores_precision_and_the_v_prefix_as_ome_does() -> None:
    # modelver.Equal compares the numbers only: 4.46 is 4.46.0, v1 is 1
    assert satisfies("4.46", "4.46.0")
    assert satisfies("4.46.0", "4.46")
    assert satisfies("v4.46.0", "4.46.0")
    assert not satisfies("4.46", "4.47.0")


@pytest.mark.parametrize("operator", ["GreaterThan", "GreaterThanOrEqual"])
def test_ordering_needs_the_same_precision_and_v_prefix(operator: str) -> None:
    assert not satisfies("4.46", "4.47.0", operator)
    assert not satisfies("4.46.0", "4.47", operator)
    assert not satisfies("v4.46.0", "4.47.0", operator)
    assert not satisfies("4.46.0", "v4.47.0", operator)


def test_two_v_prefixed_versions_compare_normally() -> None:
    assert satisfies("v1.2.0", "v1.2.0")
    assert satisfies("v1.2.0", "v1.3.0", "GreaterThan")
    assert not satisfies("v1.3.0", "v1.2.0", "GreaterThan")


def test_parse_records_prefix_parts_and_the_unofficial_tails() -> None:
    version = parse_version("v4.45.0.dev0")
    assert (version.prefix, version.major, version.minor, version.patch, version.precision) == ("v", 4, 45, 0, 3)
    assert version.dev == ("dev0",)
    assert parse_version("1.0.0-rc.1+b.2").pre == ("rc", "1")
    assert parse_version("1.0.0-rc.1+b.2").build == ("b", "2")
    assert parse_version("1.12").precision == 2


# -- bad input ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "4.x",
        "abc",
        "latest",
        "4..6",
        ".4",
        "4.46.0.",
        "4.46.0-",
        "4,46",
        "v",
        "vv4",
        "4.46.0 beta",
        "1.0.0rc1",  # modelver reads a tag only after "-", "+" or a third "."
        "V1.0",  # only a lowercase v
        "01.2",  # no leading zeroes
        "1.02",
        "1.2.post1",
        " 1.0",
    ],
)
def test_a_version_ome_cannot_read_is_not_parsed_and_the_warning_says_it_matches_no_version(text: str) -> None:
    field = "spec.supportedModelFormats[0].modelFramework.version"
    with pytest.raises(InvalidInput) as err:
        parse_version(text, field)
    assert err.value.field == field
    assert repr(text) in err.value.message
    assert unreadable_version(field, text) == f"{field}: {text!r} is not a version OME reads; it matches no version"


def test_an_empty_version_is_refused() -> None:
    with pytest.raises(InvalidInput) as err:
        parse_version("", "spec.modelFormat.version")
    assert err.value.message == "malformed version: empty"


@pytest.mark.parametrize("value", [None, 4.46, 4])
def test_a_version_that_is_not_text_is_invalid_input(value: object) -> None:
    with pytest.raises(InvalidInput) as err:
        parse_version(value, "spec.modelFramework.version")  # type: ignore[arg-type]
    assert err.value.field == "spec.modelFramework.version"


@pytest.mark.parametrize("operator", ["LessThan", "equal", "greaterthan", "==", ">=", "Equals"])
def test_an_unknown_operator_compares_as_equal_and_the_warning_names_the_field(operator: str) -> None:
    field = "spec.supportedModelFormats[0].modelFormat.operator"
    assert read_operator(operator, field) == (
        "Equal",
        f"{field}: {operator!r} is not an operator OME reads; it compares as Equal",
    )

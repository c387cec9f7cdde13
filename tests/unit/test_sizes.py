"""Model parameter sizes (``500M``, ``7B``, ``1.24B``, ``1T``) and the selection tie-break:
"Ties go to the size range closest to the model's size" (004 "How OME selects a runtime")."""

from __future__ import annotations

import pytest

from policyd.resources.sizes import format_size, parse_size, range_distance, unreadable_size


@pytest.mark.parametrize(
    ("text", "parameters"),
    [("500M", 500e6), ("7B", 7e9), ("1.24B", 1.24e9), ("1T", 1e12), ("70B", 70e9), ("0.5B", 0.5e9)],
)
def test_sizes_parse_with_units_m_b_and_t(text: str, parameters: float) -> None:
    assert parse_size(text) == pytest.approx(parameters)


def test_units_scale_by_a_thousand() -> None:
    assert parse_size("1000M") == pytest.approx(parse_size("1B") or 0)
    assert parse_size("1000B") == pytest.approx(parse_size("1T") or 0)


def test_a_size_without_a_unit_is_a_count_of_parameters() -> None:
    assert parse_size("7000000000") == pytest.approx(7e9)
    assert parse_size("1e3B") == pytest.approx(1e12)  # OME reads the number as a float


@pytest.mark.parametrize(
    "text", ["7Q", "B7", "", "B", "1.2.3B", "7 billion", "7BB", "1,5B", "7b", "7 B", "7.7 B", " 7B", "7B ", "1e999B"]
)
def test_a_size_ome_cannot_read_counts_as_0_and_the_warning_names_the_field(text: str) -> None:
    assert parse_size(text) is None
    assert unreadable_size("spec.modelParameterSize", text) == (
        f"spec.modelParameterSize: {text!r} is not a size OME reads; it counts as 0"
    )


def test_a_sign_or_a_bare_dot_reads_as_go_reads_the_number() -> None:
    assert parse_size("-1B") == pytest.approx(-1e9)
    assert parse_size("+.5B") == pytest.approx(0.5e9)
    assert parse_size("7.B") == pytest.approx(7e9)


def test_a_size_that_is_not_text_is_not_read() -> None:
    assert parse_size(7_000_000_000) is None  # type: ignore[arg-type]


@pytest.mark.parametrize("text", ["500M", "7B", "1.24B", "1T", "70B", "405B", "1.5T", "3B", "8B", "60B", "75B"])
def test_format_size_round_trips_typical_sizes(text: str) -> None:
    assert format_size(parse_size(text) or 0) == text


def test_format_size_uses_the_largest_unit_that_is_at_least_one() -> None:
    assert format_size(1_235_814_400) == "1.24B"
    assert format_size(494_032_768) == "494.03M"
    assert format_size(7_615_616_512) == "7.62B"


def test_format_size_rounding_up_to_a_whole_unit_uses_that_unit() -> None:
    # 999,999,999 parameters round to 1000M; the shortest text is 1B
    assert format_size(999_999_999) == "1B"


def test_range_distance_of_a_range_holding_the_size_is_its_width() -> None:
    assert range_distance(3e9, 2e9, 4e9) == pytest.approx(2e9)
    assert range_distance(3e9, 1e9, 8e9) == pytest.approx(7e9)


def test_range_distance_prefers_the_range_closest_to_the_size() -> None:
    narrow = range_distance(3e9, 2e9, 4e9)
    wide = range_distance(3e9, 1e9, 8e9)
    exact = range_distance(3e9, 3e9, 3e9)
    assert exact < narrow < wide
    assert exact == 0


def test_range_distance_sums_the_distances_to_both_ends() -> None:
    assert range_distance(5e9, 2e9, 4e9) == pytest.approx(3e9 + 1e9)

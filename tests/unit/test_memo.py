"""policyd's caches (policyd/memo.py): a value is computed once per key; an Lru lets the least
recently used go first, a Bounded memo empties when full."""

from __future__ import annotations

import pytest

from policyd.memo import Bounded, Lru


@pytest.mark.parametrize("memo", [Bounded[str, int](4), Lru[str, int](4)], ids=["Bounded", "Lru"])
def test_a_value_is_computed_once_per_key(memo: Bounded[str, int] | Lru[str, int]) -> None:
    computed: list[str] = []

    def compute(key: str) -> int:
        computed.append(key)
        return len(key)

    assert [memo.get_or(k, lambda k=k: compute(k)) for k in ("a", "bb", "a", "bb")] == [1, 2, 1, 2]
    assert computed == ["a", "bb"]


def test_a_falsy_value_is_kept_as_a_value() -> None:
    memo = Lru[str, bool](2)
    assert memo.get_or("reads name", lambda: False) is False
    assert memo.get_or("reads name", lambda: True) is False


def test_an_lru_lets_the_least_recently_used_go_first() -> None:
    memo = Lru[str, int](2)
    memo.put("old", 1)
    memo.put("new", 2)
    assert memo.get("old") == 1  # used: "new" is now the least recently used
    memo.put("newest", 3)
    assert (memo.get("old"), memo.get("new"), memo.get("newest")) == (1, None, 3)
    assert memo.pop("old") == 1 and memo.pop("old") is None


def test_a_bounded_memo_empties_when_full() -> None:
    memo = Bounded[str, int](2)
    memo.put("a", 1)
    memo.put("b", 2)
    memo.put("c", 3)
    assert (memo.get("a"), memo.get("b"), memo.get("c"), len(memo)) == (None, None, 3, 1)


def test_a_bounded_memo_takes_a_batch_whole_emptying_first_when_it_would_overflow() -> None:
    memo = Bounded[str, int](3)
    memo.put_all({"a": 1, "b": 2})
    memo.put_all({"c": 3})
    assert memo.newest(2) == ["b", "c"]
    memo.put_all({"d": 4, "e": 5})
    assert (memo.get("a"), memo.get("c"), memo.get("d"), memo.get("e")) == (None, None, 4, 5)


def test_an_lru_weighed_by_its_values_keeps_within_their_total_weight() -> None:
    memo = Lru[str, bytes](10, weigh=len)
    memo.put("a", b"xxxx")
    memo.put("b", b"yyyy")
    memo.put("c", b"zzzz")  # 12 > 10: the least recently used goes
    assert (memo.get("a"), memo.get("b"), memo.get("c")) == (None, b"yyyy", b"zzzz")
    assert memo.put("huge", b"h" * 11) == b"h" * 11 and memo.get("huge") is None  # alone over the bound
    assert memo.get("b") == b"yyyy"

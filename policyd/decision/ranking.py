"""Rank selectable runtimes by the keys the rules declare."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from policyd.decision.verdicts import RuntimeVerdict
from policyd.policy.model import RankKey


def _value(key: RankKey) -> Callable[[RuntimeVerdict], Any]:
    if key.key == "kind":
        order = list(key.order)
        return lambda e: order.index(e.runtime.kind) if e.runtime.kind in order else len(order)
    if key.key == "score":
        return lambda e: e.score
    if key.key == "size_distance":
        return lambda e: e.size_distance
    return lambda e: e.runtime.meta.name


def rank(evaluations: Sequence[RuntimeVerdict], keys: Sequence[RankKey]) -> list[RuntimeVerdict]:
    """Selectable runtimes, best first. Stable sorts from the last key to the first."""
    ranked = [e for e in evaluations if e.selectable]
    for key in reversed(keys):
        ranked.sort(key=_value(key), reverse=key.direction == "desc")
    return ranked


def deciding_key(first: RuntimeVerdict, other: RuntimeVerdict, keys: Sequence[RankKey]) -> tuple[str, Any, Any] | None:
    """The first ranking key on which two runtimes differ, with each one's value (None when
    they are equal on every key: the same runtime)."""
    for key in keys:
        value = _value(key)
        if (mine := value(first)) != (theirs := value(other)):
            return key.key, _shown(key, first, mine), _shown(key, other, theirs)
    return None


def _shown(key: RankKey, verdict: RuntimeVerdict, value: Any) -> Any:
    """A key's value as people read it: the kind's name rather than its place in the order."""
    return verdict.runtime.kind if key.key == "kind" else value

"""A mapping that a change copies in the change's size, not the mapping's.

A catalog snapshot's mappings are a base dict, shared with the snapshots before it and never
changed, and the changes made since (a small dict; None marks a deletion). Past an eighth of
the base, the changes are merged into a new base: a change costs its own size, amortised,
where copying a dict of 20,000 runtimes took half of an ApplyObjects."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")
_MERGE_FROM = 64  # changes kept apart from the base at least this many, else an eighth of the base


class Layered(Mapping[K, V], Generic[K, V]):
    __slots__ = ("_base", "_len", "_top")

    def __init__(self, base: Mapping[K, V], top: dict[K, V | None] | None = None, length: int | None = None):
        self._base = base
        self._top: dict[K, V | None] = top or {}
        self._len = len(base) if length is None else length

    def __getitem__(self, key: K) -> V:
        top = self._top
        if key in top:
            value = top[key]
            if value is None:
                raise KeyError(key)
            return value
        return self._base[key]

    def __contains__(self, key: object) -> bool:
        top = self._top
        if key in top:
            return top[key] is not None
        return key in self._base

    def __iter__(self) -> Iterator[K]:
        top = self._top
        yield from (k for k in self._base if k not in top)
        yield from (k for k, v in top.items() if v is not None)

    def __len__(self) -> int:
        return self._len

    def changed(self, edits: Mapping[K, V | None]) -> Layered[K, V]:
        """This mapping with ``edits`` made: a value sets its key, None deletes it."""
        if not edits:
            return self
        top = dict(self._top)
        length = self._len
        for key, value in edits.items():
            had = key in self
            top.pop(key, None)  # an edited key goes last in the order, as a dict's re-inserted key
            top[key] = value
            length += (value is not None) - had
        if len(top) > max(_MERGE_FROM, len(self._base) // 8):
            merged = {k: v for k, v in self._base.items() if k not in top}
            merged.update((k, v) for k, v in top.items() if v is not None)
            return Layered(merged)
        return Layered(self._base, top, length)


def layered(mapping: Mapping[K, V]) -> Layered[K, V]:
    return mapping if isinstance(mapping, Layered) else Layered(mapping)

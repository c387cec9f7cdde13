"""Pickling slotted frozen dataclasses through their constructor.

The catalog's parse cache holds tens of thousands of them. Python's own pickling of a frozen
dataclass with slots restores each object through ``dataclasses``' ``__setstate__``, which looks
the fields up again for every object; at 20,000 runtimes that was a third of a start-up. The
constructor takes the same values for a fraction of that."""

from __future__ import annotations

from typing import Any


class ByConstructor:
    """A base for ``@dataclass(frozen=True, slots=True)`` classes whose fields are all init
    fields, in slot order."""

    __slots__ = ()

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        names: tuple[str, ...] = self.__slots__  # the subclass's: its fields
        return (type(self), tuple(getattr(self, name) for name in names))

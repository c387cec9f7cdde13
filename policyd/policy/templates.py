"""Reason and message templates: ``{name}`` placeholders only. No attribute or
index access and no format specs, so a template can print a value and nothing more."""

from __future__ import annotations

import string
import sys
from collections.abc import Iterable, Mapping
from typing import Any

_FORMATTER = string.Formatter()


def placeholders(template: str) -> list[str]:
    """The names a template prints; ValueError for anything but plain ``{name}``."""
    names = []
    for _, name, spec, conversion in _FORMATTER.parse(template):
        if name is None:
            continue
        if not name.isidentifier() or spec or conversion:
            raise ValueError(f"placeholder {{{name}}} must be a plain {{name}}")
        names.append(name)
    return names


def check(template: str, allowed: Iterable[str]) -> None:
    known = set(allowed)
    for name in placeholders(template):
        if name not in known:
            raise ValueError(f"unknown placeholder {{{name}}}")


_SHORT = 80  # rendered texts up to this long are interned: the same component and value names recur


def render(template: str, values: Mapping[str, Any]) -> str:
    if "{" not in template and "}" not in template:
        return template  # nothing to fill in (most component and value templates)
    out = []
    for literal, name, _, _ in _FORMATTER.parse(template):
        out.append(literal)
        if name is not None:
            value = values.get(name, "")
            out.append(", ".join(map(str, value)) if isinstance(value, list | tuple) else str(value))
    text = "".join(out)
    return sys.intern(text) if len(text) <= _SHORT else text

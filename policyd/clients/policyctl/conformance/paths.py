"""The path language of the conformance cases' assertions: dot-separated keys, ``[key=value]``
picks the single list element whose ``key`` equals ``value``, ``[N]`` indexes a list. A key that
holds a dot (a label or annotation key such as ``ome.io/inferenceservice``) writes each of its
dots as ``\\.``, so only an unescaped dot separates keys."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


MISSING = _Missing()
# a step: an optional separating dot, then a key (escaped dots and anything but . [ ]) or a [selector]
_STEP = re.compile(r"(?P<dot>\.)?(?:(?P<key>(?:\\\.|[^.\[\]])+)|\[(?P<selector>[^\]]*)\])")


@dataclass(frozen=True)
class Step:
    key: str | None  # a mapping key, its dots unescaped
    selector: str | None  # what is between [ and ], its dots unescaped


def _unescape(text: str) -> str:
    return text.replace("\\.", ".")


def parse(path: str) -> list[Step]:
    """The steps of ``path``. Raises ValueError for a path that is not in the language (an
    empty key or selector, a key after ``]`` with no dot, a dot before ``[``): read anyway, it
    would check some other place than the one its author meant."""
    steps: list[Step] = []
    pos = 0
    while pos < len(path):
        m = _STEP.match(path, pos)
        # a key needs a dot before it unless it comes first; a selector never has one
        well_formed = m is not None and (
            bool(m["dot"]) == bool(steps) if m["key"] is not None else not m["dot"] and bool(m["selector"])
        )
        if m is None or not well_formed:
            raise ValueError(f"{path}: not a path at {path[pos:]!r}")
        if m["key"] is not None:
            steps.append(Step(_unescape(m["key"]), None))
        else:
            steps.append(Step(None, _unescape(m["selector"])))
        pos = m.end()
    if not steps:
        raise ValueError("an empty path")
    return steps


def resolve(root: Any, path: str) -> Any:
    """The value at ``path``, or MISSING when any step finds nothing. Raises ValueError for a
    path not in the language, or a ``[key=value]`` step that matches more than one element."""
    value = root
    for step in parse(path):
        if value is MISSING:
            return MISSING
        if step.key is not None:
            value = value.get(step.key, MISSING) if isinstance(value, Mapping) else MISSING
        elif step.selector is not None:
            value = _select(value, step.selector, path)
    return value


def _select(value: Any, selector: str, path: str) -> Any:
    if not isinstance(value, list):
        return MISSING
    if selector.lstrip("-").isdigit():
        index = int(selector)
        return value[index] if -len(value) <= index < len(value) else MISSING
    key, _, wanted = selector.partition("=")
    matches = [item for item in value if isinstance(item, Mapping) and str(item.get(key)) == wanted]
    if len(matches) > 1:
        raise ValueError(f"{path}: [{selector}] matches {len(matches)} elements")
    return matches[0] if matches else MISSING


def check(root: Any, assertion: Mapping[str, Any]) -> str | None:
    """Why the assertion fails on ``root``, or None when it holds."""
    path = assertion["path"]
    value = resolve(root, path)
    if "equals" in assertion:
        wanted = assertion["equals"]
        holds = value in (MISSING, None) if wanted is None else value == wanted
        return None if holds else f"{path}: expected {wanted!r}, got {value!r}"
    if "contains" in assertion:
        wanted = assertion["contains"]
        return None if _contains(value, wanted) else f"{path}: {value!r} does not contain {wanted!r}"
    if assertion.get("absent"):
        return None if value is MISSING or value is None else f"{path}: expected absent, got {value!r}"
    return f"{path}: assertion has no equals, contains or absent"


def _contains(value: Any, wanted: Any) -> bool:
    if isinstance(value, str):
        return isinstance(wanted, str) and wanted in value
    if isinstance(value, list):
        return any(item == wanted or _contains(item, wanted) for item in value)
    return False

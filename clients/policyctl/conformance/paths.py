"""The path language of the conformance cases' assertions: dot-separated keys, ``[key=value]``
picks the single list element whose ``key`` equals ``value``, ``[N]`` indexes a list."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


MISSING = _Missing()
_STEP = re.compile(r"([^.\[\]]+)|\[([^\]]*)\]")  # a key or a [selector]; the dots between are skipped


def resolve(root: Any, path: str) -> Any:
    """The value at ``path``, or MISSING when any step finds nothing. Raises ValueError for a
    ``[key=value]`` step that matches more than one element."""
    value = root
    for key, selector in _STEP.findall(path):
        if value is MISSING:
            return MISSING
        if key:
            value = value.get(key, MISSING) if isinstance(value, Mapping) else MISSING
        elif selector:
            value = _select(value, selector, path)
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

"""Reading and setting variables in a container's ``env`` list."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

EnvList = list[dict[str, Any]]


def has_env(env: Sequence[Mapping[str, Any]], name: str) -> bool:
    return any(item.get("name") == name for item in env)


def set_env(env: Sequence[Mapping[str, Any]], name: str, value: str) -> EnvList:
    """``env`` with ``name`` set to ``value``: in the place of an existing entry (any duplicate
    dropped), else at the end."""
    entry = {"name": name, "value": value}
    out: EnvList = []
    placed = False
    for item in env:
        if item.get("name") != name:
            out.append(dict(item))
        elif not placed:
            out.append(entry)
            placed = True
    if not placed:
        out.append(entry)
    return out


def remove_env(env: Sequence[Mapping[str, Any]], name: str) -> EnvList:
    return [dict(item) for item in env if item.get("name") != name]

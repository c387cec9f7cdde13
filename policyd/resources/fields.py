"""Typed reads from a manifest dict, each failure naming the field path."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from policyd.errors import InvalidInput

Doc = Mapping[str, Any]


def type_name(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), type(value).__name__
    )


def obj(doc: Doc, key: str, path: str, required: bool = False) -> Doc | None:
    value = doc.get(key)
    if value is None:
        if required:
            raise InvalidInput(path, "is required")
        return None
    # a manifest's objects are dicts: the Mapping check (an ABC's, many times slower) is for the rest
    if type(value) is not dict and not isinstance(value, Mapping):
        raise InvalidInput(path, f"must be an object, got {type_name(value)}")
    return value


def string(doc: Doc, key: str, path: str, required: bool = False) -> str:
    value = doc.get(key)
    if type(value) is str and value:
        return value
    if value is None or value == "":
        if required:
            raise InvalidInput(path, "is required")
        return ""
    if isinstance(value, int | float) and not isinstance(value, bool):
        # YAML reads 4.40 as the number 4.4 and 42 as a number: refuse rather than compare the wrong text
        raise InvalidInput(path, f"must be a string, got the number {value!r} (quote it)")
    if not isinstance(value, str):
        raise InvalidInput(path, f"must be a string, got {type_name(value)}")
    return value


def boolean(doc: Doc, key: str, path: str, default: bool) -> bool:
    value = doc.get(key)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise InvalidInput(path, f"must be true or false, got {value!r}")
    return value


def integer(doc: Doc, key: str, path: str) -> int | None:
    value = doc.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or int(value) != value:
        raise InvalidInput(path, f"must be an integer, got {value!r}")
    return int(value)


def items(doc: Doc, key: str, path: str) -> list[Any]:
    value = doc.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise InvalidInput(path, f"must be a list, got {type_name(value)}")
    return value


def strings(doc: Doc, key: str, path: str) -> tuple[str, ...]:
    """A list of strings, each checked as ``string`` checks one."""
    values = items(doc, key, path)
    return tuple(string({"item": v}, "item", f"{path}[{i}]", required=True) for i, v in enumerate(values))


def string_map(doc: Doc, key: str, path: str) -> dict[str, str]:
    value = obj(doc, key, path)
    if value is None:
        return {}
    out: dict[str, str] = {}
    for k, v in value.items():
        if v is None:
            continue
        if isinstance(v, dict | list):
            raise InvalidInput(f"{path}[{k}]", f"must be a string, got {type_name(v)}")
        out[str(k)] = v if isinstance(v, str) else str(v).lower() if isinstance(v, bool) else str(v)
    return out


def one_of(value: str, allowed: tuple[str, ...], path: str, what: str) -> str:
    if value not in allowed:
        raise InvalidInput(path, f"unknown {what} {value!r} (one of {', '.join(allowed)})")
    return value

"""The common YAML document read straight from libyaml's events: plain maps, lists and scalars,
no anchors, aliases, tags or merge keys. PyYAML's loader makes a node of every value, resolves
and constructs it in Python, and safe_yaml then walks the result again: for a manifest of a few
MiB that was seconds; from the events it is a fifth of that. Anything else — and any value safe_yaml
would refuse or convert (a key that is no string, an integer past 64 bits or of many digits, a
number JSON cannot carry, nesting past the limit) — answers None, and the text takes safe_yaml's
path, which names what is wrong."""

from __future__ import annotations

import math
from typing import Any

import yaml

_BOOL, _NULL, _INT, _FLOAT, _STR = (f"tag:yaml.org,2002:{t}" for t in ("bool", "null", "int", "float", "str"))
_PLAIN = (True, False)


class _Unusual(Exception):
    """What this reader leaves to the full loader."""


def documents(
    text: str, loader: type[yaml.SafeLoader], max_depth: int, max_int_digits: int, int_range: tuple[int, int]
) -> list[Any] | None:
    """The text's non-empty documents as safe_yaml's loader would give them, or None."""
    parser = loader(text)
    resolver = loader("")
    constructor = yaml.constructor.SafeConstructor()
    resolved: dict[str, Any] = {}  # a document repeats its plain scalars (names, versions, true)

    def plain(value: str) -> Any:
        if value in resolved:
            return resolved[value]
        tag = resolver.resolve(yaml.ScalarNode, value, _PLAIN)  # type: ignore[no-untyped-call]
        if tag == _STR:
            out: Any = value
        elif tag == _NULL:
            out = None
        elif tag == _BOOL:
            out = constructor.construct_yaml_bool(yaml.ScalarNode(tag, value))
        elif tag == _INT:
            if len(value.replace("_", "")) > max_int_digits:
                raise _Unusual
            out = constructor.construct_yaml_int(yaml.ScalarNode(tag, value))
            if not int_range[0] <= out <= int_range[1]:
                raise _Unusual
        elif tag == _FLOAT:
            out = constructor.construct_yaml_float(yaml.ScalarNode(tag, value))
            if not math.isfinite(out):
                raise _Unusual
        else:
            raise _Unusual  # a timestamp (text to safe_yaml), yaml.org's value or merge tags
        resolved[value] = out
        return out

    docs: list[Any] = []
    # each open container, and for a map the key waiting for its value
    stack: list[tuple[Any, Any]] = []
    try:
        while (event := parser.get_event()) is not None:  # type: ignore[no-untyped-call]
            kind = type(event)
            if kind is yaml.ScalarEvent:
                if event.anchor is not None or event.tag not in (None, "!"):
                    raise _Unusual
                value = plain(event.value) if event.implicit[0] else event.value  # (quoted: text)
            elif kind is yaml.MappingStartEvent or kind is yaml.SequenceStartEvent:
                if event.anchor is not None or event.tag not in (None, "!"):
                    raise _Unusual
                if len(stack) >= max_depth:
                    raise _Unusual
                stack.append(({} if kind is yaml.MappingStartEvent else [], _NO_KEY))
                continue
            elif kind is yaml.MappingEndEvent or kind is yaml.SequenceEndEvent:
                value = stack.pop()[0]
            elif kind is yaml.AliasEvent:
                raise _Unusual
            else:  # stream and document starts and ends
                if kind is yaml.StreamEndEvent:
                    break
                continue
            if not stack:
                if value is not None:
                    docs.append(value)
                continue
            container, key = stack[-1]
            if isinstance(container, list):
                container.append(value)
            elif key is _NO_KEY:
                if not isinstance(value, str):
                    raise _Unusual  # safe_yaml converts or refuses such keys, naming them
                stack[-1] = (container, value)
            else:
                container[key] = value
                stack[-1] = (container, _NO_KEY)
    except (_Unusual, yaml.YAMLError, ValueError, OverflowError):
        return None
    finally:
        parser.dispose()
    return docs


class _NoKey:
    pass


_NO_KEY = _NoKey()

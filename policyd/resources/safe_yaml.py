"""YAML and JSON text parsed with limits, into the values a Kubernetes manifest can hold.

A manifest is JSON once the API server has it (kubectl converts YAML with sigs.k8s.io/yaml),
so what policyd takes from YAML is what JSON can carry: objects with string keys, lists,
strings, booleans, null, integers of 64 bits and finite numbers. Dates stay the text they
were written as, integer and boolean keys become strings, as they do on the way to JSON;
NaN, infinities, binary data, sets and integers beyond 64 bits are refused, naming the field.

Limits, each refused before the work it would cause: the text's size, nesting depth
(libyaml stops at 1,000 levels; a manifest is refused past ``MAX_DEPTH``), and aliases —
an alias whose node contains it, or aliases that expand a document by more than
``MAX_ALIAS_EXPANSION`` values (a "billion laughs" document is a few hundred bytes).
"""

from __future__ import annotations

import json
import math
from typing import Any

import yaml

from policyd.errors import InvalidInput
from policyd.resources import yaml_events

MAX_DEPTH = 100
MAX_ALIAS_EXPANSION = 100_000
INT64 = (-(2**63), 2**63 - 1)
# digits past which a YAML integer is refused before it is converted (int() of a huge text is slow)
_MAX_INT_TEXT = 40
_TIMESTAMP = "tag:yaml.org,2002:timestamp"
BASE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when the platform has it


class _Loader(BASE_LOADER):  # type: ignore[misc,valid-type]
    """The safe loader, less what JSON cannot carry."""


# Dates are text, as sigs.k8s.io/yaml leaves them: the resolver no longer turns 2024-01-01 into a date.
_Loader.yaml_implicit_resolvers = {
    first: [(tag, pattern) for tag, pattern in resolvers if tag != _TIMESTAMP]
    for first, resolvers in BASE_LOADER.yaml_implicit_resolvers.items()
}


def _int(loader: yaml.constructor.SafeConstructor, node: yaml.ScalarNode) -> int:
    text = str(node.value)
    if len(text.replace("_", "")) > _MAX_INT_TEXT:
        raise _Refused(f"integer {text[:20]}… has more than {_MAX_INT_TEXT} digits", node)
    value: int = yaml.constructor.SafeConstructor.construct_yaml_int(loader, node)
    return value


def _unsupported(what: str) -> Any:
    def refuse(loader: yaml.constructor.SafeConstructor, node: yaml.Node) -> Any:
        raise _Refused(f"{what} is not a value JSON can carry", node)

    return refuse


_Loader.add_constructor("tag:yaml.org,2002:int", _int)
_Loader.add_constructor(_TIMESTAMP, lambda loader, node: str(node.value))
_NOT_JSON = (("binary", "binary data (!!binary)"), ("set", "a set (!!set)"), ("omap", "!!omap"), ("pairs", "!!pairs"))
for _tag, _what in _NOT_JSON:
    _Loader.add_constructor(f"tag:yaml.org,2002:{_tag}", _unsupported(_what))


class _Refused(Exception):
    def __init__(self, message: str, node: yaml.Node) -> None:
        super().__init__(message)
        self.message = message
        self.line = node.start_mark.line + 1


class YamlRefused(InvalidInput):
    """Text that is not YAML, or holds what JSON cannot carry; ``line`` and ``column`` are 1-based,
    0 when unknown; ``problem`` is the message without the position, for a caller that puts the
    position beside the file's name (``FILE:5:2: …``)."""

    def __init__(self, field: str, message: str, line: int, column: int = 0, problem: str = "") -> None:
        super().__init__(field, message)
        self.line = line
        self.column = column
        self.problem = problem or message


def _at(line: int, column: int) -> str:
    return f"line {line}, column {column}"


def _not_yaml(err: yaml.YAMLError, text: str, source: str) -> YamlRefused:
    """PyYAML's error on one line, positions as lines and columns of the text: its own words span
    several lines and name the text ``"<unicode string>"``, not the file."""
    mark = getattr(err, "problem_mark", None)
    line, column = (mark.line + 1, mark.column + 1) if mark is not None else (0, 0)
    problem = getattr(err, "problem", None) or str(err).split("\n", 1)[0]
    if isinstance(err, yaml.reader.ReaderError):  # a character the reader refuses: a position in the text
        line = text.count("\n", 0, err.position) + 1
        column = err.position - text.rfind("\n", 0, err.position)
    context, context_mark = getattr(err, "context", None), getattr(err, "context_mark", None)
    within = ""
    if context and context_mark is not None:
        within = f" ({context} at {_at(context_mark.line + 1, context_mark.column + 1)})"
    elif context:
        within = f" ({context})"
    where = f" at {_at(line, column)}" if line else ""
    message = f"not valid YAML: {problem}{where}{within}"
    return YamlRefused(source, message, line, column, f"not valid YAML: {problem}{within}")


def load_all(text: str, source: str = "input", max_bytes: int = 0, values: str | None = None) -> list[Any]:
    """Every non-empty document of a (multi-document) YAML or JSON text, checked;
    InvalidInput naming ``source`` otherwise — for a refused value, its field under ``values``
    (the object the text is, when it has a name of its own), else under ``source``."""
    if max_bytes and len(text) > max_bytes:
        # characters count at least one byte each: a text this long is too large whatever it holds
        raise InvalidInput(source, f"is {len(text):,} characters, more than the limit of {max_bytes:,} bytes")
    if max_bytes and len(text.encode()) > max_bytes:
        raise InvalidInput(source, f"is {len(text.encode()):,} bytes, more than the limit of {max_bytes:,}")
    read = _json_documents(text)
    if read is not None and read[1]:
        return read[0]
    if read is None and (plain := yaml_events.documents(text, _Loader, MAX_DEPTH, _MAX_INT_TEXT, INT64)) is not None:
        return plain  # the common document, read from libyaml's events (yaml_events.py)
    try:
        docs = read[0] if read is not None else [d for d in yaml.load_all(text, Loader=_Loader) if d is not None]
    except _Refused as err:
        raise YamlRefused(source, f"line {err.line}: {err.message}", err.line, problem=err.message) from None
    except yaml.YAMLError as err:
        raise _not_yaml(err, text, source) from None
    except (ValueError, OverflowError) as err:  # a scalar the constructor cannot convert (1:2:3e99, ...)
        raise YamlRefused(source, f"not valid YAML: {err}", 0) from None
    for i, doc in enumerate(docs):
        try:
            docs[i] = json_value(doc)
        except InvalidInput as err:
            where = source if values is None else values  # a value's field: under the text's, or the object's
            raise err.under(f"{where}[{i}]" if len(docs) > 1 else where) from None
    return docs


def _no_constant(name: str) -> Any:
    raise ValueError(name)


class _Unchecked(Exception):
    """A JSON number that json_value must refuse, naming its field."""


def _json_int(text: str) -> int:
    value = int(text)
    if not INT64[0] <= value <= INT64[1]:
        raise _Unchecked
    return value


def _json_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e999
        raise _Unchecked
    return value


# made once: json.loads with hooks builds a decoder on every call, a tenth of a request's parse
_CHECKED = json.JSONDecoder(parse_constant=_no_constant, parse_int=_json_int, parse_float=_json_float)
_UNCHECKED = json.JSONDecoder(parse_constant=_no_constant)


def _json_documents(text: str) -> tuple[list[Any], bool] | None:
    """A text that is one JSON object, read as JSON: what clients and the controller send, which
    YAML reads alike but several times slower; and whether it was checked as it was read, so
    json_value need not walk it: its keys are strings, it has no aliases, the parser's hooks
    check its numbers, and at most ``MAX_DEPTH`` brackets cannot nest too deep (the common
    request, at a tenth of the cost). A number the hooks refuse is read again unchecked, for
    json_value to name its field. None to read the text as YAML, which also says what is wrong
    with a text that is not JSON (NaN and Infinity included: YAML reads them as text)."""
    if not text.lstrip().startswith("{"):
        return None
    try:
        if text.count("{") + text.count("[") <= MAX_DEPTH:
            try:
                return [_CHECKED.decode(text)], True
            except _Unchecked:
                pass
        return [_UNCHECKED.decode(text)], False
    except (ValueError, RecursionError):
        return None


def load_one(text: str, source: str = "input", max_bytes: int = 0) -> Any:
    """The one document of a YAML or JSON text (None for an empty text)."""
    docs = load_all(text, source, max_bytes)
    if len(docs) > 1:
        raise InvalidInput(source, f"must hold one document, found {len(docs)}")
    return docs[0] if docs else None


def _key(key: Any, path: str) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, int):
        return str(key)
    raise InvalidInput(path, f"a key must be a string, got {type(key).__name__} {key!r}"[:200])


def _child(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def json_value(value: Any, path: str = "") -> Any:
    """``value`` as JSON can carry it (see the module), or InvalidInput naming the field. Shared
    containers (YAML aliases) are checked once and their expansion counted; walked without recursion."""
    sizes: dict[int, int] = {}  # containers done: how many values each holds, itself included
    open_ids: set[int] = set()
    expanded = 0
    root = [value]
    # (parent, key, path, depth, children done): visited post-order, so a container's size is known when it closes
    todo: list[tuple[Any, Any, str, int, bool]] = [(root, 0, path, 0, False)]
    while todo:
        parent, key, where, depth, done = todo.pop()
        item = parent[key]
        if not isinstance(item, dict | list):
            parent[key] = _scalar(item, where)
            continue
        ident = id(item)
        if done:
            open_ids.discard(ident)
            children = item.values() if isinstance(item, dict) else item
            sizes[ident] = 1 + sum(sizes.get(id(c), 1) for c in children)
            continue
        if ident in open_ids:
            raise InvalidInput(where, "an alias refers to a node that contains it")
        if ident in sizes:
            expanded += sizes[ident]
            if expanded > MAX_ALIAS_EXPANSION:
                raise InvalidInput(where, f"aliases expand the document by more than {MAX_ALIAS_EXPANSION:,} values")
            continue
        if depth >= MAX_DEPTH:
            raise InvalidInput(where, f"nested more than {MAX_DEPTH} levels deep")
        open_ids.add(ident)
        todo.append((parent, key, where, depth, True))
        if isinstance(item, dict):
            if not all(isinstance(k, str) for k in item):
                converted = {_key(k, _child(where, str(k))): v for k, v in item.items()}
                if len(converted) != len(item):
                    raise InvalidInput(where, "two keys are the same once written as strings")
                item.clear()
                item.update(converted)
            todo.extend((item, k, _child(where, k), depth + 1, False) for k in reversed(list(item)))
        else:
            todo.extend((item, i, _child(where, i), depth + 1, False) for i in reversed(range(len(item))))
    return root[0]


def _scalar(value: Any, path: str) -> Any:
    if value is None or isinstance(value, str | bool):
        return value
    if isinstance(value, int):
        if not INT64[0] <= value <= INT64[1]:
            raise InvalidInput(path, "integer out of range: more than 64 bits")
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidInput(path, f"{value!r} is not a number JSON can carry")
        return value
    raise InvalidInput(path, f"{type(value).__name__} is not a value JSON can carry")

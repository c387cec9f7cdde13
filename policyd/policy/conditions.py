"""Rule conditions: validate them against the fact fields and compile them to
durable-rules' data form. Only comparisons of fact fields with literal values
or with other fact fields exist: a condition cannot run code."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from policyd.facts.fields import BOOL, FIELDS, INT, LIST, STR

_COMPARE = {"ne": "$neq", "lt": "$lt", "lte": "$lte", "gt": "$gt", "gte": "$gte"}
_ORDERED = ("lt", "lte", "gt", "gte")
_PY_TYPES = {STR: str, BOOL: bool, INT: int}


class ConditionError(ValueError):
    pass


def _literal(field: str, value: Any, used: set[str]) -> Any:
    ftype = FIELDS[field].type
    expected = _PY_TYPES.get(ftype)
    if isinstance(value, Mapping):
        ref = value.get("fact")
        if set(value) != {"fact"} or ref not in FIELDS:
            raise ConditionError(f"{field}: a value must be a literal or {{fact: <known field>}}, got {value!r}")
        if FIELDS[ref].type != ftype:
            raise ConditionError(f"{field}: compared with {ref} of another type")
        used.add(ref)
        return {"$m": ref}
    if expected is None or type(value) is not expected:
        raise ConditionError(f"{field}: expected a {ftype} value, got {value!r}")
    return value


def _field_condition(field: str, spec: Any, used: set[str]) -> dict[str, Any]:
    if field not in FIELDS:
        raise ConditionError(f"unknown fact field {field!r}")
    used.add(field)
    ftype = FIELDS[field].type
    if isinstance(spec, Mapping) and "fact" not in spec:
        if len(spec) != 1:
            raise ConditionError(f"{field}: takes exactly one operator, got {sorted(spec)!r}")
        op, value = next(iter(spec.items()))
    else:
        op, value = "eq", spec
    if ftype == LIST:
        if op not in ("contains", "not_contains") or not isinstance(value, str) or not value:
            raise ConditionError(f"{field}: a list field takes contains / not_contains with a non-empty string")
        # The engine sends every list with an extra "" item, so not_contains holds for an empty list.
        if op == "contains":
            return {"$iany": {field: {"$i": value}}}
        return {"$iall": {field: {"$neq": {"$i": value}}}}
    if op in ("in", "not_in"):
        if not isinstance(value, list) or not value:
            raise ConditionError(f"{field}: {op} takes a non-empty list")
        each = [_literal(field, v, used) for v in value]
        if op == "in":
            return {"$or": [{field: v} for v in each]}
        return {"$and": [{"$neq": {field: v}} for v in each]}
    if op == "eq":
        return {field: _literal(field, value, used)}
    if op not in _COMPARE:
        raise ConditionError(f"{field}: unknown operator {op!r}")
    if op in _ORDERED and ftype != INT:
        raise ConditionError(f"{field}: {op} needs an integer field")
    return {_COMPARE[op]: {field: _literal(field, value, used)}}


def compile_condition(when: Mapping[str, Any]) -> tuple[dict[str, Any], frozenset[str]]:
    """The durable-rules condition for ``when`` and the fact fields it tests."""
    used: set[str] = set()

    def build(node: Mapping[str, Any]) -> dict[str, Any]:
        if not isinstance(node, Mapping) or not node:
            raise ConditionError(f"a condition must be a non-empty mapping, got {node!r}")
        terms = []
        for key, spec in node.items():
            if key in ("all", "any"):
                if not isinstance(spec, list) or not spec:
                    raise ConditionError(f"{key} takes a non-empty list of conditions")
                parts = [build(part) for part in spec]
                terms.append(parts[0] if len(parts) == 1 else {"$and" if key == "all" else "$or": parts})
            else:
                terms.append(_field_condition(str(key), spec, used))
        return terms[0] if len(terms) == 1 else {"$and": terms}

    return build(when), frozenset(used)


_OPPOSITE = {
    "eq": "ne",
    "ne": "eq",
    "lt": "gte",
    "gte": "lt",
    "lte": "gt",
    "gt": "lte",
    "in": "not_in",
    "not_in": "in",
    "contains": "not_contains",
    "not_contains": "contains",
}


def negate(when: Mapping[str, Any]) -> dict[str, Any]:
    """The condition that holds exactly when ``when`` does not, in the same data form
    (De Morgan over all/any, each comparison turned into its opposite)."""
    terms: list[dict[str, Any]] = []
    for key, spec in when.items():
        if key == "all":
            terms.append({"any": [negate(part) for part in spec]})
        elif key == "any":
            terms.append({"all": [negate(part) for part in spec]})
        elif isinstance(spec, Mapping) and "fact" not in spec and len(spec) == 1:
            op, value = next(iter(spec.items()))
            if op not in _OPPOSITE:
                raise ConditionError(f"{key}: unknown operator {op!r}")
            terms.append({key: {_OPPOSITE[op]: value}})
        else:
            terms.append({key: {"ne": spec}})
    return terms[0] if len(terms) == 1 else {"any": terms}

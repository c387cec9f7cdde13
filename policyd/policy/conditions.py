"""Rule conditions: validate them against the fact fields and compile them to
durable-rules' data form. Only comparisons of fact fields with literal values
or with other fact fields exist: a condition cannot run code."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from policyd.facts.fields import FIELDS
from policyd.records import BOOL, INT, LIST, STR, Field

Fields = Mapping[str, Field]  # the fact catalogue a policy is compiled against (facts/fields.py)

_COMPARE = {"ne": "$neq", "lt": "$lt", "lte": "$lte", "gt": "$gt", "gte": "$gte"}
_ORDERED = ("lt", "lte", "gt", "gte")
_PY_TYPES = {STR: str, BOOL: bool, INT: int}


class ConditionError(ValueError):
    pass


def _literal(field: str, value: Any, used: set[str], fields: Fields) -> Any:
    ftype = fields[field].type
    expected = _PY_TYPES.get(ftype)
    if isinstance(value, Mapping):
        ref = value.get("fact")
        if set(value) != {"fact"} or not isinstance(ref, str) or ref not in fields:
            raise ConditionError(f"{field}: a value must be a literal or {{fact: <known field>}}, got {value!r}")
        if fields[ref].type != ftype:
            raise ConditionError(f"{field}: compared with {ref} of another type")
        used.add(ref)
        return {"$m": ref}
    if expected is None or type(value) is not expected:
        raise ConditionError(f"{field}: expected a {ftype} value, got {value!r}")
    return value


def _field_condition(field: str, spec: Any, used: set[str], fields: Fields) -> dict[str, Any]:
    if field not in fields:
        raise ConditionError(f"unknown fact field {field!r}")
    used.add(field)
    ftype = fields[field].type
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
        each = [_literal(field, v, used, fields) for v in value]
        if op == "in":
            return {"$or": [{field: v} for v in each]}
        return {"$and": [{"$neq": {field: v}} for v in each]}
    if op == "eq":
        return {field: _literal(field, value, used, fields)}
    if op not in _COMPARE:
        raise ConditionError(f"{field}: unknown operator {op!r}")
    if op in _ORDERED and ftype != INT:
        raise ConditionError(f"{field}: {op} needs an integer field")
    return {_COMPARE[op]: {field: _literal(field, value, used, fields)}}


def compile_condition(when: Mapping[str, Any], fields: Fields = FIELDS) -> tuple[dict[str, Any], frozenset[str]]:
    """The durable-rules condition for ``when`` and the fact fields (of ``fields``) it tests."""
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
                terms.append(_field_condition(str(key), spec, used, fields))
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


# -- partial evaluation: what a record must satisfy for a rule not to fire ----------------------


@dataclass(frozen=True)
class Constraint:
    """A test on one field that fires the rule; ``outside`` is a finite superset of the values
    on which it does *not* fire, or None when that set is infinite."""

    field: str
    fires: Callable[[Any], bool]
    outside: frozenset[Any] | None


class _Unknown:
    """A residual this analysis cannot reduce to one field (it is simply not used)."""


_TRUE, _FALSE, _UNKNOWN = True, False, _Unknown()
_MIRROR = {"$lt": "$gt", "$lte": "$gte", "$gt": "$lt", "$gte": "$lte", "$neq": "$neq"}
_TESTS: dict[str, Callable[[Any, Any], bool]] = {
    "$eq": lambda a, b: a == b,
    "$neq": lambda a, b: a != b,
    "$lt": lambda a, b: a < b,
    "$lte": lambda a, b: a <= b,
    "$gt": lambda a, b: a > b,
    "$gte": lambda a, b: a >= b,
}
Residual = bool | _Unknown | Constraint | tuple[Constraint, ...]  # a tuple: any of them fires it


def _atom(op: str, field: str, value: Any, bound: Mapping[str, Any], fields: Fields) -> Residual:
    if isinstance(value, Mapping) and "$m" in value:
        other = value["$m"]
        if other in bound and field in bound:
            return _TESTS[op](bound[field], bound[other])
        if other in bound:
            value = bound[other]
        elif field in bound:
            field, value, op = other, bound[field], _MIRROR.get(op, op)
        else:
            return _UNKNOWN
    elif field in bound:
        return _TESTS[op](bound[field], value)
    if fields[field].type == LIST:
        return _UNKNOWN
    test, literal = _TESTS[op], value
    outside = frozenset({value}) if op == "$neq" else frozenset({True, False}) if fields[field].type == BOOL else None

    def fires(v: Any) -> bool:
        return test(v, literal)

    return Constraint(field, fires, outside)


def _list_atom(op: str, body: Mapping[str, Any], bound: Mapping[str, Any]) -> Residual:
    ((field, test),) = body.items()
    if field not in bound:
        return _UNKNOWN
    if op == "$iany":
        return test["$i"] in bound[field]
    return test["$neq"]["$i"] not in bound[field]


def _all(parts: list[Residual]) -> Residual:
    if any(p is _FALSE for p in parts):
        return _FALSE
    rest = [p for p in parts if p is not _TRUE]
    if not rest:
        return _TRUE
    cs = [p for p in rest if isinstance(p, Constraint)]
    if len(cs) < len(rest) or len({c.field for c in cs}) != 1:
        return _UNKNOWN
    outside: frozenset[Any] | None = frozenset()
    for c in cs:
        outside = None if outside is None or c.outside is None else outside | c.outside

    def fires(v: Any) -> bool:
        return all(c.fires(v) for c in cs)

    return Constraint(cs[0].field, fires, outside)


def _any(parts: list[Residual]) -> Residual:
    if any(p is _TRUE for p in parts):
        return _TRUE
    rest = [p for p in parts if p is not _FALSE]
    if not rest:
        return _FALSE
    found: list[Constraint] = []
    for p in rest:
        if isinstance(p, Constraint):
            found.append(p)
        elif isinstance(p, tuple):
            found.extend(p)
    # an unknown alternative only widens when the rule fires: the others' constraints still hold
    return tuple(found) if found else _UNKNOWN


def _residual(node: Mapping[str, Any], bound: Mapping[str, Any], fields: Fields) -> Residual:
    ((key, body),) = node.items()
    if key == "$and":
        return _all([_residual(n, bound, fields) for n in body])
    if key == "$or":
        return _any([_residual(n, bound, fields) for n in body])
    if key in ("$iany", "$iall"):
        return _list_atom(key, body, bound)
    if key in _TESTS:
        ((field, value),) = body.items()
        return _atom(key, field, value, bound, fields)
    return _atom("$eq", key, body, bound, fields)


def pass_constraints(
    condition: Mapping[str, Any], bound: Mapping[str, Any], fields: Fields = FIELDS
) -> tuple[Constraint, ...] | None:
    """With the ``bound`` fields' values known, tests on single fields that a record on which
    the compiled ``condition`` does not fire must pass (each constraint must not fire); None
    when the condition fires whatever the other fields are. Sound, not complete: what cannot be
    reduced to one field is left out."""
    residual = _residual(condition, bound, fields)
    if residual is _TRUE:
        return None
    if isinstance(residual, Constraint):
        return (residual,)
    if isinstance(residual, tuple):
        return residual
    return ()

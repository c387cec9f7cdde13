"""Judge each shape of runtime once per kind of request.

What a runtime's verdict says — its checks, reasons, score, matched entry, advisories — is a
function of the facts its rules test and its reasons print. Facts that depend on the request
read only the runtime's manifest without its metadata (its ``shape``, see derive.py), so two
runtimes with one shape and equal values of the metadata facts that matter get the same
verdict. Which facts matter is read from the compiled rules: the fields runtime and entry rules
test, and those their reasons print. On the request's side, the same goes for the facts those
rules test or print, the model, and the InferenceService but for its name and namespace (which
count only as those facts).

Verdicts are kept per request key for the life of the rules revision, the least recently used
request keys going first past a bound. A kept verdict holds what answers read of it (its
reasons, worked out, and its checks' effects and kinds), not the fact records it was judged
from, which take most of a verdict's memory. A request that would fill more than a quarter of
the bound at once is judged and not kept: keeping it would only push out what others reuse,
and making a verdict keepable costs about as much again as judging it.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import replace
from operator import attrgetter
from typing import Any, cast

from policyd.facts.derive import Record, Subject, intrinsic_facts
from policyd.facts.fields import ENTRY, FIELDS, MODEL, REQUEST, RUNTIME
from policyd.policy.model import Policy
from policyd.policy.templates import placeholders
from policyd.resources.objects import ServingRuntime

from .verdicts import RuntimeVerdict

KEPT_VERDICTS = 60_000  # across request keys: about 1.5 kB each
Judge = Callable[[Sequence[ServingRuntime]], list[RuntimeVerdict]]
Key = tuple[Any, ...]


class Shared:
    """What a transport made of a shared verdict (its encoded form), made once."""

    __slots__ = ("wire",)

    def __init__(self) -> None:
        self.wire: Any = None


def fields_that_matter(policy: Policy) -> frozenset[str]:
    """The fields runtime and entry rules test, and those their verdicts' reasons print."""
    found: set[str] = set()
    for rule in policy.rules:
        if rule.applies_to in (RUNTIME, ENTRY):
            found |= rule.fields
            for template in (rule.reason, rule.component, rule.model_value, rule.runtime_value):
                found.update(placeholders(template))
    for group in policy.groups:
        if group.applies_to in (RUNTIME, ENTRY):
            found.update(placeholders(group.component))
            if group.entries is not None:
                found.update(placeholders(group.entries.reason))
                found.update(placeholders(group.entries.empty))
    return frozenset(f for f in found if f in FIELDS)


_digest = attrgetter("digest")


def _plain(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def _kept(verdict: RuntimeVerdict) -> RuntimeVerdict:
    """The verdict without its fact records: its reasons worked out, its checks kept for their
    order, effect and kind (a shared verdict is never asked for a named runtime's refusal)."""
    reason, compat = verdict.reason, verdict.compat_reason
    checks = tuple(replace(c, record={}, entries=()) for c in verdict.checks)
    kept = replace(verdict, record={}, checks=checks, shared=Shared())
    kept.__dict__.update(reason=reason, compat_reason=compat)  # the cached properties, as judged
    return kept


class SharedVerdicts:
    """The verdicts of one rules revision, by request key and runtime shape."""

    def __init__(self, policy: Policy, kept: int = KEPT_VERDICTS) -> None:
        matter = fields_that_matter(policy)
        self.request_fields = sorted(f for f in matter if FIELDS[f].scope in (REQUEST, MODEL))
        self.runtime_fields = sorted(f for f in matter if FIELDS[f].scope == RUNTIME and not FIELDS[f].relational)
        self._kept = kept
        self._by_request: OrderedDict[Key, dict[Key, RuntimeVerdict]] = OrderedDict()
        self._count = 0
        self._shapes: dict[str, Key] = {}
        self._lock = threading.Lock()

    def request_key(self, subject: Subject, base: Record, named: bool) -> Key:
        isvc = ""
        if subject.isvc is not None:
            raw = dict(subject.isvc.raw)
            meta = raw.get("metadata")
            if isinstance(meta, dict):  # its name and namespace count only as the facts that matter
                raw["metadata"] = {k: v for k, v in meta.items() if k not in ("name", "namespace")}
            text = json.dumps(raw, sort_keys=True, default=repr).encode()
            isvc = hashlib.sha256(text).hexdigest()
        model = subject.model.digest if subject.model else ""
        return (model, isvc, named, tuple(_plain(base[f]) for f in self.request_fields))

    def shape_key(self, runtime: ServingRuntime) -> Key:
        key = self._shapes.get(runtime.digest)
        if key is None:
            own = intrinsic_facts(runtime)
            key = (runtime.shape, tuple(_plain(own[f]) for f in self.runtime_fields))
            if len(self._shapes) >= 4 * self._kept:
                self._shapes.clear()
            self._shapes[runtime.digest] = key
        return key

    def verdicts(self, request: Key, runtimes: Sequence[ServingRuntime], judge: Judge) -> list[RuntimeVerdict]:
        """A verdict for each runtime, in order: one verdict for all the runtimes of a shape (so
        its ``runtime`` is one of them); ``judge`` judges the shapes not seen yet."""
        with self._lock:
            known = self._by_request.get(request)
            if known is not None:
                self._by_request.move_to_end(request)
        known = known or {}
        shapes = self._shapes
        found = list(map(shapes.get, map(_digest, runtimes)))
        if None in found:
            found = [k or self.shape_key(r) for k, r in zip(found, runtimes, strict=True)]
        keys = cast(list[Key], found)
        missing = set(keys).difference(known)
        if not missing:
            return list(map(known.__getitem__, keys))
        todo = {k: r for k, r in zip(keys, runtimes, strict=True) if k in missing}
        judged = judge(list(todo.values()))
        if len(todo) > self._kept // 4:
            fresh = dict(zip(todo, judged, strict=True))
        else:
            fresh = {k: _kept(v) for k, v in zip(todo, judged, strict=True)}
            self._keep(request, fresh)
        return [fresh.get(k) or known[k] for k in keys]

    def _keep(self, request: Key, fresh: dict[Key, RuntimeVerdict]) -> None:
        with self._lock:
            mine = self._by_request.setdefault(request, {})
            self._count += len(fresh.keys() - mine.keys())
            mine.update(fresh)
            self._by_request.move_to_end(request)
            while self._count > self._kept and len(self._by_request) > 1:
                _, gone = self._by_request.popitem(last=False)
                self._count -= len(gone)

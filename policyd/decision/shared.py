"""Judge each shape of runtime once per kind of request.

What a runtime's verdict says — its checks, reasons, score, matched entry, advisories — is a
function of the facts its rules test and its reasons print. Facts that depend on the request
read only the runtime's manifest without its metadata (its ``shape``, see derive.py), so two
runtimes with one shape and equal values of the metadata facts that matter get the same
verdict. Which facts matter is read from the compiled rules: the fields runtime and entry rules
test, and those their reasons print. On the request's side, the same goes for the facts those
rules test or print, the model, and the InferenceService but for its name and namespace (which count
only as those facts). Verdicts are memoised by both keys for the life of the rules revision.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Sequence
from typing import Any

from policyd.facts.derive import Record, Subject, intrinsic_facts
from policyd.facts.fields import ENTRY, FIELDS, MODEL, REQUEST, RUNTIME
from policyd.policy.model import Policy
from policyd.policy.templates import placeholders
from policyd.resources.objects import ServingRuntime

from .verdicts import RuntimeVerdict

_MEMO_LIMIT = 100_000
Judge = Callable[[Sequence[ServingRuntime]], list[RuntimeVerdict]]


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


def _plain(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


class SharedVerdicts:
    """The verdicts of one rules revision, by request key and runtime shape."""

    def __init__(self, policy: Policy) -> None:
        matter = fields_that_matter(policy)
        self.request_fields = sorted(f for f in matter if FIELDS[f].scope in (REQUEST, MODEL))
        self.runtime_fields = sorted(f for f in matter if FIELDS[f].scope == RUNTIME and not FIELDS[f].relational)
        self._memo: dict[tuple[Any, ...], RuntimeVerdict] = {}
        self._shapes: dict[str, tuple[Any, ...]] = {}
        self._lock = threading.Lock()

    def request_key(self, subject: Subject, base: Record, named: bool) -> tuple[Any, ...]:
        isvc = ""
        if subject.isvc is not None:
            raw = dict(subject.isvc.raw)
            meta = raw.get("metadata")
            if isinstance(meta, dict):  # its name and namespace count only as the facts that matter
                raw["metadata"] = {k: v for k, v in meta.items() if k not in ("name", "namespace")}
            text = json.dumps(raw, sort_keys=True, default=str).encode()
            isvc = hashlib.sha256(text).hexdigest()
        model = subject.model.digest if subject.model else ""
        return (model, isvc, named, tuple(_plain(base[f]) for f in self.request_fields))

    def shape_key(self, runtime: ServingRuntime) -> tuple[Any, ...]:
        key = self._shapes.get(runtime.digest)
        if key is None:
            own = intrinsic_facts(runtime)
            key = (runtime.shape, tuple(_plain(own[f]) for f in self.runtime_fields))
            if len(self._shapes) >= _MEMO_LIMIT:
                self._shapes.clear()
            self._shapes[runtime.digest] = key
        return key

    def verdicts(
        self, request: tuple[Any, ...], runtimes: Sequence[ServingRuntime], judge: Judge
    ) -> list[RuntimeVerdict]:
        """A verdict for each runtime, in order; ``judge`` judges the shapes not seen yet."""
        memo = self._memo
        keys = [(request, self.shape_key(r)) for r in runtimes]
        found: dict[tuple[Any, ...], RuntimeVerdict] = {}
        todo: dict[tuple[Any, ...], ServingRuntime] = {}
        for key, runtime in zip(keys, runtimes, strict=True):
            if key in found or key in todo:
                continue
            verdict = memo.get(key)
            if verdict is None:
                todo[key] = runtime
            else:
                found[key] = verdict
        if todo:
            judged = judge(list(todo.values()))
            for verdict in judged:
                object.__setattr__(verdict, "shared", Shared())
            fresh = dict(zip(todo, judged, strict=True))
            found.update(fresh)
            with self._lock:
                if len(memo) + len(fresh) > _MEMO_LIMIT:
                    memo.clear()
                memo.update(fresh)
        out = []
        for key, runtime in zip(keys, runtimes, strict=True):
            verdict = found[key]
            out.append(verdict if verdict.runtime is runtime else verdict.on(runtime))
        return out

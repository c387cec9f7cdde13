"""Evaluate fact records with durable-rules: one engine (Host) per policy revision.

Rules with a first-match effect share a ruleset per group (``compat`` for
exclude, ``select`` for reject/skip), ordered by ``order`` through durable's
priority, so an event is consumed by the first rule it matches — the first
reason in rule order. Each advise/score rule is a ruleset of its own, since
several may apply. Every ruleset ends in a catch-all so each event fires exactly
one action and a batch never raises MessageNotHandledException.

Verdicts are a pure function of the fields the rules test, so they are memoised
by those fields for the life of the revision.
"""

from __future__ import annotations

import itertools
import operator
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import durable.engine

from policyd.facts.fields import FIELDS, LIST
from policyd.policy.model import Rule

PASS = "__pass__"
_MEMO_LIMIT = 200_000
_ids = itertools.count()


@dataclass(frozen=True)
class RecordVerdict:
    compat: Rule | None  # first exclude rule matched
    select: Rule | None  # first reject/skip rule matched
    advisories: tuple[Rule, ...]
    points: int

    @property
    def first(self) -> Rule | None:
        """The first rule in order among the first-match verdicts."""
        hits = [r for r in (self.compat, self.select) if r is not None]
        return min(hits, key=lambda r: r.order) if hits else None


class _Host(durable.engine.Host):  # type: ignore[misc]
    def __init__(self, definitions: dict[str, Any], on_fire: Callable[[str, Mapping[str, Any]], None]) -> None:
        self._on_fire = on_fire
        super().__init__(definitions)

    def get_action(self, action_name: str) -> Callable[[Any], None]:
        def act(context: Any) -> None:
            self._on_fire(action_name, context.m)

        return act


class RuleEngine:
    def __init__(self, rules: Sequence[Rule]) -> None:
        # allow rules act through the conditions of the rules they override
        self.rules = tuple(r for r in rules if r.effect != "allow")
        self._by_id = {r.id: r for r in self.rules}
        self._fields = sorted(frozenset().union(*(r.fields for r in self.rules))) if self.rules else []
        self._lists = {f for f in self._fields if FIELDS[f].type == LIST}
        # a memo key is every tested field's value, read in one C call (lists made hashable)
        self._values = operator.itemgetter(*self._fields) if len(self._fields) > 1 else None
        self._list_at = [i for i, f in enumerate(self._fields) if f in self._lists]
        groups: dict[str, list[Rule]] = {}
        for rule in sorted(self.rules, key=lambda r: r.order):
            groups.setdefault(rule.group, []).append(rule)
        self._groups = list(groups)
        self._prefix = f"r{next(_ids)}"
        definitions = {
            f"{self._prefix}/{group}": {
                **{
                    rule.id: {"pri": rule.order, "all": [{"m": rule.condition}], "run": f"{group}|{rule.id}"}
                    for rule in members
                },
                PASS: {"pri": 2_000_000, "all": [{"m": {"$neq": {"_i": -1}}}], "run": f"{group}|{PASS}"},
            }
            for group, members in groups.items()
        }
        self._hits: dict[tuple[int, str], str] = {}  # the current batch's fired rules (one batch at a time)
        self._lock = threading.Lock()
        # durable-rules sessions are shared state: concurrent batches on one host were seen to
        # cross their results, so one batch runs at a time (memo hits need no engine at all).
        self._engine_lock = threading.Lock()
        self._memo: dict[tuple[Any, ...], RecordVerdict] = {}
        self._host = _Host(definitions, self._fired)

    def _fired(self, action: str, message: Mapping[str, Any]) -> None:
        group, rule_id = action.split("|", 1)
        self._hits[(message["_i"], group)] = rule_id

    def _key(self, record: Mapping[str, Any]) -> tuple[Any, ...]:
        if self._values is None:  # one field or none: itemgetter would not return a tuple
            return tuple(tuple(record[f]) if f in self._lists else record[f] for f in self._fields)
        values: tuple[Any, ...] = self._values(record)
        if not self._list_at:
            return values
        out = list(values)
        for i in self._list_at:
            out[i] = tuple(out[i])
        return tuple(out)

    def _event(self, index: int, record: Mapping[str, Any]) -> dict[str, Any]:
        event: dict[str, Any] = {"_i": index}
        for f in self._fields:
            event[f] = [*record[f], ""] if f in self._lists else record[f]
        return event

    def evaluate(self, records: Sequence[Mapping[str, Any]]) -> list[RecordVerdict]:
        """The verdict for each record, in order."""
        keys = [self._key(r) for r in records]
        todo: dict[tuple[Any, ...], int] = {}
        for i, key in enumerate(keys):
            if key not in self._memo and key not in todo:
                todo[key] = i
        if todo:
            with self._engine_lock:
                fresh = self._run([records[i] for i in todo.values()])
            with self._lock:
                if len(self._memo) > _MEMO_LIMIT:
                    self._memo.clear()
                self._memo.update(zip(todo, fresh, strict=True))
        return [self._memo[k] for k in keys]

    def warm_from(self, previous: RuleEngine) -> int:
        """Judge, off the request path, the fact records the previous revision has seen,
        so the first calls after a reload need not wait for the engine. Possible when
        this revision tests no field the previous one did not."""
        if not set(self._fields) <= set(previous._fields):
            return 0
        with previous._lock:
            keys = list(previous._memo)
        records = [
            {f: list(v) if f in previous._lists else v for f, v in zip(previous._fields, key, strict=True)}
            for key in keys
        ]
        self.evaluate(records)
        return len(records)

    def _run(self, records: Sequence[Mapping[str, Any]]) -> list[RecordVerdict]:
        """Judge records the memo has not seen; callers hold _engine_lock."""
        self._hits = {}
        events = [self._event(i, r) for i, r in enumerate(records)]
        for group in self._groups:
            self._host.post_batch(f"{self._prefix}/{group}", [dict(e) for e in events])
        hits = self._hits
        verdicts = []
        for i in range(len(records)):
            matched = [self._by_id[rid] for g in self._groups if (rid := hits.get((i, g), PASS)) != PASS]
            verdicts.append(
                RecordVerdict(
                    compat=next((r for r in matched if r.group == "compat"), None),
                    select=next((r for r in matched if r.group == "select"), None),
                    advisories=tuple(r for r in matched if r.effect == "advise"),
                    points=sum(r.points for r in matched if r.effect == "score"),
                )
            )
        return verdicts

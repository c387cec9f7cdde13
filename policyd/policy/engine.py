"""Evaluate fact records with durable-rules: one engine (Host) per policy revision.

Each scope (request, model, runtime, entry, component) is a ruleset holding that scope's
rules. Records are asserted as facts, so every rule whose condition holds fires; what a
group makes of its fired rules (the first, or all joined) is the decision's business. A
catch-all rule makes every fact handled; a batch's facts live in a session of their own,
deleted afterwards.

Which rules fire is a pure function of the fields the scope's rules test, so it is
memoised by those fields for the life of the revision.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

import durable.engine
import durable_rules_engine

from policyd.facts.fields import FIELDS, reader
from policyd.memo import Bounded
from policyd.policy.model import Rule
from policyd.records import LIST, SCOPES, Field

ANY = "__any__"
_MEMO_LIMIT = 200_000
_ids = itertools.count()
Fired = tuple[Rule, ...]  # in rule order


class _Host(durable.engine.Host):  # type: ignore[misc]
    def __init__(self, definitions: dict[str, Any], on_fire: Callable[[str, Mapping[str, Any]], None]) -> None:
        self._on_fire = on_fire
        super().__init__(definitions)

    def get_action(self, action_name: str) -> Callable[[Any], None]:
        def act(context: Any) -> None:
            self._on_fire(action_name, context.m)

        return act

    def _run(self) -> None:
        """No dispatch timers: facts are asserted synchronously, and durable's timer threads
        would otherwise poll every ruleset forever, one pair per revision."""


class _Scope:
    """The compiled rules of one scope and the memo of what fires for which facts."""

    def __init__(self, name: str, rules: Sequence[Rule], catalogue: Mapping[str, Field]) -> None:
        self.name = name
        self.rules = tuple(sorted(rules, key=lambda r: r.order))
        self.fields = sorted(frozenset().union(*(r.fields for r in self.rules))) if self.rules else []
        self.lists = {f for f in self.fields if catalogue[f].type == LIST}
        self.memo: Bounded[tuple[Any, ...], Fired] = Bounded(_MEMO_LIMIT)
        self.key = reader(self.fields, catalogue)

    def fact(self, index: int, record: Mapping[str, Any], sid: str) -> dict[str, Any]:
        fact: dict[str, Any] = {"_i": index, "sid": sid}
        for f in self.fields:
            # every list gets an extra "" item, so not_contains holds for an empty list
            fact[f] = [*record[f], ""] if f in self.lists else record[f]
        return fact


class RuleEngine:
    def __init__(self, rules: Sequence[Rule], catalogue: Mapping[str, Field] = FIELDS) -> None:
        """``catalogue``: the fact fields the rules were compiled against (a policy's ``fields``)."""
        # allow rules act through the conditions of the rules they override
        self.rules = tuple(r for r in rules if r.effect != "allow")
        self._by_id = {r.id: r for r in self.rules}
        self._scopes = {s: _Scope(s, [r for r in self.rules if r.applies_to == s], catalogue) for s in SCOPES}
        self._prefix = f"r{next(_ids)}"
        definitions = {
            f"{self._prefix}/{scope.name}": {
                **{rule.id: {"all": [{"m": rule.condition}], "run": rule.id} for rule in scope.rules},
                ANY: {"all": [{"m": {"$neq": {"_i": -1}}}], "run": ANY},
            }
            for scope in self._scopes.values()
            if scope.rules
        }
        self._hits: dict[int, list[str]] = {}  # the current batch's fired rules (one batch at a time)
        self._batches = itertools.count()
        self._lock = threading.Lock()
        # durable-rules sessions are shared state: concurrent batches on one host were seen to
        # cross their results, so one batch runs at a time (memo hits need no engine at all).
        self._engine_lock = threading.Lock()
        self._host = _Host(definitions, self._fired)
        self._closed = False

    def close(self) -> None:
        """Free this engine's rulesets, which durable-rules keeps until told (a reload's old
        revision would otherwise stay in memory for good). Memoised judgements still answer."""
        with self._engine_lock:
            if self._closed:
                return
            self._closed = True
            for ruleset in self._host._ruleset_directory.values():
                durable_rules_engine.delete_ruleset(ruleset._handle)
            self._host._ruleset_directory.clear()
            self._host._ruleset_list.clear()

    def _fired(self, action: str, message: Mapping[str, Any]) -> None:
        # a condition with alternatives ($or) may match one fact more than once
        if action != ANY and action not in (hits := self._hits.setdefault(message["_i"], [])):
            hits.append(action)

    def fields(self, scope: str) -> list[str]:
        """The fact fields the rules of ``scope`` test."""
        return list(self._scopes[scope].fields)

    def fire(self, scope: str, records: Sequence[Mapping[str, Any]]) -> list[Fired]:
        """The rules of ``scope`` each record fires, in rule order."""
        compiled = self._scopes[scope]
        if not compiled.rules:
            return [() for _ in records]
        keys = [compiled.key(r) for r in records]
        found = list(map(compiled.memo.get, keys))
        if None not in found:
            return cast(list[Fired], found)
        todo: dict[tuple[Any, ...], int] = {}
        for i, (key, hit) in enumerate(zip(keys, found, strict=True)):
            if hit is None and key not in todo:
                todo[key] = i
        with self._engine_lock:
            if self._closed:
                raise RuntimeError("this rules revision was closed after a reload")
            fresh = dict(zip(todo, self._run(compiled, [records[i] for i in todo.values()]), strict=True))
        with self._lock:
            compiled.memo.put_all(fresh)
        return [fresh[k] if hit is None else hit for k, hit in zip(keys, found, strict=True)]

    def warm_from(self, previous: RuleEngine, limit: int = 2_000) -> int:
        """Judge, off the request path, the fact combinations the previous revision has seen
        most recently (``limit`` per scope), so the first calls after a reload need not wait
        for the engine. Possible for each scope whose rules test no field the previous
        revision's did not."""
        warmed = 0
        for name, scope in self._scopes.items():
            old = previous._scopes[name]
            if not scope.rules or not set(scope.fields) <= set(old.fields):
                continue
            with previous._lock:
                keys = old.memo.newest(limit)
            records = [
                {f: list(v) if f in old.lists else v for f, v in zip(old.fields, key, strict=True)} for key in keys
            ]
            self.fire(name, records)
            warmed += len(records)
        return warmed

    def _run(self, scope: _Scope, records: Sequence[Mapping[str, Any]]) -> list[Fired]:
        """Judge records the memo has not seen; callers hold _engine_lock."""
        self._hits = {}
        ruleset = f"{self._prefix}/{scope.name}"
        sid = f"b{next(self._batches)}"
        try:
            self._host.assert_facts(ruleset, [scope.fact(i, r, sid) for i, r in enumerate(records)])
        finally:
            self._host.delete_state(ruleset, sid)
        hits = self._hits
        return [
            tuple(sorted((self._by_id[h] for h in hits.get(i, ())), key=lambda r: r.order)) for i in range(len(records))
        ]

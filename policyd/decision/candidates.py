"""The runtimes that can be selectable for a request, found through an index instead of by
judging every runtime in scope.

Everything here is derived from the compiled rules. A runtime is selectable only when no
runtime rule that can block it fires (one whose effect decides, or one in a runtime group),
and — when every deciding entry rule belongs to an entry group, so that a runtime none of whose
entries matches always fails a check — only when some entry fires no deciding rule. With the
request's own facts bound, each such rule's condition reduces to tests on single fields
(``pass_constraints``). A test on an intrinsic field (one that depends on the runtime or its
entry alone, see the fact catalogue) that passes finitely many values names index buckets; the
smallest gives the candidates, and each candidate is checked against every constraint.

Candidates are then judged by the plain path, so the index decides only what need not be
judged: a runtime that is not a candidate cannot be selectable under these rules. A new rule
changes the constraints; a rule the analysis cannot reduce adds none, which only widens the
candidates.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from policyd.catalog.snapshot import Catalog, Changes, Key
from policyd.facts.derive import Derivation
from policyd.facts.fields import reader
from policyd.facts.scoring import Scoring
from policyd.memo import Bounded
from policyd.policy.conditions import Constraint, pass_constraints
from policyd.policy.effects import DECIDING
from policyd.policy.model import Policy
from policyd.records import ENTRY, LIST, MODEL, REQUEST, RUNTIME, Field, Record
from policyd.resources.objects import RUNTIME_KINDS, ServingRuntime

_PLANS_LIMIT = 10_000
_planners = itertools.count()
Constraints = dict[str, tuple[Constraint, ...]]


def _indexable(spec: Field) -> bool:
    return spec.scope in (RUNTIME, ENTRY) and spec.intrinsic and spec.type != LIST


def _holds(constraints: Constraints, record: Mapping[str, Any]) -> bool:
    return not any(c.fires(record[f]) for f, cs in constraints.items() for c in cs)


def _passing(constraints: tuple[Constraint, ...]) -> frozenset[Any] | None:
    """The finitely many values no constraint fires on, or None when they are not finite."""
    outside = [c.outside for c in constraints if c.outside is not None]
    if not outside:
        return None
    maybe = frozenset.intersection(*outside)
    return frozenset(v for v in maybe if not any(c.fires(v) for c in constraints))


@dataclass(frozen=True)
class Plan:
    """What a runtime, and one of its entries, must pass for one request."""

    runtime: Constraints  # on intrinsic runtime fields
    entry: Constraints | None  # on intrinsic entry (and runtime) fields; None: entries do not narrow
    nothing: bool  # some blocking rule fires whatever the runtime: no runtime is selectable
    no_entry: bool  # some deciding entry rule fires whatever the entry: no entry matches
    entryless_blocked: bool  # a runtime without entries fails a check
    key: tuple[Any, ...] = ()  # its planner's number and the request facts it was made from: equal keys, equal plans

    def index_fields(self) -> list[tuple[str, str, frozenset[Any]]]:
        """(level, field, passing values) for each constraint whose passing values are finite."""
        out = []
        for level, constraints in (("runtime", self.runtime), ("entry", self.entry or {})):
            for name, cs in constraints.items():
                values = _passing(cs)
                if values is not None:
                    out.append((level, name, values))
        return out

    def admits(self, runtime: ServingRuntime, scoring: Scoring, facts: Derivation) -> bool:
        own = facts.intrinsic(runtime)
        if not _holds(self.runtime, own):
            return False
        if self.entry is None:
            return True
        entries = facts.entry_own(runtime, scoring)
        if not entries:
            return not self.entryless_blocked
        if self.no_entry:
            return False
        return any(_holds(self.entry, {**own, **e}) for e in entries)


class Planner:
    """The blocking rules of one policy revision, and the plan each request's facts make of them."""

    def __init__(self, policy: Policy, facts: Derivation) -> None:
        self.scoring = policy.scoring
        self.facts = facts  # what indexes of catalogs read runtimes' intrinsic facts from
        self.catalogue = policy.fields
        self.runtime_rules = [r for r in policy.rules if r.applies_to == RUNTIME and (r.effect in DECIDING or r.group)]
        entry_rules = [r for r in policy.rules if r.applies_to == ENTRY and r.effect in DECIDING]
        self.entries_decide = all(r.group for r in entry_rules)
        self.entry_rules = entry_rules if self.entries_decide else []
        self.entryless_blocked = any(g.entries is not None and g.entries.empty for g in policy.groups)
        used = {f for r in (*self.runtime_rules, *self.entry_rules) for f in r.fields}
        self.bound = sorted(f for f in used if policy.fields[f].scope in (REQUEST, MODEL))
        self._bound_values = reader(self.bound, policy.fields)
        self.indexed = frozenset(f for f in used if _indexable(policy.fields[f]))
        self._plans: Bounded[tuple[Any, ...], Plan] = Bounded(_PLANS_LIMIT)
        self.number = next(_planners)  # revisions of one scoring share an index, not their plans

    def plan(self, base: Record) -> Plan:
        key = self._bound_values(base)
        return self._plans.get_or(key, lambda: self._make(base, (self.number, *key)))

    def _make(self, base: Record, key: tuple[Any, ...]) -> Plan:
        bound = {f: base[f] for f in self.bound}
        runtime: dict[str, list[Constraint]] = {}
        nothing = False
        for rule in self.runtime_rules:
            found = pass_constraints(rule.condition, bound, self.catalogue)
            if found is None:
                nothing = True
                continue
            for c in found:
                if _indexable(self.catalogue[c.field]):
                    runtime.setdefault(c.field, []).append(c)
        entry: dict[str, list[Constraint]] = {}
        no_entry = False
        for rule in self.entry_rules:
            found = pass_constraints(rule.condition, bound, self.catalogue)
            if found is None:
                no_entry = True
                continue
            for c in found:
                if _indexable(self.catalogue[c.field]):
                    entry.setdefault(c.field, []).append(c)
        return Plan(
            runtime={f: tuple(cs) for f, cs in runtime.items()},
            entry={f: tuple(cs) for f, cs in entry.items()} if self.entries_decide else None,
            nothing=nothing,
            no_entry=no_entry,
            entryless_blocked=self.entryless_blocked,
            key=key,
        )


Bucket = tuple[str, str, str, Any]  # kind, namespace, field, value


@dataclass(frozen=True)
class Index:
    """Runtime keys by (kind, namespace, intrinsic field, value), for one catalog snapshot and
    one scoring; entry fields list the runtimes having an entry with that value. A changed
    snapshot shares the buckets and records only what changed since they were built."""

    scoring: Scoring
    fields: frozenset[str]
    facts: Derivation  # where it reads runtimes' intrinsic facts
    buckets: Mapping[Bucket, tuple[Key, ...]]
    entryless: Mapping[tuple[str, str], tuple[Key, ...]]  # runtimes without entries, by kind and namespace
    changed: Mapping[Key, ServingRuntime | None]
    size: int
    # the candidates of each plan and namespace asked about: requests of one model and shape
    # under other names ask again (bounded, emptied when full)
    found: Bounded[tuple[Any, ...], tuple[ServingRuntime, ...]] = field(
        default_factory=lambda: Bounded(_PLANS_LIMIT), compare=False, repr=False
    )

    @staticmethod
    def build(catalog: Catalog, scoring: Scoring, fields: frozenset[str], facts: Derivation) -> Index:
        buckets: dict[Bucket, list[Key]] = {}
        entryless: dict[tuple[str, str], list[Key]] = {}
        for key, runtime in catalog.runtimes.items():
            _add(buckets, entryless, key, runtime, scoring, fields, facts)
        return Index(
            scoring,
            fields,
            facts,
            {b: tuple(keys) for b, keys in buckets.items()},
            {s: tuple(keys) for s, keys in entryless.items()},
            {},
            len(catalog.runtimes),
        )

    def derive(self, catalog: Catalog, changes: Changes) -> Index | None:
        mine = {k: v for k, v in changes.items() if v is None or isinstance(v, ServingRuntime)}
        mine = {k: v for k, v in mine.items() if k[0] in RUNTIME_KINDS}
        if not mine:
            return self
        changed = {**self.changed, **mine}
        if len(changed) > max(256, self.size // 8):
            return None  # rebuilt on the next request: the buckets would mostly be skipped
        return Index(self.scoring, self.fields, self.facts, self.buckets, self.entryless, changed, self.size)

    def candidates(self, catalog: Catalog, namespace: str, plan: Plan) -> tuple[ServingRuntime, ...] | None:
        """The runtimes in scope the plan admits, in the order of ``Catalog.in_scope``; None
        when no constraint narrows them (every runtime in scope is then a candidate)."""
        if plan.nothing:
            return ()
        memo = (plan.key, namespace)
        known = self.found.get(memo)
        if known is not None:
            return known
        out = self._candidates(catalog, namespace, plan)
        if out is not None:
            self.found.put(memo, out)
        return out

    def _candidates(self, catalog: Catalog, namespace: str, plan: Plan) -> tuple[ServingRuntime, ...] | None:
        scopes = (("ServingRuntime", namespace), ("ClusterServingRuntime", ""))
        best: list[tuple[Key, ...]] | None = None
        best_size = -1
        for level, name, values in plan.index_fields():
            found = [self.buckets.get((kind, ns, name, v), ()) for kind, ns in scopes for v in values]
            if level == "entry" and not plan.entryless_blocked:
                found += [self.entryless.get(s, ()) for s in scopes]
            size = sum(len(keys) for keys in found)
            if best is None or size < best_size:
                best, best_size = found, size
        if best is None:
            return None
        seen: set[Key] = set()
        out = []
        for keys in best:
            for key in keys:
                if key in seen or key in self.changed:
                    continue
                seen.add(key)
                runtime = catalog.runtimes.get(key)
                if runtime is not None and plan.admits(runtime, self.scoring, self.facts):
                    out.append(runtime)
        for key, runtime in self.changed.items():
            in_scope = key[0] == "ClusterServingRuntime" or key[1] == namespace
            if runtime is not None and in_scope and plan.admits(runtime, self.scoring, self.facts):
                out.append(runtime)
        out.sort(key=lambda r: (r.kind != "ServingRuntime", r.meta.name))
        return tuple(out)


def _add(
    buckets: dict[Bucket, list[Key]],
    entryless: dict[tuple[str, str], list[Key]],
    key: Key,
    runtime: ServingRuntime,
    scoring: Scoring,
    fields: frozenset[str],
    facts: Derivation,
) -> None:
    kind, ns, _ = key
    own = facts.intrinsic(runtime)
    for name in fields & own.keys():
        buckets.setdefault((kind, ns, name, own[name]), []).append(key)
    entries = facts.entry_own(runtime, scoring)
    if not entries:
        entryless.setdefault((kind, ns), []).append(key)
    values = {(name, e[name]) for e in entries for name in fields & e.keys()}
    for name, value in values:
        buckets.setdefault((kind, ns, name, value), []).append(key)


def index_for(catalog: Catalog, planner: Planner) -> Index:
    return catalog.derived(
        ("candidates", planner.scoring, planner.indexed),
        lambda c: Index.build(c, planner.scoring, planner.indexed, planner.facts),
    )


def selectable_candidates(
    catalog: Catalog, planner: Planner, namespace: str, base: Record
) -> Sequence[ServingRuntime] | None:
    """The runtimes in scope that may be selectable, or None when every one may be."""
    return index_for(catalog, planner).candidates(catalog, namespace, planner.plan(base))

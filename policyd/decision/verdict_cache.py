"""The verdict cache: each shape of runtime judged once per kind of request, its verdict kept.

What a runtime's verdict says — its checks, reasons, score, matched entry, advisories — is a
function of the facts its rules test and its reasons print. Facts that depend on the request
read only the runtime's manifest without its metadata (its ``shape``, see derive.py), so two
runtimes with one shape and equal values of the metadata facts that matter get the same
verdict. Which facts matter is read from the compiled rules: the fields runtime and entry rules
test, and those their reasons print. On the request's side, the same goes for the facts those
rules test or print, the model, and the InferenceService but for its name and namespace (which
count only as those facts). A runtime or entry fact read from the catalog (its source, see
records.py) depends on more than the runtime's shape: on the AcceleratorClasses, which a
decision's subject carries (facts/derive.py). When the rules test or print one, the request
key holds the AcceleratorClasses' revision, so an edited AcceleratorClass is judged anew.

A metadata fact that rules only print (the runtime's name, in a reason) keys a verdict only
when one of its checks or advisories prints it: a shape is judged once, and its runtimes are
told apart by those facts only when its verdict turns out to be one that names them.

Verdicts are kept per request key for the life of the rules revision, the least recently used
request keys going first past a bound. A kept verdict holds what answers read of it (its
reasons, worked out, and its checks' effects and kinds), not the fact records it was judged
from, which take most of a verdict's memory. A request that would fill more than a quarter of
the bound at once is judged and not kept: keeping it would only push out what others reuse,
and making a verdict keepable costs about as much again as judging it.

A named runtime's verdict (the webhook's review of an InferenceService naming one) is kept
whole by ``NamedVerdicts``: its refusal and warning print from its record.
"""

from __future__ import annotations

import itertools
import threading
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from operator import attrgetter
from types import MappingProxyType
from typing import Any, cast

from policyd.decision.verdicts import RuntimeVerdict, Verdict
from policyd.facts.derive import Derivation, Subject
from policyd.facts.fields import reader
from policyd.memo import Lru
from policyd.policy.model import Group, Policy, Rule
from policyd.policy.outcomes import Check
from policyd.policy.templates import placeholders
from policyd.records import ENTRY, FROM_CATALOG, MODEL, REQUEST, RUNTIME, Field, Record
from policyd.resources.objects import ServingRuntime

KEPT_VERDICTS = 60_000  # across request keys; verdicts that say the same are one object
Judge = Callable[[Sequence[ServingRuntime]], list[Verdict]]  # one verdict per runtime given, in order
Key = tuple[Any, ...]


class Kept:
    """The verdicts kept for one request key, by runtime key. A server keeps what it makes of
    them (their encodings) by this object: they live and go together. Replaced, not changed,
    when a key's verdict is judged again."""

    __slots__ = ("__weakref__", "verdicts")

    def __init__(self, verdicts: dict[int, Verdict]) -> None:
        self.verdicts = verdicts


@dataclass(frozen=True)
class KeptRows:
    """Which kept verdicts an answer's rows are: the request key's, by these runtime keys."""

    kept: Kept
    keys: Sequence[int]


def _size(kept: Kept) -> int:
    return len(kept.verdicts)


def _rule_prints(rule: Rule) -> set[str]:
    found: set[str] = set()
    for template in (rule.reason, rule.component, rule.model_value, rule.runtime_value):
        found.update(placeholders(template))
    return found


def _group_prints(group: Group, rules: Sequence[Rule]) -> set[str]:
    """What a group's reason prints: its own templates, and its rules' reasons it combines."""
    found = set(placeholders(group.component))
    if group.entries is not None:
        found.update(placeholders(group.entries.reason))
        found.update(placeholders(group.entries.empty))
    for rule in rules:
        if rule.group == group.id:
            found |= _rule_prints(rule)
    return found


@dataclass(frozen=True)
class RelevantFields:
    """The facts runtime and entry rules test, those their verdicts' reasons print, and what
    each rule's or group's reasons print (by its id)."""

    tested: frozenset[str]
    printed: frozenset[str]
    prints: Mapping[str, frozenset[str]]


def fields_that_matter(policy: Policy) -> RelevantFields:
    judged = [r for r in policy.rules if r.applies_to in (RUNTIME, ENTRY)]
    known = policy.fields.keys()
    prints = {r.id: frozenset(_rule_prints(r) & known) for r in judged}
    for group in policy.groups:
        if group.applies_to in (RUNTIME, ENTRY):
            prints[group.id] = frozenset(_group_prints(group, judged) & known)
    tested = frozenset(f for r in judged for f in r.fields if f in known)
    return RelevantFields(tested, frozenset().union(*prints.values()), prints)


def reads_catalog(facts: Iterable[str], fields: Mapping[str, Field]) -> bool:
    """Whether some runtime or entry fact among ``facts`` (of the catalogue ``fields``) is read
    from the catalog (a request or model fact's value is in the request key already)."""
    return any(fields[f].source == FROM_CATALOG and fields[f].scope not in (REQUEST, MODEL) for f in facts)


def catalog_read(subject: Subject, reads: bool) -> str:
    """What a kept verdict's catalog facts read, when ``reads``: the AcceleratorClasses' revision."""
    return subject.accelerators.revision if reads else ""


_digest = attrgetter("digest")


def _plain(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


_NO_RECORD: Mapping[str, Any] = MappingProxyType({})


def _check_key(check: Check) -> Key:
    return (
        check.order,
        check.effect,
        check.kind,
        check.rule.id if check.rule else "",
        check.group.id if check.group else "",
    )


def _without_records(verdict: Verdict, checks: dict[Key, Check]) -> Verdict:
    """The verdict without its fact records: its reasons as judged, its checks kept for their
    order, effect and kind (a shared verdict is never asked for a named runtime's refusal),
    each check one object (from ``checks``) for every verdict that fails it."""
    kept_checks = []
    for check in verdict.checks:
        key = _check_key(check)
        found = checks.get(key)
        if found is None:
            found = checks.setdefault(key, replace(check, record=_NO_RECORD, entries=()))
        kept_checks.append(found)
    return replace(verdict, record=_NO_RECORD, checks=tuple(kept_checks))


def _content(verdict: Verdict) -> Key:
    """All a kept verdict says."""
    return (
        tuple(map(_check_key, verdict.checks)),
        verdict.score,
        verdict.entry_index,
        verdict.advisories,
        verdict.size_distance,
        verdict.entries_matching,
        verdict.reason,
        verdict.compat_reason,
    )


class SharedVerdicts:
    """The verdicts of one rules revision, by request key and runtime key: the runtime's shape
    and the facts that matter of its own, then those of them its verdicts print only. A runtime
    key is a number standing for those (hashing it is what a large scope does most)."""

    def __init__(self, policy: Policy, facts: Derivation, bound: int = KEPT_VERDICTS) -> None:
        self._facts = facts  # where a runtime's intrinsic facts are read
        relevant = fields_that_matter(policy)
        fields = policy.fields
        own = {f for f, spec in fields.items() if spec.scope == RUNTIME and spec.intrinsic}
        request_fields = sorted(f for f in relevant.tested | relevant.printed if fields[f].scope in (REQUEST, MODEL))
        self._request_values = reader(request_fields, fields)
        self._reads_catalog = reads_catalog(relevant.tested | relevant.printed, fields)
        self._runtime_values = reader(sorted(relevant.tested & own), fields)
        printed_only = (relevant.printed - relevant.tested) & own
        self._prints = {i: printed & printed_only for i, printed in relevant.prints.items() if printed & printed_only}
        # by shape: the printed-only facts some verdict of that shape printed
        self._printing: dict[Key, tuple[str, ...]] = {}
        self._bound = bound
        self._by_request: Lru[Key, Kept] = Lru(bound, _size)  # bounded by the verdicts they keep in all
        self._numbers: dict[Key, int] = {}
        # kept verdicts by what they say, while some request key holds them
        self._distinct: weakref.WeakValueDictionary[Key, Verdict] = weakref.WeakValueDictionary()
        self._checks: dict[Key, Check] = {}  # the kept checks, one per rule or group (and its order)
        self._numbering = itertools.count()  # next() is atomic: callers number keys unlocked
        self._keys: dict[str, int] = {}  # by runtime digest
        # the keys of the last scopes asked about (a catalog's scopes are the same objects
        # while it stands), with the key table they were read from
        self._scopes: Lru[int, tuple[Sequence[ServingRuntime], dict[str, int], list[int]]] = Lru(self._SCOPES)
        self._lock = threading.Lock()

    def request_key(self, subject: Subject, base: Record, named: bool) -> Key:
        # the InferenceService's name and namespace count only as the facts that matter
        isvc = subject.isvc.shape if subject.isvc is not None else ""
        model = subject.model.digest if subject.model else ""
        return (model, isvc, named, self._request_values(base), catalog_read(subject, self._reads_catalog))

    def _shape(self, runtime: ServingRuntime, own: Record) -> Key:
        """The runtime's shape and the tested values of its ``own`` (intrinsic) facts."""
        return (runtime.shape, self._runtime_values(own))

    def runtime_key(self, runtime: ServingRuntime) -> int:
        keys = self._keys
        key = keys.get(runtime.digest)
        if key is None:
            own = self._facts.intrinsic(runtime)
            shape = self._shape(runtime, own)
            full = (*shape, tuple(_plain(own[f]) for f in self._printing.get(shape, ())))
            key = self._numbers.get(full)
            if key is None:
                key = self._numbers.setdefault(full, next(self._numbering))
            if len(keys) >= 4 * self._bound:
                keys.clear()
                self._numbers.clear()
            keys[runtime.digest] = key
        return key

    def _printed_only(self, verdict: Verdict) -> set[str]:
        """The facts the verdict prints that no rule tests (a runtime's name, say)."""
        prints = self._prints
        if not prints:
            return set()
        ids = [c.rule.id if c.rule else c.group.id if c.group else "" for c in verdict.checks]
        ids += [a.rule_id for a in verdict.advisories]
        return set().union(*(prints.get(i, ()) for i in ids))

    def judged(
        self, request: Key, runtimes: Sequence[ServingRuntime], judge: Judge
    ) -> tuple[list[Verdict], KeptRows | None]:
        """A verdict for each runtime, in order: one verdict for all the runtimes of a key;
        ``judge`` judges the keys not seen yet. With which kept verdicts they are, None when
        they are not kept."""
        found = self._by_request.get(request)
        known = found.verdicts if found is not None else {}
        printing = self._printing
        keys = self._runtime_keys(runtimes)
        try:  # a known request: the lookups cost less than a set of the keys
            return list(map(known.__getitem__, keys)), KeptRows(found, keys) if found is not None else None
        except KeyError:
            missing = set(keys).difference(known)
        fresh = self._judged(keys, runtimes, missing, judge)
        # runtimes of one shape told apart by what their verdicts print (the keys of this call
        # may be older than what another call learnt meanwhile)
        if self._learn(fresh.values()) or self._printing is not printing:
            fresh = {self.runtime_key(v.runtime): v for v in fresh.values()}
            keys = self._runtime_keys(runtimes)
            fresh.update(self._judged(keys, runtimes, set(keys).difference(known, fresh), judge))
        if len(fresh) > self._bound // 4:
            return [fresh[k].verdict if k in fresh else known[k] for k in keys], None
        kept = self._keep(request, {k: self._shared_form(v.verdict) for k, v in fresh.items()}, found)
        verdicts = kept.verdicts
        return list(map(verdicts.__getitem__, keys)), KeptRows(kept, keys)

    _SCOPES = 16

    def _runtime_keys(self, runtimes: Sequence[ServingRuntime]) -> list[int]:
        table = self._keys
        seen = self._scopes.get(id(runtimes))
        if seen is not None and seen[0] is runtimes and seen[1] is table:
            return seen[2]
        found = list(map(table.get, map(_digest, runtimes)))
        if None in found:
            found = [self.runtime_key(r) if k is None else k for k, r in zip(found, runtimes, strict=True)]
        keys = cast(list[int], found)
        if len(runtimes) > self._SCOPES * 4:  # worth keeping: a scope, not a few candidates
            self._scopes.put(id(runtimes), (runtimes, table, keys))
        return keys

    def _learn(self, verdicts: Iterable[RuntimeVerdict]) -> bool:
        """Note the printed-only facts each verdict prints by its shape; whether any is new."""
        new: dict[Key, tuple[str, ...]] = {}
        for judged in verdicts:
            printed = self._printed_only(judged.verdict)
            if printed:
                shape = self._shape(judged.runtime, self._facts.intrinsic(judged.runtime))
                known = set(new.get(shape) or self._printing.get(shape, ()))
                if not printed <= known:
                    new[shape] = tuple(sorted(known | printed))
        if not new:
            return False
        with self._lock:  # replaced, not changed: readers use them unlocked
            self._printing = {**self._printing, **new}
            self._keys = {}
        return True

    @staticmethod
    def _judged(
        keys: Sequence[int], runtimes: Sequence[ServingRuntime], missing: set[int], judge: Judge
    ) -> dict[int, RuntimeVerdict]:
        todo = {k: r for k, r in zip(keys, runtimes, strict=True) if k in missing}
        return {k: RuntimeVerdict(r, v) for (k, r), v in zip(todo.items(), judge(list(todo.values())), strict=True)}

    def _shared_form(self, verdict: Verdict) -> Verdict:
        """The kept form of ``verdict``: one object for every verdict that says the same (the
        same shape under requests that differ in what it does not read says the same)."""
        content = _content(verdict)
        found = self._distinct.get(content)
        if found is None:
            self._distinct[content] = found = _without_records(verdict, self._checks)
        return found

    def _keep(self, request: Key, fresh: dict[int, Verdict], known: Kept | None) -> Kept:
        """Keep ``fresh`` for ``request``, beside what it kept when ``known`` was read; what the
        request key keeps now."""
        with self._lock:
            mine = self._by_request.get(request)
            if mine is None:  # (``known`` gone meanwhile, pushed out by others)
                mine = Kept({**known.verdicts, **fresh} if known is not None else fresh)
            elif fresh.keys() & mine.verdicts.keys():  # a key judged again (by a racing call): a new table
                mine = Kept({**mine.verdicts, **fresh})
            else:
                mine.verdicts.update(fresh)
            return self._by_request.put(request, mine)  # weighed again, as it grew


NAMED_VERDICTS = 1024  # (runtime, request key) pairs: a cluster names few runtimes, in few shapes of request


class NamedVerdicts:
    """A named runtime's verdict by the runtime's digest and a request key, judged once. Kept
    whole, record and all: a named runtime's refusal and warning print from its record (kinds'
    refusals, rules' own, advisories), so the request key holds every request fact a template
    of its runtime and entry rules, groups, kinds or messages prints, besides those they test.
    A review of an InferenceService under a new name (each ``kubectl apply`` of one) then reads
    the verdict of its shape. A runtime fact read from the catalog keys it as SharedVerdicts'."""

    def __init__(self, policy: Policy, bound: int = NAMED_VERDICTS) -> None:
        judged = [r for r in policy.rules if r.applies_to in (RUNTIME, ENTRY)]  # what renders from its record
        printed = {name for template in policy.templates(judged) for name in placeholders(template)}
        fields = policy.fields
        facts = fields_that_matter(policy).tested | (printed & fields.keys())
        self._request_values = reader(sorted(f for f in facts if fields[f].scope in (REQUEST, MODEL)), fields)
        self._reads_catalog = reads_catalog(facts, fields)
        self._verdicts: Lru[Key, Verdict] = Lru(bound)

    def judged(self, subject: Subject, base: Record, runtime: ServingRuntime, judge: Callable[[], Verdict]) -> Verdict:
        """The verdict of ``runtime`` (perhaps judged on an equal runtime of an earlier catalog)."""
        isvc = subject.isvc.shape if subject.isvc is not None else ""
        model = subject.model.digest if subject.model else ""
        catalog = catalog_read(subject, self._reads_catalog)
        return self._verdicts.get_or((runtime.digest, model, isvc, self._request_values(base), catalog), judge)

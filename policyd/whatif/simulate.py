"""What a proposed change would do to every InferenceService's decision, before it is made.

Both sides are decided by a Decider (Select, or Resolve for a named runtime) — the one
path from facts to answers — on the catalog and rules as they are and as they would be. Why a
decision changed is read from the verdicts of the runtimes involved: the old choice's first
reason after, the new one's first reason before, the ranking key that now puts another first.
Pure: catalogs and deciders in, a Simulation out."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from policyd.catalog.snapshot import Catalog, CatalogObject, Key, key_of, make_key
from policyd.decision.answers import Resolution, Selection
from policyd.decision.decider import Decider
from policyd.decision.ranking import deciding_key
from policyd.decision.verdicts import RuntimeVerdict
from policyd.errors import InvalidInput
from policyd.policy.outcomes import Reason, Refusal
from policyd.resources.objects import InferenceService, ServingRuntime

SELECTED, RESOLVED, REFUSED, ABSENT, INVALID = "selected", "resolved", "refused", "absent", "invalid"


@dataclass(frozen=True)
class Decision:
    """What is decided for one InferenceService on one side."""

    outcome: str  # selected, resolved, refused, absent (not there on this side) or invalid (cannot be decided)
    runtime: ServingRuntime | None = None  # selected or resolved
    verdict: RuntimeVerdict | None = None  # the runtime's
    entry_index: int = -1
    refusal: Refusal | None = None  # refused; invalid: the field and message
    advisory: str = ""  # resolved: the advisory event (else warning) when the runtime does not declare support
    # every verdict that was reached, by runtime: the runtimes in scope (Select), the named one (Resolve)
    judged: Mapping[Key, RuntimeVerdict] = field(default_factory=dict)

    @property
    def runtime_key(self) -> Key | None:
        return key_of(self.runtime) if self.runtime is not None else None

    @property
    def refused_by(self) -> tuple[str, ...] | None:
        """Which rule refuses, of which kind, about which field (not the message: OME's
        "no runtime found" lists every runtime checked); invalid input by its field and message."""
        refused = self.refusal
        if refused is None:
            return None
        if self.outcome == INVALID:
            return (refused.field, refused.message)
        return (refused.kind, refused.rule_id, refused.field)

    def slim(self) -> Decision:
        """The decision without the verdicts of the runtimes it did not decide on (they are many)."""
        return dataclasses.replace(self, judged={})

    def identity(self) -> tuple[Any, ...]:
        """What must stay the same for the decision not to change: the outcome, the runtime and
        its matched entry, the refusal, the advisory."""
        return (self.outcome, self.runtime_key, self.entry_index, self.refused_by, self.advisory)


@dataclass(frozen=True)
class Cause:
    """Why a decision changed (see ChangeCause in the contract for each ``cause``)."""

    cause: str
    runtime: Key | None = None
    reason: Reason | None = None
    by: Key | None = None
    rank_key: str = ""
    value: str = ""
    by_value: str = ""
    refusal: Refusal | None = None


@dataclass(frozen=True)
class DecisionChange:
    isvc: Key
    before: Decision
    after: Decision
    causes: tuple[Cause, ...]


@dataclass(frozen=True)
class Proposal:
    """The catalog as the proposal would leave it, and what it does to each object it names."""

    catalog: Catalog
    actions: tuple[tuple[Key, str], ...]  # created, configured, unchanged or deleted


@dataclass(frozen=True)
class Simulation:
    changes: tuple[DecisionChange, ...]
    decided: int


def propose(catalog: Catalog, apply: Sequence[CatalogObject], delete: Sequence[Key]) -> Proposal:
    """``catalog`` after deleting ``delete``, then applying ``apply`` (as DeleteObjects and
    ApplyObjects would); a key to delete that is not in the catalog is bad input."""
    objects = {key_of(o): o for o in catalog.objects()}
    actions: list[tuple[Key, str]] = []
    for i, key in enumerate(delete):
        if objects.pop(key, None) is None:
            kind, namespace, name = key
            where = f" in namespace {namespace}" if namespace else ""
            raise InvalidInput(f"delete[{i}]", f"{kind} {name} is not in the catalog{where}")
        actions.append((key, "deleted"))
    for obj in apply:
        key = key_of(obj)
        current = objects.get(key)
        action = "created" if current is None else "unchanged" if current.digest == obj.digest else "configured"
        objects[key] = obj
        actions.append((key, action))
    return Proposal(Catalog.of(objects.values()), tuple(actions))


def decide(catalog: Catalog, isvc: InferenceService, decider: Decider) -> Decision:
    """The decision for one InferenceService: Resolve when it names its runtime, else Select
    with every runtime judged (for the causes of a change)."""
    try:
        if isvc.runtime is not None:
            return _resolved(decider.resolve(catalog, isvc))
        return _selected(*decider.explain_all(catalog, isvc))
    except InvalidInput as err:
        return Decision(INVALID, refusal=Refusal("", err.message, err.field, "", "", "", 0))


def _selected(selection: Selection, every: Sequence[RuntimeVerdict]) -> Decision:
    judged = {key_of(v.runtime): v for v in every}
    if selection.refusal is not None or not selection.ranking:
        return Decision(REFUSED, refusal=selection.refusal, judged=judged)
    first = selection.ranking[0]
    return Decision(SELECTED, first.runtime, first, first.entry_index, judged=judged)


def _resolved(resolution: Resolution) -> Decision:
    verdict = resolution.verdict
    judged = {key_of(verdict.runtime): verdict} if verdict is not None else {}
    if resolution.refusal is not None or resolution.runtime is None:
        return Decision(REFUSED, refusal=resolution.refusal, judged=judged)
    advisory = resolution.event or resolution.warning
    return Decision(RESOLVED, resolution.runtime, verdict, resolution.entry_index, advisory=advisory, judged=judged)


Decide = Callable[[Catalog, InferenceService, Decider], Decision]


def simulate(
    before: tuple[Catalog, Decider],
    after: tuple[Catalog, Decider],
    given: Sequence[InferenceService] = (),
    decide_before: Decide = decide,
) -> Simulation:
    """Decide every InferenceService in scope — those ``given`` (on both sides) and those either
    catalog holds — before and after. ``decide_before`` may answer the side as it is from a cache
    of slim decisions; a decision that changes is decided again in full, for its causes. Changes
    keep slim decisions: every verdict of every InferenceService would not fit in memory."""
    (old, old_rev), (new, new_rev) = before, after
    rules_alike = old_rev.revision.id == new_rev.revision.id
    mine = {key_of(i): i for i in given}
    keys = sorted({*old.inference_services, *new.inference_services, *mine})
    runtimes, models = _changed(old.runtimes, new.runtimes), _changed(old.models, new.models)
    # a verdict may read the AcceleratorClasses too (a fact with source catalog, records.py)
    reads_classes = old_rev.reads_accelerator_classes or new_rev.reads_accelerator_classes
    classes_alike = not reads_classes or old.classes().revision == new.classes().revision
    changes = []
    for key in keys:
        then = mine.get(key) or old.inference_services.get(key)
        now = mine.get(key) or new.inference_services.get(key)
        same = then is not None and now is not None and then.digest == now.digest and rules_alike
        if same and now is not None and classes_alike and _decided_alike(now, old, new, new_rev, runtimes, models):
            continue
        was = decide_before(old, then, old_rev) if then is not None else Decision(ABSENT)
        will = decide(new, now, new_rev) if now is not None else Decision(ABSENT)
        if was.identity() != will.identity():
            if then is not None and decide_before is not decide:
                was = decide(old, then, old_rev)
            changes.append(DecisionChange(key, was.slim(), will.slim(), tuple(causes(was, will, old, new))))
    return Simulation(tuple(changes), len(keys))


def _changed(old: Mapping[Key, Any], new: Mapping[Key, Any]) -> set[Key]:
    """The keys whose object differs, comes or goes."""
    return {
        k for k in old.keys() | new.keys() if getattr(old.get(k), "digest", None) != getattr(new.get(k), "digest", None)
    }


def _decided_alike(
    isvc: InferenceService, old: Catalog, new: Catalog, decider: Decider, runtimes: set[Key], models: set[Key]
) -> bool:
    """Whether Select (or Resolve) must answer alike on both catalogs, without deciding: under
    one revision and one set of AcceleratorClasses a decision reads the InferenceService, its
    model and the runtimes in its scope, and each runtime's verdict depends on it alone. So
    when the model is unchanged and no changed runtime in scope is selectable on either side
    (nor named), the selectable runtimes, their ranking and the refusal's rule are the same. A
    few verdicts, not every InferenceService's decision twice."""
    ref = isvc.model
    if ref is not None and make_key(ref.kind, isvc.meta.namespace, ref.name) in models:
        return False
    if isvc.runtime is not None:
        return all(name != isvc.runtime.name for _, _, name in runtimes)
    namespace = isvc.meta.namespace
    touched = [k for k in runtimes if k[0] == "ClusterServingRuntime" or k[1] == namespace]
    for catalog in (old, new):
        present = [catalog.runtimes[k] for k in touched if k in catalog.runtimes]
        if present and any(v.selectable for v in decider.judge(catalog, isvc, present)):
            return False
    return True


def causes(was: Decision, will: Decision, old: Catalog, new: Catalog) -> list[Cause]:
    """Why ``was`` became ``will``, from the verdicts both sides reached."""
    if ABSENT in (was.outcome, will.outcome):
        return []  # the InferenceService itself comes or goes
    out: list[Cause] = []
    before_key, after_key = was.runtime_key, will.runtime_key
    if before_key != after_key:
        if before_key is not None and was.outcome == SELECTED:
            out.extend(_fate(before_key, will, new))
        if before_key is not None and new.get(before_key) is None and was.outcome == RESOLVED:
            out.append(Cause("removed", runtime=before_key))
        if after_key is not None:
            out.extend(_rise(after_key, was, old))
    elif after_key is not None and was.entry_index != will.entry_index and min(was.entry_index, will.entry_index) >= 0:
        # (no matched entry at all, -1, is a named runtime's support changing: that cause says why)
        out.append(Cause("entry", runtime=after_key, value=str(was.entry_index), by_value=str(will.entry_index)))
    if was.outcome == will.outcome == RESOLVED and before_key == after_key and was.advisory != will.advisory:
        out.append(_support(after_key, was, will))
    if was.refused_by != will.refused_by:
        if will.refusal is not None:
            out.append(Cause("refused", refusal=will.refusal))
        if was.refusal is not None:
            out.append(Cause("admitted", refusal=was.refusal))
    return out


def _fate(old_choice: Key, will: Decision, new: Catalog) -> list[Cause]:
    """What became of the runtime OME selected before."""
    if new.get(old_choice) is None:
        return [Cause("removed", runtime=old_choice)]
    verdict = will.judged.get(old_choice)
    if verdict is None:
        return []  # out of the InferenceService's scope now (its namespace changed)
    if not verdict.selectable:
        return [Cause("unselectable", runtime=old_choice, reason=verdict.reason)]
    if will.verdict is None or will.runtime_key is None:
        return []
    decided = deciding_key(will.verdict, verdict, verdict.verdict.policy.ranking)
    if decided is None:
        return []
    key, by_value, value = decided
    return [Cause("outranked", old_choice, None, will.runtime_key, key, str(value), str(by_value))]


def _rise(new_choice: Key, was: Decision, old: Catalog) -> list[Cause]:
    """What the runtime decided on after was before."""
    if old.get(new_choice) is None:
        return [Cause("added", runtime=new_choice)]
    verdict = was.judged.get(new_choice)
    if verdict is not None and not verdict.selectable and was.outcome != RESOLVED:
        return [Cause("selectable", runtime=new_choice, reason=verdict.reason)]
    return []


def _support(runtime: Key | None, was: Decision, will: Decision) -> Cause:
    """A named runtime starts or stops declaring support: the reason of the side that lacks it."""
    lacking = will if will.advisory else was
    reason = lacking.verdict.compat_reason if lacking.verdict is not None else None
    return Cause("support", runtime=runtime, reason=reason)

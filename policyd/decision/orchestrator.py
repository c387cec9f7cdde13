"""The one path from a request to an answer: facts → rules engine → verdicts → a Selection,
Explanation, Resolution or Effective answer. What is refused, in which order, which reasons
combine and how, what is listed as excluded: all of it comes from the rule files."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from policyd.backends import BACKENDS, Backend
from policyd.catalog.snapshot import Catalog, make_key
from policyd.decision.candidates import Planner, index_for, selectable_candidates
from policyd.decision.lookup import lookup
from policyd.decision.ranking import deciding_key, rank
from policyd.decision.verdict_cache import KeptRows, NamedVerdicts, SharedVerdicts
from policyd.decision.verdicts import RuntimeVerdict, Verdict, reasons
from policyd.errors import InvalidInput
from policyd.facts.derive import (
    Subject,
    component_records,
    entry_facts,
    intrinsic_facts,
    runtime_record,
    subject_record,
)
from policyd.facts.fields import neutral_record
from policyd.memo import Lru
from policyd.policy import templates
from policyd.policy.effects import BLOCK, WARN
from policyd.policy.engine import Fired
from policyd.policy.model import Rule
from policyd.policy.outcomes import Reason, Refusal, entry_matches, refusal, rule_reason, runtime_checks
from policyd.policy.revision import Revision
from policyd.records import COMPONENT, ENTRY, MODEL, REQUEST, RUNTIME, Record
from policyd.resources.objects import BaseModel, InferenceService, ModelRef, ServingRuntime
from policyd.resources.sizes import range_distance
from policyd.semantics.format_label import format_label

T = TypeVar("T")
E = TypeVar("E")


@dataclass(frozen=True)
class Selection:
    ranking: tuple[RuntimeVerdict, ...]
    refusal: Refusal | None  # the request refused, or nothing selectable (OME's message)
    warnings: tuple[str, ...]
    excluded: tuple[RuntimeVerdict, ...]  # the runtimes OME's message lists; only when nothing is selectable
    # every runtime in scope, in scope order, when decided without the fast path (what-if reads
    # them); none when refused
    judged: tuple[RuntimeVerdict, ...] = ()

    @property
    def error(self) -> str:
        return self.refusal.message if self.refusal else ""


@dataclass(frozen=True)
class Explanation:
    model: BaseModel
    model_format: str
    scope: Sequence[ServingRuntime]  # every runtime in scope, in scope order (the catalog's object)
    # each one's verdict; a verdict may stand for every runtime of its shape (decision/verdict_cache.py)
    verdicts: Sequence[Verdict]
    kept: KeptRows | None = None  # which kept verdicts they are, when they are (decision/verdict_cache.py)

    @property
    def runtimes(self) -> list[RuntimeVerdict]:
        """Each runtime with its verdict."""
        return list(map(RuntimeVerdict, self.scope, self.verdicts))


@dataclass(frozen=True)
class Resolution:
    runtime: ServingRuntime | None
    verdict: RuntimeVerdict | None
    warning: str = ""
    event: str = ""
    event_reason: str = ""
    refusal: Refusal | None = None
    entry_index: int = -1


@dataclass(frozen=True)
class ComponentMode:
    component: str
    mode: str
    source: str
    error: Refusal | None


@dataclass(frozen=True)
class BackendEffect(Generic[E]):
    """What an engine backend makes take effect in the runtime's engine, with the rules' say on it."""

    backend: Backend[E]
    effect: E
    refusal: Reason | None  # why it would not start: the runtime's first check that refuses it when named
    advisories: tuple[Reason, ...]  # the runtime's


@dataclass(frozen=True)
class Choice:
    """How Effective came to its runtime: named in spec.runtime.name (judged as Resolve judges
    it), or selected, the first of Select's ranking."""

    chosen: RuntimeVerdict
    named: bool
    entry_index: int  # the matched entry, -1 when none (a named runtime the request refuses)
    compatible: bool  # whether it declares support for the model (True without one: no model work)
    reasons: tuple[Reason, ...]  # why it does not declare support, then its advisories
    selectable: int = 0  # selected: how many runtimes could be
    runner_up: RuntimeVerdict | None = None  # selected: the second of the ranking
    # selected, with a runner-up: the ranking key it wins on, its value and the runner-up's
    decided: tuple[str, Any, Any] | None = None

    @property
    def decided_by(self) -> str:
        return "spec.runtime.name" if self.named else "ranking" if self.runner_up else "only-selectable"


@dataclass(frozen=True)
class Effective:
    runtime: ServingRuntime | None
    modes: tuple[ComponentMode, ...]
    errors: tuple[Refusal, ...]
    backends: tuple[BackendEffect[Any], ...] = ()  # each registered backend the engine runs
    choice: Choice | None = None  # with a runtime


@dataclass(frozen=True)
class Decision:
    """Resolve's answer (a named runtime) or Select's, and Effective's when a runtime can be used."""

    resolution: Resolution | None
    selection: Selection | None
    effective: Effective | None


# -- what a revision derives from its rules to decide without judging every runtime ------------

_PER_REVISION = 4  # revisions whose planners and shared verdicts are kept (the serving one, and reloads)
_planners: Lru[str, Planner] = Lru(_PER_REVISION)
_shared: Lru[str, SharedVerdicts] = Lru(_PER_REVISION)
_named: Lru[str, NamedVerdicts] = Lru(_PER_REVISION)


def _planner(revision: Revision) -> Planner:
    return _planners.get_or(revision.id, lambda: Planner(revision.policy))


def _shared_verdicts(revision: Revision) -> SharedVerdicts:
    return _shared.get_or(revision.id, lambda: SharedVerdicts(revision.policy))


def _named_verdicts(revision: Revision) -> NamedVerdicts:
    return _named.get_or(revision.id, lambda: NamedVerdicts(revision.policy))


def retire(revision: Revision) -> None:
    """Forget what decisions at ``revision`` memoised: nothing decides at it any more."""
    _planners.pop(revision.id)
    _shared.pop(revision.id)
    _named.pop(revision.id)


def prepare(revision: Revision, catalog: Catalog) -> None:
    """Build what decisions at this revision and catalog read before the first call needs it:
    the index of candidates and the cluster's runtimes by name (with the default namespace's)."""
    index_for(catalog, _planner(revision))
    catalog.in_scope("default")


# -- facts ------------------------------------------------------------------------------------


def _subject(catalog: Catalog, isvc: InferenceService, mode: str = "v1.3") -> Subject:
    ref = isvc.model
    model = catalog.models.get(make_key(ref.kind, isvc.meta.namespace, ref.name)) if ref else None
    named = lookup(catalog, isvc, mode) is not None if isvc.runtime else False
    return Subject(isvc.meta.namespace, isvc, model, ref, named, catalog.classes())


def _admission(revision: Revision, subject: Subject, base: Record) -> list[Refusal]:
    """The request's refusals in rule order: request rules speak when there is an
    InferenceService, model rules when a model is referenced."""
    engine, policy = revision.engine, revision.policy
    fired: list[Rule] = []
    if subject.isvc is not None:
        fired.extend(engine.fire(REQUEST, [base])[0])
    if subject.model_ref is not None or subject.model is not None:
        fired.extend(engine.fire(MODEL, [base])[0])
    return [refusal(policy, r, base) for r in sorted(fired, key=lambda r: r.order) if r.effect == "refuse"]


def _judge(
    revision: Revision, subject: Subject, base: Record, runtimes: Sequence[ServingRuntime], named: bool
) -> list[Verdict]:
    """One verdict per runtime, in the order given; each scope's records go to the engine in one batch."""
    policy, engine = revision.policy, revision.engine
    scoring = policy.scoring
    model = subject.model
    per_runtime = [entry_facts(model, rt, scoring) if model else () for rt in runtimes]
    records = [
        runtime_record(subject, base, rt, entries, scoring, named)
        for rt, entries in zip(runtimes, per_runtime, strict=True)
    ]
    fired = engine.fire(RUNTIME, records)
    entry_records: list[Record] = [
        {**rec, **e} for rec, entries in zip(records, per_runtime, strict=True) for e in entries
    ]
    entry_fired = engine.fire(ENTRY, entry_records)
    out, at = [], 0
    for runtime, record, hits, entries in zip(runtimes, records, fired, per_runtime, strict=True):
        mine = list(zip(entry_records[at : at + len(entries)], entry_fired[at : at + len(entries)], strict=True))
        at += len(entries)
        out.append(_verdict(revision, subject, runtime, record, hits, mine, named))
    return out


def _verdicts_in_scope(
    revision: Revision, subject: Subject, base: Record, runtimes: Sequence[ServingRuntime], fast: bool
) -> tuple[list[Verdict], KeptRows | None]:
    """As ``_judge`` (named=False); ``fast`` judges each shape of runtime once and keeps the
    verdicts (decision/verdict_cache.py), so a verdict may have been judged for another runtime of its shape."""
    if not fast:
        return _judge(revision, subject, base, runtimes, named=False), None
    shared = _shared_verdicts(revision)
    key = shared.request_key(subject, base, named=False)
    return shared.judged(key, runtimes, lambda todo: _judge(revision, subject, base, todo, named=False))


def _judge_in_scope(
    revision: Revision, subject: Subject, base: Record, runtimes: Sequence[ServingRuntime], fast: bool
) -> list[RuntimeVerdict]:
    """Each runtime with its verdict, as ``_verdicts_in_scope``."""
    verdicts, _ = _verdicts_in_scope(revision, subject, base, runtimes, fast)
    return list(map(RuntimeVerdict, runtimes, verdicts))


def _verdict(
    revision: Revision,
    subject: Subject,
    runtime: ServingRuntime,
    record: Record,
    fired: Fired,
    entries: list[tuple[Record, Fired]],
    named: bool,
) -> Verdict:
    policy = revision.policy
    checks, _ = runtime_checks(policy, record, fired, entries)
    matched = policy.scoring.matched_entry([e for e, _ in entries], auto_selected=not named)
    matched_hits = next((hits for e, hits in entries if e["entry_index"] == matched), ())
    points = sum(r.points for r in (*fired, *matched_hits) if r.effect == "score")
    advisories: list[Reason] = [rule_reason(r, record) for r in fired if r.effect == "advise"]
    advisories += [
        rule_reason(r, e) for e, hits in entries if e["entry_index"] == matched for r in hits if r.effect == "advise"
    ]
    compatible = not any(c.effect == "exclude" for c in checks)
    rng = runtime.size_range
    size = subject.model.size if subject.model else None
    reason, compat_reason = reasons(checks)
    return Verdict(
        record=record,
        checks=checks,
        score=int(record["runtime_score"]) + points if compatible else 0,
        entry_index=matched,
        advisories=tuple(advisories),
        size_distance=0.0 if rng is None or size is None else range_distance(size, rng.min, rng.max),
        policy=policy,
        entries_matching=tuple(int(e["entry_index"]) for e, hits in entries if entry_matches(hits)),
        reason=reason,
        compat_reason=compat_reason,
    )


# -- answers ----------------------------------------------------------------------------------


def _missing_model(refusals: Sequence[Refusal], ref: ModelRef, field: str) -> InvalidInput:
    """Explaining a model that does not exist is bad input naming ``field``, in the policy's words:
    the refusal about the model (spec.model.name), not another the request also has."""
    about = next((r for r in refusals if r.field == "spec.model.name" and r.message), None)
    return InvalidInput(field, about.message if about else f"{ref.kind} {ref.name} not found")


def select(catalog: Catalog, isvc: InferenceService, revision: Revision, fast: bool = True) -> Selection:
    """``fast`` judges only the runtimes that can be selectable (decision/candidates.py), and
    each shape of runtime once (decision/verdict_cache.py); the answer is the same."""
    subject = _subject(catalog, isvc)
    base = subject_record(subject)
    refusals = _admission(revision, subject, base)
    if refusals:
        return Selection((), refusals[0], (), ())
    return _select(revision, catalog, subject, base, fast)


def _select(revision: Revision, catalog: Catalog, subject: Subject, base: Record, fast: bool) -> Selection:
    policy = revision.policy
    isvc = subject.isvc
    assert isvc is not None
    if subject.model is None:
        raise InvalidInput(
            "spec.model", "is required to select a runtime (an InferenceService without spec.model names its runtime)"
        )
    candidates = selectable_candidates(catalog, _planner(revision), subject.namespace, base) if fast else None
    scope = catalog.in_scope(subject.namespace) if candidates is None else candidates
    rows = _judge_in_scope(revision, subject, base, scope, fast)
    judged = () if fast else tuple(rows)
    ranking = rank(rows, policy.ranking)
    messages = policy.messages
    if ranking:
        values = {"runtime_name": ranking[0].runtime.meta.name, "model_name": subject.model.meta.name}
        # The admission webhook speaks only for InferenceServices with an engine section, and
        # selects nothing for an engine with a complete runner of its own
        speaks = "engine" in isvc.components and not base["isvc_full_runner"]
        warnings = (templates.render(messages["auto_selected"], values),) if speaks else ()
        return Selection(tuple(ranking), None, warnings, (), judged)
    if candidates is not None:  # nothing selectable: OME's message speaks of every runtime in scope
        scope = catalog.in_scope(subject.namespace)
        rows = _judge_in_scope(revision, subject, base, scope, fast)
    return _none_selectable(revision, base, scope, rows, not fast)


# OME lists every excluded runtime; past this many characters the list ends "… and N more", so the
# answer stays one a client can take (thousands of runtimes, not tens of thousands).
LISTED_TEXT_LIMIT = 256 << 10


def _listed(items: Sequence[str], separator: str) -> str:
    length = 0
    for i, item in enumerate(items):
        length += len(item) + len(separator)
        if length > LISTED_TEXT_LIMIT:
            return separator.join([*items[:i], f"… and {len(items) - i:,} more"])
    return separator.join(items)


def _none_selectable(
    revision: Revision,
    base: Record,
    scope: Sequence[ServingRuntime],
    rows: Sequence[RuntimeVerdict],
    keep_judged: bool,
) -> Selection:
    policy = revision.policy
    messages = policy.messages
    excluded = tuple(v for v in rows if v.checks and v.checks[0].effect in policy.listed)
    text = templates.render(messages["no_runtime"], base)
    if scope:
        namespaced = sum(1 for r in scope if r.namespaced)
        counts = {"checked": len(scope), "namespaced": namespaced, "cluster": len(scope) - namespaced}
        text += templates.render(messages["checked_runtimes"], counts)
    if excluded:
        # OME keys the list by name, the cluster runtimes after the namespace's: a name used at both
        # scopes is listed once, with the ClusterServingRuntime's reason
        reasons = {v.runtime.meta.name: v.reason.message for v in excluded if v.reason is not None}
        items = [
            templates.render(messages["excluded_item"], {"runtime_name": name, "reason": reason})
            for name, reason in reasons.items()
        ]
        text += templates.render(
            messages["excluded_runtimes"], {"list": _listed(items, messages["excluded_separator"])}
        )
    kind = policy.kinds[policy.none_selectable]
    found = Refusal(policy.none_selectable, text, "spec.model.name", kind.condition_reason, text, "", 0)
    return Selection((), found, (), excluded, tuple(rows) if keep_judged else ())


def judge(
    catalog: Catalog, isvc: InferenceService, revision: Revision, runtimes: Sequence[ServingRuntime]
) -> list[RuntimeVerdict]:
    """The verdicts Select reaches for ``runtimes`` (what-if asks about the few a change touches)."""
    subject = _subject(catalog, isvc)
    verdicts = _judge(revision, subject, subject_record(subject), runtimes, named=False)
    return list(map(RuntimeVerdict, runtimes, verdicts))


def explain_isvc(catalog: Catalog, isvc: InferenceService, revision: Revision, fast: bool = True) -> Explanation:
    subject = _subject(catalog, isvc)
    base = subject_record(subject)
    if isvc.model is None:
        raise InvalidInput("spec.model", "is required to explain runtimes for an InferenceService")
    if subject.model is None:
        raise _missing_model(_admission(revision, subject, base), isvc.model, "spec.model.name")
    return _explain(revision, catalog, subject, base, subject.model, fast)


def explain_model(
    catalog: Catalog, ref: ModelRef, namespace: str, revision: Revision, fast: bool = True
) -> Explanation:
    """As ``kubectl ome runtime explain --model``: no InferenceService, so no mode or accelerator request."""
    model = catalog.models.get(make_key(ref.kind, namespace, ref.name))
    subject = Subject(namespace, None, model, ref, accelerators=catalog.classes())
    base = subject_record(subject)
    if model is None:
        raise _missing_model(_admission(revision, subject, base), ref, "model.name")
    return _explain(revision, catalog, subject, base, model, fast)


def _explain(
    revision: Revision, catalog: Catalog, subject: Subject, base: Record, model: BaseModel, fast: bool
) -> Explanation:
    scope = catalog.in_scope(subject.namespace)
    verdicts, kept = _verdicts_in_scope(revision, subject, base, scope, fast)
    return Explanation(model, format_label(model), scope, verdicts, kept)


def resolve(
    catalog: Catalog, isvc: InferenceService, revision: Revision, mode: str = "v1.3", fast: bool = False
) -> Resolution:
    """``fast`` judges the named runtime once per shape of request, as Decide and Admit do."""
    if isvc.runtime is None and isvc.model is not None:
        raise InvalidInput("spec.runtime.name", "is required to resolve a named runtime (use Select otherwise)")
    subject, base, refusals = review(catalog, isvc, revision, mode)
    return resolve_reviewed(revision, catalog, subject, base, refusals, mode, fast=fast)


def review(
    catalog: Catalog, isvc: InferenceService, revision: Revision, mode: str = "v1.3"
) -> tuple[Subject, Record, list[Refusal]]:
    """The subject of a decision, its request record, and the request's refusals in rule order."""
    subject = _subject(catalog, isvc, mode)
    base = subject_record(subject)
    return subject, base, _admission(revision, subject, base)


def resolve_reviewed(
    revision: Revision,
    catalog: Catalog,
    subject: Subject,
    base: Record,
    refusals: Sequence[Refusal],
    mode: str = "v1.3",
    admission: bool = False,
    fast: bool = False,
) -> Resolution:
    """Resolve, from what ``review`` made; ``admission`` keeps only the refusals the webhook makes;
    ``fast`` judges the named runtime once per shape of request (decision/verdict_cache.py)."""
    policy = revision.policy
    isvc = subject.isvc
    assert isvc is not None
    runtime = lookup(catalog, isvc, mode)
    candidates = list(refusals)
    judged: Verdict | None = None
    verdict = None
    if runtime is not None:
        named_runtime = runtime

        def judge() -> Verdict:
            return _judge(revision, subject, base, [named_runtime], named=True)[0]

        judged = _named_verdicts(revision).judged(subject, base, runtime, judge) if fast else judge()
        verdict = RuntimeVerdict(runtime, judged)
    if judged is not None and (named := judged.named_refusal()) is not None:
        candidates.append(named)
    if admission:
        candidates = [r for r in candidates if r.admission]
    if candidates:
        return Resolution(runtime, verdict, refusal=min(candidates, key=lambda r: r.order))
    if judged is None or subject.model is None:
        # No model: OME skips all model work, so there is nothing to check support against.
        return Resolution(runtime, verdict)
    check = judged.when_named(WARN)
    if check is None:
        return Resolution(runtime, verdict, entry_index=judged.entry_index)
    assert isvc.runtime is not None and runtime is not None
    values = {
        "runtime_name": runtime.meta.name,
        "model_name": subject.model.meta.name,
        "detail": check.advisory(policy),
    }
    messages = policy.messages
    warning = templates.render(messages["named_warning"], values) if "engine" in isvc.components else ""
    event = templates.render(messages["named_event"], values) if isvc.runtime.auto_sync else ""
    return Resolution(
        runtime,
        verdict,
        warning=warning,
        event=event,
        event_reason=policy.kinds[check.kind].event_reason if event else "",
        entry_index=judged.entry_index,
    )


def select_reviewed(
    revision: Revision, catalog: Catalog, subject: Subject, base: Record, fast: bool = True
) -> Selection:
    """Select, from what ``review`` made, for a request no rule refuses."""
    return _select(revision, catalog, subject, base, fast)


def effective(
    catalog: Catalog, isvc: InferenceService, revision: Revision, mode: str = "v1.3", fast: bool = True
) -> Effective:
    """The mode each declared component runs in, with the runtime OME uses, and what refuses them."""
    subject = _subject(catalog, isvc, mode)
    base = subject_record(subject)
    errors = _admission(revision, subject, base)
    choice: Choice | None = None
    if isvc.runtime is not None:
        resolution = resolve_reviewed(revision, catalog, subject, base, errors, mode, fast=fast)
        if resolution.verdict is not None:
            choice = _named_choice(resolution.verdict, resolution.entry_index, subject.model is not None)
    elif not errors and subject.model is not None:
        selection = _select(revision, catalog, subject, base, fast)
        choice = _selected_choice(selection.ranking, revision) if selection.ranking else None
        errors.extend([selection.refusal] if selection.refusal else [])
    runtime = choice.chosen.runtime if choice else None
    return _effective_on(revision, subject, base, runtime, errors, choice)


def _named_choice(verdict: RuntimeVerdict, entry_index: int, with_model: bool) -> Choice:
    if not with_model:  # OME does no model work: there is no support to declare
        return Choice(verdict, True, entry_index, True, ())
    said = (verdict.compat_reason,) if verdict.compat_reason is not None else ()
    return Choice(verdict, True, entry_index, verdict.compatible, (*said, *verdict.advisories))


def _selected_choice(ranking: Sequence[RuntimeVerdict], revision: Revision) -> Choice:
    top = ranking[0]
    runner_up = ranking[1] if len(ranking) > 1 else None
    decided = deciding_key(top, runner_up, revision.policy.ranking) if runner_up else None
    return Choice(top, False, top.entry_index, True, top.advisories, len(ranking), runner_up, decided)


def _effective_on(
    revision: Revision,
    subject: Subject,
    base: Record,
    runtime: ServingRuntime | None,
    errors: list[Refusal],
    choice: Choice | None = None,
) -> Effective:
    """Effective's answer once the runtime OME uses is known; ``errors`` are the request's."""
    policy = revision.policy
    isvc = subject.isvc
    assert isvc is not None
    if runtime is not None:
        record = runtime_record(subject, base, runtime, (), policy.scoring, isvc.runtime is not None)
    else:
        record = {**neutral_record(RUNTIME), **base}
    components = component_records(record, isvc, runtime)
    fired = revision.engine.fire(COMPONENT, components)
    modes = []
    for rec, hits in zip(components, fired, strict=True):
        rule = next((r for r in hits if r.effect == "refuse"), None)
        error = refusal(policy, rule, rec, component=str(rec["component_name"])) if rule else None
        if error is not None:
            errors.append(error)
        modes.append(
            ComponentMode(
                str(rec["component_name"]), str(rec["component_mode"]), str(rec["component_mode_source"]), error
            )
        )
    backends = _backends(revision, subject, base, runtime, isvc.runtime is not None) if runtime else ()
    return Effective(runtime, tuple(modes), tuple(errors), backends, choice)


def decide(
    catalog: Catalog, isvc: InferenceService, revision: Revision, mode: str = "v1.3", fast: bool = True
) -> Decision:
    """The whole decision: Resolve when the InferenceService names its runtime, else Select;
    then, when a runtime can be used, Effective on that runtime (decided once, not again)."""
    subject, base, refusals = review(catalog, isvc, revision, mode)
    if isvc.runtime is not None:
        resolution = resolve_reviewed(revision, catalog, subject, base, refusals, mode, fast=fast)
        if resolution.refusal is not None or resolution.runtime is None:
            return Decision(resolution, None, None)
        return Decision(resolution, None, _effective_on(revision, subject, base, resolution.runtime, list(refusals)))
    selection = Selection((), refusals[0], (), ()) if refusals else _select(revision, catalog, subject, base, fast)
    if not selection.ranking:
        return Decision(None, selection, None)
    return Decision(None, selection, _effective_on(revision, subject, base, selection.ranking[0].runtime, []))


def _backends(
    revision: Revision, subject: Subject, base: Record, runtime: ServingRuntime, named: bool
) -> tuple[BackendEffect[Any], ...]:
    """What takes effect in the runtime's engine by each backend it runs; the runtime is judged
    (for the refusal and the advisories) only when it runs one."""
    isvc, model = subject.isvc, subject.model
    running = [b for b in BACKENDS if b.runs(runtime, isvc)]
    if not running:
        return ()
    verdict = _judge(revision, subject, base, [runtime], named)[0] if model else None
    check = verdict.when_named(BLOCK) if verdict else None
    refusal = check.reason() if check else None
    advisories = verdict.advisories if verdict else ()
    return tuple(BackendEffect(b, b.effective(runtime, isvc, model, refusal), refusal, advisories) for b in running)


def refusal_when_named(revision: Revision, runtime: ServingRuntime) -> Reason | None:
    """Why the runtime is refused when an InferenceService names it, whatever the model: the
    first of its runtime checks (entries aside) whose kind refuses a named runtime, for a
    request and a model that pass every other check."""
    policy = revision.policy
    record = runtime_record(Subject("", None, None), neutral_record(RUNTIME), runtime, (), policy.scoring, True)
    fired = revision.engine.fire(RUNTIME, [record])[0]
    checks, _ = runtime_checks(policy, record, fired, ())
    # an entry group's check says "no entry matches": it is about the model, not the runtime alone
    alone = tuple(c for c in checks if c.group is None or c.group.entries is None)
    check = Verdict(record, alone, 0, -1, (), 0.0, policy).when_named(BLOCK)
    return check.reason() if check is not None else None


_NEUTRAL_RUNTIME = neutral_record(RUNTIME)


def first_catalog_refusal(revision: Revision, objects: Sequence[object]) -> tuple[int, Refusal] | None:
    """The first of ``objects`` the catalog would not take (by its index), and why."""
    runtimes = [(i, obj) for i, obj in enumerate(objects) if isinstance(obj, ServingRuntime)]
    refused = catalog_refusals(revision, [obj for _, obj in runtimes])
    return next(((i, r[0]) for (i, _), r in zip(runtimes, refused, strict=True) if r), None)


def catalog_refusals(revision: Revision, runtimes: Sequence[ServingRuntime]) -> list[list[Refusal]]:
    """What the policy refuses in each runtime itself (the catalog does not take it): its
    runtime rules with effect refuse, which test the runtime alone. One batch for all."""
    records = [{**_NEUTRAL_RUNTIME, **intrinsic_facts(runtime)} for runtime in runtimes]
    fired = revision.engine.fire(RUNTIME, records)
    return [
        [refusal(revision.policy, r, record) for r in hits if r.effect == "refuse"]
        for record, hits in zip(records, fired, strict=True)
    ]

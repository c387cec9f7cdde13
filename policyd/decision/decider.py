"""The one path from a request to an answer: facts → rules engine → verdicts → a Selection,
Explanation, Resolution or Effective answer. What is refused, in which order, which reasons
combine and how, what is listed as excluded: all of it comes from the rule files.

A ``Decider`` is prepared for one rules revision (OPA's prepared query is the model): it owns
what deciding at that revision derives and keeps — the candidate planner and the verdicts each
shape of runtime was judged to (decision/verdict_cache.py) — and they go when it goes. It decides
on any catalog snapshot: kept verdicts are keyed by what they read of one (the
AcceleratorClasses' revision, when a rule reads a catalog-sourced fact), so a catalog change does
not throw away what every other runtime was judged to. ``plain()`` is the same revision judging
every runtime in scope and keeping nothing: for objects a call brings, and the reference the
shortcuts must equal (tests/decision/test_fast_path.py)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from typing import Any

from policyd.catalog.snapshot import Catalog, make_key
from policyd.decision.answers import (
    BackendEffect,
    Choice,
    ComponentMode,
    Decision,
    Effective,
    Explanation,
    Resolution,
    Selection,
)
from policyd.decision.candidates import Planner, index_for, selectable_candidates
from policyd.decision.lookup import lookup
from policyd.decision.ranking import deciding_key, rank
from policyd.decision.verdict_cache import KeptRows, NamedVerdicts, SharedVerdicts, fields_that_matter, reads_catalog
from policyd.decision.verdicts import RuntimeVerdict, Verdict, reasons
from policyd.errors import InvalidInput
from policyd.facts.derive import Derivation, Subject, component_records
from policyd.facts.fields import neutral_record
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

# OME lists every excluded runtime; past this many characters the list ends "… and N more", so the
# answer stays one a client can take (thousands of runtimes, not tens of thousands).
LISTED_TEXT_LIMIT = 256 << 10


class Decider:
    def __init__(self, revision: Revision, facts: Derivation | None = None, shortcuts: bool = True) -> None:
        """``facts``: what derives (and memoises) the fact records, for the revision's engine
        backends (whose facts its rules test, and whose effect an answer reports) — shared by the
        deciders of one serving state's revisions; ``shortcuts``: judge only the runtimes that can be selectable
        (decision/candidates.py), each shape of runtime once per kind of request, and keep the
        verdicts; the answers are the same without."""
        self.revision = revision
        self.policy = revision.policy
        self.facts = facts or Derivation(revision.backends)
        self.backends = self.facts.backends
        self.shortcuts = shortcuts
        self._planner = Planner(revision.policy, self.facts) if shortcuts else None
        self._shared = SharedVerdicts(revision.policy, self.facts) if shortcuts else None
        self._named = NamedVerdicts(revision.policy) if shortcuts else None

    @cached_property
    def reads_accelerator_classes(self) -> bool:
        """Whether a verdict may change with the AcceleratorClasses alone (a runtime or entry fact
        read from the catalog, records.py): what-if decides again on an edited one only then.
        Worked out when asked: a plain decider is made per call that brings objects."""
        relevant = fields_that_matter(self.policy)
        return reads_catalog(relevant.tested | relevant.printed, self.policy.fields)

    @cached_property
    def neutral_runtime(self) -> Record:
        """A runtime record of this policy's fields, each at its neutral value: read it, do not change it."""
        return neutral_record(RUNTIME, self.policy.fields)

    def plain(self) -> Decider:
        """This revision judging every runtime and keeping nothing (its engine is this one's:
        closing this decider closes both)."""
        return Decider(self.revision, self.facts, shortcuts=False)

    def close(self) -> None:
        """Nothing decides at this revision any more: its engine's memory goes now, the rest with this object."""
        self.revision.engine.close()

    def prepare(self, catalog: Catalog) -> None:
        """Build what decisions on this catalog read before the first call needs it: the index of
        candidates and the cluster's runtimes by name (with the default namespace's)."""
        if self._planner is not None:
            index_for(catalog, self._planner)
        catalog.in_scope("default")

    # -- answers --------------------------------------------------------------------------

    def select(self, catalog: Catalog, isvc: InferenceService) -> Selection:
        subject, base, refusals = self.review(catalog, isvc)
        if refusals:
            return Selection((), refusals[0], (), ())
        return self.select_reviewed(catalog, subject, base)

    def explain_all(self, catalog: Catalog, isvc: InferenceService) -> tuple[Selection, tuple[RuntimeVerdict, ...]]:
        """Select's answer with every runtime in scope judged, in scope order (what-if compares
        them); none judged when the request is refused."""
        subject, base, refusals = self.review(catalog, isvc)
        if refusals:
            return Selection((), refusals[0], (), ()), ()
        model = self._model_of(subject)
        scope = catalog.in_scope(subject.namespace)
        rows = self._judge_plain(subject, base, scope)
        return self._selection(subject, base, model, scope, rows, None), tuple(rows)

    def judge(
        self, catalog: Catalog, isvc: InferenceService, runtimes: Sequence[ServingRuntime]
    ) -> list[RuntimeVerdict]:
        """The verdicts Select reaches for ``runtimes`` (what-if asks about the few a change touches)."""
        subject = _subject(catalog, isvc)
        return self._judge_plain(subject, self.facts.subject_record(subject), runtimes)

    def explain_isvc(self, catalog: Catalog, isvc: InferenceService) -> Explanation:
        subject = _subject(catalog, isvc)
        base = self.facts.subject_record(subject)
        if isvc.model is None:
            raise InvalidInput("spec.model", "is required to explain runtimes for an InferenceService")
        if subject.model is None:
            raise _missing_model(self._admission(subject, base), isvc.model, "spec.model.name")
        return self._explain(catalog, subject, base, subject.model)

    def explain_model(self, catalog: Catalog, ref: ModelRef, namespace: str) -> Explanation:
        """As ``kubectl ome runtime explain --model``: no InferenceService, so no mode or accelerator request."""
        model = catalog.models.get(make_key(ref.kind, namespace, ref.name))
        subject = Subject(namespace, None, model, ref, accelerators=catalog.classes())
        base = self.facts.subject_record(subject)
        if model is None:
            raise _missing_model(self._admission(subject, base), ref, "model.name")
        return self._explain(catalog, subject, base, model)

    def resolve(self, catalog: Catalog, isvc: InferenceService, mode: str = "v1.3") -> Resolution:
        if isvc.runtime is None and isvc.model is not None:
            raise InvalidInput("spec.runtime.name", "is required to resolve a named runtime (use Select otherwise)")
        subject, base, refusals = self.review(catalog, isvc, mode)
        return self.resolve_reviewed(catalog, subject, base, refusals, mode)

    def review(
        self, catalog: Catalog, isvc: InferenceService, mode: str = "v1.3"
    ) -> tuple[Subject, Record, list[Refusal]]:
        """The subject of a decision, its request record, and the request's refusals in rule order."""
        subject = _subject(catalog, isvc, mode)
        base = self.facts.subject_record(subject)
        return subject, base, self._admission(subject, base)

    def resolve_reviewed(
        self,
        catalog: Catalog,
        subject: Subject,
        base: Record,
        refusals: Sequence[Refusal],
        mode: str = "v1.3",
        admission: bool = False,
    ) -> Resolution:
        """Resolve, from what ``review`` made; ``admission`` keeps only the refusals the webhook makes."""
        policy = self.policy
        isvc = subject.isvc
        assert isvc is not None
        runtime = lookup(catalog, isvc, mode)
        candidates = list(refusals)
        judged: Verdict | None = None
        verdict = None
        if runtime is not None:
            named_runtime = runtime

            def judge() -> Verdict:
                return self._judge(subject, base, [named_runtime], named=True)[0]

            judged = judge() if self._named is None else self._named.judged(subject, base, runtime, judge)
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

    def select_reviewed(self, catalog: Catalog, subject: Subject, base: Record) -> Selection:
        """Select, from what ``review`` made, for a request no rule refuses."""
        model = self._model_of(subject)
        candidates = (
            None if self._planner is None else selectable_candidates(catalog, self._planner, subject.namespace, base)
        )
        scope = catalog.in_scope(subject.namespace) if candidates is None else candidates
        rows = self._judge_in_scope(subject, base, scope)
        return self._selection(subject, base, model, scope, rows, catalog if candidates is not None else None)

    def effective(self, catalog: Catalog, isvc: InferenceService, mode: str = "v1.3") -> Effective:
        """The mode each declared component runs in, with the runtime OME uses, and what refuses them."""
        subject, base, errors = self.review(catalog, isvc, mode)
        choice: Choice | None = None
        if isvc.runtime is not None:
            resolution = self.resolve_reviewed(catalog, subject, base, errors, mode)
            if resolution.verdict is not None:
                choice = _named_choice(resolution.verdict, resolution.entry_index, subject.model is not None)
        elif not errors and subject.model is not None:
            selection = self.select_reviewed(catalog, subject, base)
            choice = self._selected_choice(selection.ranking) if selection.ranking else None
            errors.extend([selection.refusal] if selection.refusal else [])
        runtime = choice.chosen.runtime if choice else None
        return self._effective_on(subject, base, runtime, errors, choice)

    def decide(self, catalog: Catalog, isvc: InferenceService, mode: str = "v1.3") -> Decision:
        """The whole decision: Resolve when the InferenceService names its runtime, else Select;
        then, when a runtime can be used, Effective on that runtime (decided once, not again)."""
        subject, base, refusals = self.review(catalog, isvc, mode)
        if isvc.runtime is not None:
            resolution = self.resolve_reviewed(catalog, subject, base, refusals, mode)
            if resolution.refusal is not None or resolution.runtime is None:
                return Decision(resolution, None, None)
            return Decision(resolution, None, self._effective_on(subject, base, resolution.runtime, list(refusals)))
        selection = Selection((), refusals[0], (), ()) if refusals else self.select_reviewed(catalog, subject, base)
        if not selection.ranking:
            return Decision(None, selection, None)
        return Decision(None, selection, self._effective_on(subject, base, selection.ranking[0].runtime, []))

    # -- judging --------------------------------------------------------------------------

    def _admission(self, subject: Subject, base: Record) -> list[Refusal]:
        """The request's refusals in rule order: request rules speak when there is an
        InferenceService, model rules when a model is referenced."""
        engine, policy = self.revision.engine, self.policy
        fired: list[Rule] = []
        if subject.isvc is not None:
            fired.extend(engine.fire(REQUEST, [base])[0])
        if subject.model_ref is not None or subject.model is not None:
            fired.extend(engine.fire(MODEL, [base])[0])
        return [refusal(policy, r, base) for r in sorted(fired, key=lambda r: r.order) if r.effect == "refuse"]

    def _judge(self, subject: Subject, base: Record, runtimes: Sequence[ServingRuntime], named: bool) -> list[Verdict]:
        """One verdict per runtime, in the order given; each scope's records go to the engine in one batch."""
        engine = self.revision.engine
        scoring = self.policy.scoring
        model = subject.model
        facts = self.facts
        per_runtime = [facts.entries(model, rt, scoring) if model else () for rt in runtimes]
        records = [
            facts.runtime_record(subject, base, rt, entries, scoring, named)
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
            out.append(self._verdict(subject, runtime, record, hits, mine, named))
        return out

    def _judge_plain(self, subject: Subject, base: Record, runtimes: Sequence[ServingRuntime]) -> list[RuntimeVerdict]:
        return list(map(RuntimeVerdict, runtimes, self._judge(subject, base, runtimes, named=False)))

    def _verdicts_in_scope(
        self, subject: Subject, base: Record, runtimes: Sequence[ServingRuntime]
    ) -> tuple[list[Verdict], KeptRows | None]:
        """As ``_judge`` (named=False); with shortcuts each shape of runtime is judged once and its
        verdict kept (decision/verdict_cache.py), so a verdict may have been judged for another
        runtime of its shape."""
        if self._shared is None:
            return self._judge(subject, base, runtimes, named=False), None
        key = self._shared.request_key(subject, base, named=False)
        return self._shared.judged(key, runtimes, lambda todo: self._judge(subject, base, todo, named=False))

    def _judge_in_scope(
        self, subject: Subject, base: Record, runtimes: Sequence[ServingRuntime]
    ) -> list[RuntimeVerdict]:
        verdicts, _ = self._verdicts_in_scope(subject, base, runtimes)
        return list(map(RuntimeVerdict, runtimes, verdicts))

    def _verdict(
        self,
        subject: Subject,
        runtime: ServingRuntime,
        record: Record,
        fired: Fired,
        entries: list[tuple[Record, Fired]],
        named: bool,
    ) -> Verdict:
        policy = self.policy
        checks, _ = runtime_checks(policy, record, fired, entries)
        matched = policy.scoring.matched_entry([e for e, _ in entries], auto_selected=not named)
        matched_hits = next((hits for e, hits in entries if e["entry_index"] == matched), ())
        points = sum(r.points for r in (*fired, *matched_hits) if r.effect == "score")
        advisories: list[Reason] = [rule_reason(r, record) for r in fired if r.effect == "advise"]
        advisories += [
            rule_reason(r, e)
            for e, hits in entries
            if e["entry_index"] == matched
            for r in hits
            if r.effect == "advise"
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

    # -- building answers -----------------------------------------------------------------

    @staticmethod
    def _model_of(subject: Subject) -> BaseModel:
        if subject.model is None:
            why = "an InferenceService without spec.model names its runtime"
            raise InvalidInput("spec.model", f"is required to select a runtime ({why})")
        return subject.model

    def _selection(
        self,
        subject: Subject,
        base: Record,
        model: BaseModel,
        scope: Sequence[ServingRuntime],
        rows: Sequence[RuntimeVerdict],
        narrowed: Catalog | None,
    ) -> Selection:
        """Select's answer from the verdicts of ``scope``; ``narrowed``: the catalog whose whole
        scope ``scope`` is a part of (the candidates), which OME's message speaks of when
        nothing is selectable."""
        isvc = subject.isvc
        assert isvc is not None
        ranking = rank(rows, self.policy.ranking)
        if ranking:
            values = {"runtime_name": ranking[0].runtime.meta.name, "model_name": model.meta.name}
            # The admission webhook speaks only for InferenceServices with an engine section, and
            # selects nothing for an engine with a complete runner of its own
            speaks = "engine" in isvc.components and not base["isvc_full_runner"]
            warnings = (templates.render(self.policy.messages["auto_selected"], values),) if speaks else ()
            return Selection(tuple(ranking), None, warnings, ())
        if narrowed is not None:  # nothing selectable: OME's message speaks of every runtime in scope
            scope = narrowed.in_scope(subject.namespace)
            rows = self._judge_in_scope(subject, base, scope)
        return self._none_selectable(base, scope, rows)

    def _none_selectable(
        self, base: Record, scope: Sequence[ServingRuntime], rows: Sequence[RuntimeVerdict]
    ) -> Selection:
        policy = self.policy
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
        return Selection((), found, (), excluded)

    def _explain(self, catalog: Catalog, subject: Subject, base: Record, model: BaseModel) -> Explanation:
        scope = catalog.in_scope(subject.namespace)
        verdicts, kept = self._verdicts_in_scope(subject, base, scope)
        return Explanation(model, format_label(model), scope, verdicts, kept)

    def _selected_choice(self, ranking: Sequence[RuntimeVerdict]) -> Choice:
        top = ranking[0]
        runner_up = ranking[1] if len(ranking) > 1 else None
        decided = deciding_key(top, runner_up, self.policy.ranking) if runner_up else None
        return Choice(top, False, top.entry_index, True, top.advisories, len(ranking), runner_up, decided)

    def _effective_on(
        self,
        subject: Subject,
        base: Record,
        runtime: ServingRuntime | None,
        errors: list[Refusal],
        choice: Choice | None = None,
    ) -> Effective:
        """Effective's answer once the runtime OME uses is known; ``errors`` are the request's."""
        policy = self.policy
        isvc = subject.isvc
        assert isvc is not None
        if runtime is not None:
            record = self.facts.runtime_record(subject, base, runtime, (), policy.scoring, isvc.runtime is not None)
        else:
            record = {**self.neutral_runtime, **base}
        components = component_records(record, isvc, runtime)
        fired = self.revision.engine.fire(COMPONENT, components)
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
        backends = self._backends(subject, base, runtime, record, isvc.runtime is not None) if runtime else ()
        return Effective(runtime, tuple(modes), tuple(errors), backends, choice)

    def _backends(
        self, subject: Subject, base: Record, runtime: ServingRuntime, record: Record, named: bool
    ) -> tuple[BackendEffect[Any], ...]:
        """What takes effect in the runtime's engine by each backend it runs (``record``: the
        runtime's, with its engine facts); the runtime is judged (for the refusal and the
        advisories) only when it runs one."""
        isvc, model = subject.isvc, subject.model
        running = [b for b in self.backends if b.runs(record)]
        if not running:
            return ()
        verdict = self._judge(subject, base, [runtime], named)[0] if model else None
        check = verdict.when_named(BLOCK) if verdict else None
        found = check.reason() if check else None
        advisories = verdict.advisories if verdict else ()
        return tuple(BackendEffect(b, b.effective(runtime, isvc, model, found), found, advisories) for b in running)


def _subject(catalog: Catalog, isvc: InferenceService, mode: str = "v1.3") -> Subject:
    ref = isvc.model
    model = catalog.models.get(make_key(ref.kind, isvc.meta.namespace, ref.name)) if ref else None
    named = lookup(catalog, isvc, mode) is not None if isvc.runtime else False
    return Subject(isvc.meta.namespace, isvc, model, ref, named, catalog.classes())


def _missing_model(refusals: Sequence[Refusal], ref: ModelRef, field: str) -> InvalidInput:
    """Explaining a model that does not exist is bad input naming ``field``, in the policy's words:
    the refusal about the model (spec.model.name), not another the request also has."""
    about = next((r for r in refusals if r.field == "spec.model.name" and r.message), None)
    return InvalidInput(field, about.message if about else f"{ref.kind} {ref.name} not found")


def _listed(items: Sequence[str], separator: str) -> str:
    length = 0
    for i, item in enumerate(items):
        length += len(item) + len(separator)
        if length > LISTED_TEXT_LIMIT:
            return separator.join([*items[:i], f"… and {len(items) - i:,} more"])
    return separator.join(items)


def _named_choice(verdict: RuntimeVerdict, entry_index: int, with_model: bool) -> Choice:
    if not with_model:  # OME does no model work: there is no support to declare
        return Choice(verdict, True, entry_index, True, ())
    said = (verdict.compat_reason,) if verdict.compat_reason is not None else ()
    return Choice(verdict, True, entry_index, verdict.compatible, (*said, *verdict.advisories))

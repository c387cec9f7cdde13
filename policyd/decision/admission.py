"""OME's admission webhooks: whether an InferenceService, ServingRuntime or ClusterServingRuntime
is admitted, the denial in OME's words, the warnings kubectl prints, what the review looked up
and did not find; and the mutating webhook's defaults as a JSON Patch. Every check is a rule;
an InferenceService is reviewed by the decision Select and Resolve make."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from policyd.catalog.snapshot import Catalog, Key, make_key
from policyd.decision.decider import Decider
from policyd.decision.lookup import lookup_keys
from policyd.decision.runtime_alone import catalog_refusals
from policyd.facts.admission import (
    accelerator_class_keys,
    admit_pair_records,
    admit_runtime_record,
    unknown_accelerator_classes,
)
from policyd.policy import templates
from policyd.policy.outcomes import Refusal, refusal
from policyd.policy.revision import Revision
from policyd.records import ADMIT_PAIR, ADMIT_RUNTIME, REQUEST
from policyd.resources.objects import InferenceService, ServingRuntime

# the facts a lookup of the catalog gives: a denial by a rule reading one depends on what was not found
_RUNTIME_FOUND, _MODEL_FOUND = "named_runtime_found", "model_found"
_CLASSES_UNKNOWN = ("admit_unknown_accelerator_classes", "admit_unknown_accelerator_classes_text")


@dataclass(frozen=True)
class Admission:
    denial: Refusal | None
    warnings: tuple[str, ...] = ()
    missing: tuple[Key, ...] = ()

    @property
    def allowed(self) -> bool:
        return self.denial is None


def _reads(revision: Revision, denial: Refusal, facts: Sequence[str]) -> bool:
    """Whether the rule that denied tests any of ``facts``."""
    rule = next((r for r in revision.policy.rules if r.id == denial.rule_id), None)
    return rule is not None and not rule.fields.isdisjoint(facts)


def _missing_lookups(catalog: Catalog, isvc: InferenceService) -> list[Key]:
    """The named runtime's keys in lookup order, and the base model's, that the catalog lacks."""
    keys = lookup_keys(isvc)
    if isvc.model is not None:
        keys.append(make_key(isvc.model.kind, isvc.meta.namespace, isvc.model.name))
    return [k for k in keys if catalog.get(k) is None]


def _denied(revision: Revision, catalog: Catalog, isvc: InferenceService, denial: Refusal) -> Admission:
    looked_up = _reads(revision, denial, (_RUNTIME_FOUND, _MODEL_FOUND))
    return Admission(denial, missing=tuple(_missing_lookups(catalog, isvc)) if looked_up else ())


def admit_isvc(catalog: Catalog, isvc: InferenceService, decider: Decider) -> Admission:
    """OME's InferenceService webhook: its request checks always, the runtime and the model
    (Resolve for a named runtime, else Select) only with spec.engine (v1.3). Admitted, it warns
    of what the request's advise rules say of it, then of what the runtime's decision says."""
    engine = "engine" in isvc.components
    revision = decider.revision
    subject, base, refusals = decider.review(catalog, isvc)
    advisories = tuple(
        templates.render(r.reason, base)
        for r in revision.engine.fire(REQUEST, [base])[0]  # memoised: review fired them already
        if r.effect == "advise" and r.admission and (engine or not r.needs_engine)
    )

    def admitted(warnings: Sequence[str] = ()) -> Admission:
        return Admission(None, (*advisories, *warnings))

    refusals = [r for r in refusals if r.admission and (engine or not r.needs_engine)]
    if not engine:
        return _denied(revision, catalog, isvc, refusals[0]) if refusals else admitted()
    if isvc.runtime is not None:
        resolution = decider.resolve_reviewed(catalog, subject, base, refusals, admission=True)
        if resolution.refusal is not None:
            return _denied(revision, catalog, isvc, resolution.refusal)
        return admitted([resolution.warning] if resolution.warning else [])
    if base["isvc_full_runner"]:  # the engine runs its own runner: OME selects nothing
        refusals = [r for r in refusals if not r.in_selection]
        return _denied(revision, catalog, isvc, refusals[0]) if refusals else admitted()
    if refusals and not refusals[0].in_selection:
        return _denied(revision, catalog, isvc, refusals[0])
    if subject.model is None:
        return admitted()
    if refusals:
        return _no_runtime(revision, subject.model.meta.name, refusals[0])
    selection = decider.select_reviewed(catalog, subject, base)
    if selection.refusal is None:
        return admitted(selection.warnings)
    return _no_runtime(revision, subject.model.meta.name, selection.refusal)


def _no_runtime(revision: Revision, model_name: str, found: Refusal) -> Admission:
    """The webhook's denial when selecting a runtime failed, around what the selection said."""
    values = {"model_name": model_name, "error": found.message}
    message = templates.render(revision.policy.messages["admission_no_runtime"], values)
    return Admission(Refusal(found.kind, message, found.field, found.condition_reason, message, "", found.order))


def admit_runtime(catalog: Catalog, runtime: ServingRuntime, decider: Decider) -> Admission:
    """OME's ServingRuntime / ClusterServingRuntime webhook: what the catalog refuses in the
    runtime itself, the admission rules about it alone, then the first existing runtime (in
    OME's order) an admission rule about the pair refuses; the first in rule order denies.
    Admitted, it warns of what the admission rules that advise say, in OME's order, once each."""
    revision = decider.revision
    policy, engine = revision.policy, revision.engine
    candidates = [r for r in catalog_refusals(decider, [runtime])[0] if r.admission]
    record = admit_runtime_record(runtime, catalog, decider.facts)
    fired = engine.fire(ADMIT_RUNTIME, [record])[0]
    candidates += [refusal(policy, r, record) for r in fired if r.effect == "refuse"]
    warnings = [templates.render(r.reason, record) for r in fired if r.effect == "advise"]
    pairs = admit_pair_records(runtime, record, catalog, decider.facts)
    denied_pair = False
    for pair, hits in zip(pairs, engine.fire(ADMIT_PAIR, pairs), strict=True):
        warnings += [templates.render(r.reason, pair) for r in hits if r.effect == "advise"]
        first = next((r for r in hits if r.effect == "refuse"), None)
        if first is not None and not denied_pair:
            candidates.append(refusal(policy, first, pair))
            denied_pair = True
    if not candidates:
        return Admission(None, tuple(dict.fromkeys(warnings)))
    denial = min(candidates, key=lambda r: r.order)
    missing: tuple[Key, ...] = ()
    if _reads(revision, denial, _CLASSES_UNKNOWN):
        missing = tuple(accelerator_class_keys(unknown_accelerator_classes(runtime, catalog)))
    return Admission(denial, missing=missing)


def _pointer(*tokens: str) -> str:
    """A JSON Pointer (RFC 6901) of ``tokens``."""
    return "".join("/" + t.replace("~", "~0").replace("/", "~1") for t in tokens)


def default_patch(isvc: InferenceService, revision: Revision) -> str:
    """OME's mutating webhook: the policy's defaults for each component the InferenceService
    declares, as RFC 6902 operations (JSON text; "[]" when nothing is defaulted)."""
    spec = isvc.raw.get("spec")
    ops: list[dict[str, Any]] = []
    for default in revision.policy.defaults:
        component = spec.get(default.component) if isinstance(spec, Mapping) else None
        if not isinstance(component, Mapping):
            continue  # OME defaults only the components the InferenceService declares
        value = component.get(default.field)
        unset = value is None or (default.when == "unset_or_zero" and value == 0)
        if not unset:
            continue
        op = "replace" if default.field in component else "add"
        ops.append({"op": op, "path": _pointer("spec", default.component, default.field), "value": default.value})
    return json.dumps(ops, separators=(",", ":"))

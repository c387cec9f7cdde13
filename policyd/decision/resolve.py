"""Resolve: the runtime an InferenceService names, with OME's warnings, events and rejections."""

from __future__ import annotations

from dataclasses import dataclass

from policyd.catalog.snapshot import Catalog
from policyd.decision.admission import Rejection, model_refusal, runtime_refusals, scaling_refusals
from policyd.decision.evaluation import RuntimeEvaluation, evaluate
from policyd.decision.subjects import find_model
from policyd.errors import InvalidInput
from policyd.facts.derive import Subject
from policyd.policy import templates
from policyd.policy.revision import Revision
from policyd.resources.objects import InferenceService, ServingRuntime

LOOKUPS = ("v1.3", "v1.2.2")


@dataclass(frozen=True)
class Resolution:
    runtime: ServingRuntime | None
    evaluation: RuntimeEvaluation | None
    warning: str = ""
    event: str = ""
    rejection: Rejection | None = None
    entry_index: int = -1


def lookup(catalog: Catalog, isvc: InferenceService, mode: str = "v1.3") -> ServingRuntime | None:
    """v1.3: kind ClusterServingRuntime (default) looks at cluster scope, then the
    namespace; kind ServingRuntime only the namespace. v1.2.2: namespace first, then
    cluster scope, kind ignored."""
    ref = isvc.runtime
    if ref is None:
        return None
    namespace = isvc.meta.namespace
    if mode not in LOOKUPS:
        raise InvalidInput("lookup", f"unknown lookup {mode!r} (one of {', '.join(LOOKUPS)})")
    in_namespace = catalog.runtime("ServingRuntime", namespace, ref.name)
    at_cluster = catalog.runtime("ClusterServingRuntime", "", ref.name)
    if mode == "v1.2.2":
        return in_namespace or at_cluster
    if ref.kind == "ServingRuntime":
        return in_namespace
    return at_cluster or in_namespace


def resolve(catalog: Catalog, isvc: InferenceService, revision: Revision, mode: str = "v1.3") -> Resolution:
    messages = revision.policy.messages
    if isvc.runtime is None:
        if isvc.model is None:
            return Resolution(None, None, rejection=Rejection(messages["no_model_no_runtime"], "spec.runtime.name"))
        raise InvalidInput("spec.runtime.name", "is required to resolve a named runtime (use Select otherwise)")
    names = {"runtime_name": isvc.runtime.name, "namespace": isvc.meta.namespace}
    runtime = lookup(catalog, isvc, mode)
    if runtime is None:
        condition = templates.render(messages["runtime_not_found_condition"], names)
        # The webhook checks that the runtime exists only when there is a base model.
        admission = templates.render(messages["runtime_not_found"], names) if isvc.model else ""
        return Resolution(None, None, rejection=Rejection(admission, "spec.runtime.name", "RuntimeNotFound", condition))
    if runtime.disabled:
        text = templates.render(messages["runtime_disabled"], {"runtime_name": runtime.meta.name})
        return Resolution(runtime, None, rejection=Rejection(text, "spec.runtime.name"))
    refusals = runtime_refusals(runtime, messages) + scaling_refusals(isvc, runtime, messages)
    if refusals:
        return Resolution(runtime, None, rejection=refusals[0])
    if isvc.model is None:
        # No model: OME skips all model work, so there is nothing to check support against.
        return Resolution(runtime, None)
    try:
        model = find_model(catalog, isvc.model, isvc.meta.namespace, revision, "spec.model.name")
    except InvalidInput as err:
        # The webhook rejects an InferenceService whose base model doesn't exist.
        return Resolution(runtime, None, rejection=Rejection(err.message, err.field))
    if (refusal := model_refusal(model, messages)) is not None:
        return Resolution(runtime, None, rejection=refusal)
    subject = Subject(model=model, isvc=isvc, namespace=isvc.meta.namespace)
    evaluation = evaluate(revision, subject, [runtime])[0]
    # A named runtime counts every entry, autoSelect or not.
    entry = evaluation.compatible_entry_index if evaluation.compatible else evaluation.name_matched_entry
    if evaluation.compatible or evaluation.compat_reason is None:
        return Resolution(runtime, evaluation, entry_index=entry)
    values = {
        "runtime_name": runtime.meta.name,
        "model_name": model.meta.name,
        "detail": evaluation.compat_detail(),
    }
    if evaluation.refused_when_named:
        text = templates.render(messages["named_refused"], {**values, "reason": evaluation.compat_reason.message})
        return Resolution(runtime, evaluation, rejection=Rejection(text, "spec.runtime.name", component="engine"))
    warning = templates.render(messages["named_warning"], values) if "engine" in isvc.components else ""
    event = templates.render(messages["named_event"], values) if isvc.runtime.auto_sync else ""
    return Resolution(runtime, evaluation, warning=warning, event=event, entry_index=entry)

"""Select: the auto-selectable runtimes best first, or OME's "no runtime found" message."""

from __future__ import annotations

from dataclasses import dataclass

from policyd.catalog.snapshot import Catalog
from policyd.decision.admission import model_refusal
from policyd.decision.evaluation import RuntimeEvaluation, evaluate
from policyd.decision.ranking import rank
from policyd.decision.subjects import isvc_subject
from policyd.policy import templates
from policyd.policy.revision import Revision
from policyd.resources.objects import InferenceService


@dataclass(frozen=True)
class Selection:
    ranking: tuple[RuntimeEvaluation, ...]
    error: str
    warnings: tuple[str, ...]
    excluded: tuple[RuntimeEvaluation, ...]  # the runtimes OME's message lists; only when nothing is selectable


def select(catalog: Catalog, isvc: InferenceService, revision: Revision) -> Selection:
    subject = isvc_subject(catalog, isvc, revision)
    messages = revision.policy.messages
    if (refusal := model_refusal(subject.model, messages)) is not None:
        return Selection((), refusal.message, (), ())
    scope = catalog.in_scope(subject.namespace)
    evaluations = evaluate(revision, subject, scope)
    ranking = rank(evaluations, revision.policy.ranking)
    if ranking:
        top = ranking[0]
        values = {"runtime_name": top.runtime.meta.name, "model_name": subject.model.meta.name}
        # The admission webhook speaks only for InferenceServices with an engine section.
        warnings = (templates.render(messages["auto_selected"], values),) if "engine" in isvc.components else ()
        return Selection(tuple(ranking), "", warnings, ())
    excluded = tuple(e for e in evaluations if e.reason is not None and e.reason.effect in ("exclude", "reject"))
    namespaced = sum(1 for r in scope if r.namespaced)
    error = templates.render(
        messages["no_runtime"],
        {
            "model_name": subject.model.meta.name,
            "model_format_name": subject.model.format.name if subject.model.format else "",
            "namespace": subject.namespace,
            "checked": len(scope),
            "namespaced": namespaced,
            "cluster": len(scope) - namespaced,
        },
    )
    if excluded:
        items = [
            templates.render(
                messages["excluded_item"], {"runtime_name": e.runtime.meta.name, "reason": e.reason.message}
            )
            for e in excluded
            if e.reason is not None
        ]
        error += templates.render(messages["excluded_runtimes"], {"list": messages["excluded_separator"].join(items)})
    return Selection((), error, (), excluded)

"""Explain: every runtime in scope with its verdict and first reason."""

from __future__ import annotations

from dataclasses import dataclass

from policyd.catalog.snapshot import Catalog
from policyd.decision.evaluation import RuntimeEvaluation, evaluate
from policyd.decision.subjects import find_model, isvc_subject
from policyd.facts.derive import Subject
from policyd.policy.revision import Revision
from policyd.resources.objects import InferenceService, ModelRef
from policyd.semantics.format_label import format_label


@dataclass(frozen=True)
class Explanation:
    subject: Subject
    model_format: str
    runtimes: tuple[RuntimeEvaluation, ...]


def explain_subject(catalog: Catalog, subject: Subject, revision: Revision) -> Explanation:
    evaluations = evaluate(revision, subject, catalog.in_scope(subject.namespace))
    return Explanation(subject, format_label(subject.model), tuple(evaluations))


def explain_isvc(catalog: Catalog, isvc: InferenceService, revision: Revision) -> Explanation:
    return explain_subject(catalog, isvc_subject(catalog, isvc, revision), revision)


def explain_model(catalog: Catalog, ref: ModelRef, namespace: str, revision: Revision) -> Explanation:
    """As ``kubectl ome runtime explain --model``: no InferenceService, so no mode or accelerator request."""
    model = find_model(catalog, ref, namespace, revision, "model.name")
    return explain_subject(catalog, Subject(model=model, isvc=None, namespace=namespace), revision)

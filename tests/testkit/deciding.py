"""A rules revision's answers for one request, each from a Decider of its own (tests that ask
one question of a catalog; a server keeps one Decider per revision)."""

from __future__ import annotations

from policyd.catalog.snapshot import Catalog
from policyd.decision.answers import Effective, Explanation, Resolution, Selection
from policyd.decision.decider import Decider
from policyd.policy.revision import Revision
from policyd.resources.objects import InferenceService, ModelRef


def select(catalog: Catalog, isvc: InferenceService, revision: Revision) -> Selection:
    return Decider(revision).select(catalog, isvc)


def explain_isvc(catalog: Catalog, isvc: InferenceService, revision: Revision) -> Explanation:
    return Decider(revision).explain_isvc(catalog, isvc)


def explain_model(catalog: Catalog, ref: ModelRef, namespace: str, revision: Revision) -> Explanation:
    return Decider(revision).explain_model(catalog, ref, namespace)


def resolve(catalog: Catalog, isvc: InferenceService, revision: Revision, mode: str = "v1.3") -> Resolution:
    return Decider(revision).resolve(catalog, isvc, mode)


def effective(catalog: Catalog, isvc: InferenceService, revision: Revision, mode: str = "v1.3") -> Effective:
    return Decider(revision).effective(catalog, isvc, mode)

"""Find what a request is about in the catalog; missing pieces are bad input naming the field."""

from __future__ import annotations

from policyd.catalog.snapshot import Catalog, make_key
from policyd.errors import InvalidInput
from policyd.facts.derive import Subject
from policyd.policy import templates
from policyd.policy.revision import Revision
from policyd.resources.objects import BaseModel, InferenceService, ModelRef


def find_model(catalog: Catalog, ref: ModelRef, namespace: str, revision: Revision, field: str) -> BaseModel:
    model = catalog.models.get(make_key(ref.kind, namespace, ref.name))
    if model is None:
        text = templates.render(
            revision.policy.messages["model_not_found"],
            {"model_name": ref.name, "model_kind": ref.kind, "namespace": namespace},
        )
        raise InvalidInput(field, text)
    return model


def isvc_subject(catalog: Catalog, isvc: InferenceService, revision: Revision) -> Subject:
    """The subject of selecting a runtime for ``isvc``: it must name a base model."""
    if isvc.model is None:
        raise InvalidInput(
            "spec.model",
            "is required to select a runtime (an InferenceService without spec.model must name its runtime)",
        )
    model = find_model(catalog, isvc.model, isvc.meta.namespace, revision, "spec.model.name")
    return Subject(model=model, isvc=isvc, namespace=isvc.meta.namespace)

"""Diffusion-pipeline matching: an entry's ``diffusionPipeline`` against the
model's. Each field the entry sets is a requirement; values compare as exact,
case-sensitive strings; only the first mismatch is reported."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from policyd.resources.objects import PIPELINE_COMPONENTS, Pipeline, PipelineComponent

NIL = "<nil>"


@dataclass(frozen=True)
class PipelineMismatch:
    # pipeline-missing | class | component-missing | library | type | additional-none | additional-missing
    kind: str
    component: str = ""
    model_value: str = ""
    runtime_value: str = ""


def _component_mismatch(
    name: str, required: PipelineComponent, have: Mapping[str, PipelineComponent], missing_kind: str
) -> PipelineMismatch | None:
    model = have.get(name)
    if model is None:
        return PipelineMismatch(missing_kind, name)
    if required.library and model.library != required.library:
        return PipelineMismatch("library", name, model.library or "", required.library)
    if required.type and model.type != required.type:
        return PipelineMismatch("type", name, model.type or "", required.type)
    return None


def first_mismatch(model: Pipeline | None, entry: Pipeline | None) -> PipelineMismatch | None:
    """The first requirement of ``entry`` that ``model`` fails, or None when it passes."""
    if entry is None:
        return None
    if model is None:
        return PipelineMismatch("pipeline-missing")
    if entry.class_name and model.class_name != entry.class_name:
        return PipelineMismatch("class", "className", model.class_name or NIL, entry.class_name)
    for name in PIPELINE_COMPONENTS:
        required = entry.components.get(name)
        if required is not None and (
            found := _component_mismatch(name, required, model.components, "component-missing")
        ):
            return found
    if entry.additional:
        if not model.additional:
            return PipelineMismatch("additional-none", "additionalComponents")
        for key, required in entry.additional.items():
            if found := _component_mismatch(key, required, model.additional, "additional-missing"):
                return found
    return None

"""Where each component's deployment mode comes from."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from policyd.resources.deployment_modes import DEFAULT_MODE, MODE_ANNOTATION, MODES


def annotated_mode(annotations: Mapping[str, str] | None) -> str:
    """The mode an annotation map declares; a misspelled value counts as no mode."""
    value = (annotations or {}).get(MODE_ANNOTATION, "")
    return value if value in MODES else ""


@dataclass(frozen=True)
class EffectiveMode:
    component: str
    mode: str
    source: str  # which rule set it: see effective_mode


def effective_mode(
    component: str,
    isvc_component_annotations: Mapping[str, str] | None,
    runtime_component_annotations: Mapping[str, str] | None,
    spec_mode: str,
) -> EffectiveMode:
    """The mode a component runs in: its own annotation in the InferenceService,
    else the runtime's annotation for that component (merged in), else
    ``spec.deploymentMode``, else the default."""
    own = annotated_mode(isvc_component_annotations)
    if own:
        return EffectiveMode(component, own, f"InferenceService spec.{component}.annotations[{MODE_ANNOTATION}]")
    from_runtime = annotated_mode(runtime_component_annotations)
    if from_runtime:
        return EffectiveMode(component, from_runtime, f"runtime {component}Config.annotations[{MODE_ANNOTATION}]")
    if spec_mode:
        return EffectiveMode(component, spec_mode, "InferenceService spec.deploymentMode")
    return EffectiveMode(component, DEFAULT_MODE, "default")


def requested_mode(isvc_component_annotations: Mapping[str, str] | None, spec_mode: str) -> str:
    """The mode an InferenceService asks of a component when matching runtimes:
    the component's annotation, else ``spec.deploymentMode``; empty for none."""
    return annotated_mode(isvc_component_annotations) or spec_mode

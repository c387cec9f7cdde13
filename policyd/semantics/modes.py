"""Deployment modes and where each component's mode comes from."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from policyd.errors import InvalidInput

MODE_ANNOTATION = "ome.io/deploymentMode"
MODES = ("RawDeployment", "OMENative", "MultiNode", "VirtualDeployment")
DEFAULT_MODE = "RawDeployment"
COMPONENTS = ("engine", "decoder", "router")


def annotated_mode(annotations: Mapping[str, str] | None) -> str:
    """The mode an annotation map declares; a misspelled value counts as no mode."""
    value = (annotations or {}).get(MODE_ANNOTATION, "")
    return value if value in MODES else ""


def check_mode(value: str, field: str) -> str:
    """A mode given in a typed field (``spec.deploymentMode``); unknown values are refused."""
    if value and value not in MODES:
        raise InvalidInput(field, f"unknown deployment mode {value!r} (one of {', '.join(MODES)})")
    return value


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

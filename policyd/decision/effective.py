"""Effective deployment modes of the components an InferenceService declares."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from policyd.decision.admission import Rejection
from policyd.policy import templates
from policyd.resources.objects import InferenceService, ServingRuntime
from policyd.semantics.modes import COMPONENTS, EffectiveMode, effective_mode, requested_mode

OMENATIVE = "OMENative"


@dataclass(frozen=True)
class Effective:
    modes: tuple[EffectiveMode, ...]
    errors: tuple[Rejection, ...]


def effective_modes(isvc: InferenceService, runtime: ServingRuntime | None, messages: Mapping[str, str]) -> Effective:
    runtime_annotations = runtime.components if runtime else {}
    modes = tuple(
        effective_mode(c, isvc.components[c], runtime_annotations.get(c), isvc.deployment_mode)
        for c in COMPONENTS
        if c in isvc.components
    )
    errors = []
    if "engine" in isvc.components and "decoder" in isvc.components:
        engine = requested_mode(isvc.components["engine"], isvc.deployment_mode)
        decoder = requested_mode(isvc.components["decoder"], isvc.deployment_mode)
        if OMENATIVE in (engine, decoder) and engine != decoder:
            text = templates.render(
                messages["omenative_mismatch"], {"engine_mode": engine or "none", "decoder_mode": decoder or "none"}
            )
            # name the side that does not ask for OMENative
            side = "decoder" if engine == OMENATIVE else "engine"
            errors.append(Rejection(text, f"spec.{side}.annotations[ome.io/deploymentMode]", component=side))
    for mode in modes:
        if mode.component == "router" and mode.mode == "MultiNode":
            text = templates.render(messages["router_multinode"], {"mode": mode.mode})
            errors.append(Rejection(text, "spec.router", component="router"))
    return Effective(modes, tuple(errors))

"""Admission checks that are policy decisions: refusals with their field paths."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from policyd.policy import templates
from policyd.resources.objects import BaseModel, InferenceService, ServingRuntime

INDEPENDENT = "Independent"


@dataclass(frozen=True)
class Rejection:
    message: str
    field: str = ""
    condition_reason: str = ""
    condition_message: str = ""
    component: str = ""


def _scaling_mode(spec: Mapping[str, Any]) -> str | None:
    policy = spec.get("scalingPolicy")
    if not isinstance(policy, Mapping):
        return None
    mode = policy.get("mode")
    return str(mode) if mode else INDEPENDENT


def model_refusal(model: BaseModel, messages: Mapping[str, str]) -> Rejection | None:
    """What the webhook refuses in the base model an InferenceService uses."""
    values = {"model_name": model.meta.name}
    if model.disabled:
        return Rejection(templates.render(messages["model_disabled"], values), "spec.model.name")
    if model.distribution == "Sharded":
        return Rejection(templates.render(messages["model_sharded"], values), "spec.model.name")
    return None


def runtime_refusals(runtime: ServingRuntime, messages: Mapping[str, str]) -> list[Rejection]:
    """What the webhook refuses in a runtime itself."""
    spec = runtime.raw.get("spec") or {}
    out = []
    if isinstance(spec, Mapping) and spec.get("autoscalerPolicyRef") is not None:
        text = templates.render(messages["autoscaler_in_runtime"], {"runtime_name": runtime.meta.name})
        out.append(Rejection(text, "spec.autoscalerPolicyRef"))
    return out


def scaling_refusals(
    isvc: InferenceService, runtime: ServingRuntime | None, messages: Mapping[str, str]
) -> list[Rejection]:
    """scalingPolicy: the InferenceService's replaces the runtime's; only Independent is implemented."""
    isvc_spec = isvc.raw.get("spec") or {}
    mode = _scaling_mode(isvc_spec) if isinstance(isvc_spec, Mapping) else None
    field = "spec.scalingPolicy.mode"
    if mode is None and runtime is not None:
        runtime_spec = runtime.raw.get("spec") or {}
        mode = _scaling_mode(runtime_spec) if isinstance(runtime_spec, Mapping) else None
        field = f"{runtime.kind}/{runtime.meta.name} spec.scalingPolicy.mode"
    if mode is None or mode == INDEPENDENT:
        return []
    return [Rejection(templates.render(messages["scaling_mode"], {"mode": mode, "field": field}), field)]

"""How a component scales: the replica counts OME's webhook defaults, and the autoscaler of a
RawDeployment component (reconcilers/autoscaler, reconcilers/hpa), chosen by the
``ome.io/autoscalerClass`` annotation: an HPA by default, none for ``external``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from policyd.clients.renderer.metadata import ComponentMeta
from policyd.errors import InvalidInput

AUTOSCALER_CLASS = "ome.io/autoscalerClass"
TARGET_UTILIZATION = "ome.io/targetUtilizationPercentage"
_DEFAULT_MAX_REPLICAS = {"engine": 3, "decoder": 3, "router": 2}  # the webhook's defaultEngine/Decoder/Router
_DEFAULT_UTILIZATION = 80


def with_replica_defaults(component_name: str, component: Mapping[str, Any]) -> dict[str, Any]:
    """The component with OME's webhook defaults where neither the InferenceService nor the
    runtime sets a count: minReplicas 1, maxReplicas 3 (2 for the router)."""
    out = dict(component)
    if out.get("minReplicas") is None:
        out["minReplicas"] = 1
    if not out.get("maxReplicas"):
        out["maxReplicas"] = _DEFAULT_MAX_REPLICAS[component_name]
    return out


def autoscalers(meta: ComponentMeta, labels: Mapping[str, str], component: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The autoscaler objects for a Deployment named ``meta.name``; ``labels`` are the Deployment's."""
    klass = meta.annotations.get(AUTOSCALER_CLASS, "hpa")
    if klass == "hpa":
        return [_hpa(meta, labels, component)]
    if klass == "external":
        return []
    field = f"annotations[{AUTOSCALER_CLASS}]"
    if klass == "keda":
        raise InvalidInput(field, "keda: the renderer does not make KEDA ScaledObjects; use hpa or external")
    raise InvalidInput(field, f"unknown autoscaler class type: {klass} (one of hpa, keda, external)")


def _hpa(meta: ComponentMeta, labels: Mapping[str, str], component: Mapping[str, Any]) -> dict[str, Any]:
    least = max(component.get("minReplicas") or 0, 1)
    metric = {
        "type": "Resource",
        "resource": {
            "name": component.get("scaleMetric") or "cpu",
            "target": {"type": "Utilization", "averageUtilization": _utilization(meta, component)},
        },
    }
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": meta.object(labels=labels),
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": meta.name},
            "minReplicas": least,
            "maxReplicas": max(component.get("maxReplicas") or 0, least),
            "metrics": [metric],
            "behavior": {},
        },
    }


def _utilization(meta: ComponentMeta, component: Mapping[str, Any]) -> int:
    text = meta.annotations.get(TARGET_UTILIZATION)
    if text is None:
        target = component.get("scaleTarget")
        return _DEFAULT_UTILIZATION if target is None else int(target)
    if not (text.isascii() and text.isdigit() and int(text) > 0):
        raise InvalidInput(f"annotations[{TARGET_UTILIZATION}]", f"must be a whole percentage above 0, got {text!r}")
    return int(text)

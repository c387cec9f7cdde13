"""What OME's InferenceService webhook reads besides the decision's facts: the name's format,
the engine's own runner, the autoscaler annotations (the keys of OME's pkg/constants)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from policyd.resources.objects import InferenceService

NAME = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
AUTOSCALER_CLASS = "ome.io/autoscalerClass"
AUTOSCALER_METRICS = "ome.io/metrics"
TARGET_UTILIZATION = "ome.io/targetUtilizationPercentage"
_ATOI = re.compile(r"[+-]?[0-9]+")  # strconv.Atoi: an optional sign, decimal digits
_INT64 = 2**63


def _image(node: Any, *path: str) -> bool:
    for key in path:
        node = node.get(key) if isinstance(node, Mapping) else None
    return isinstance(node, str) and node != ""


def full_runner(engine: Any) -> bool:
    """OME's hasFullRunnerConfig: engine.runner.image, or a leader and a worker each with a runner image."""
    if not isinstance(engine, Mapping):
        return False
    if _image(engine, "runner", "image"):
        return True
    if isinstance(engine.get("leader"), Mapping) and isinstance(engine.get("worker"), Mapping):
        return _image(engine, "leader", "runner", "image") and _image(engine, "worker", "runner", "image")
    return False


def _atoi(text: str) -> int | None:
    if not _ATOI.fullmatch(text):
        return None
    value = int(text)
    return value if -_INT64 <= value < _INT64 else None


def isvc_check_facts(isvc: InferenceService | None) -> dict[str, Any]:
    annotations = isvc.meta.annotations if isvc else {}
    spec = isvc.raw.get("spec") if isvc else None
    utilization = annotations.get(TARGET_UTILIZATION)
    parsed = _atoi(utilization) if utilization is not None else None
    return {
        "isvc_name_valid": isvc is None or NAME.fullmatch(isvc.meta.name) is not None,
        "isvc_full_runner": isinstance(spec, Mapping) and full_runner(spec.get("engine")),
        "isvc_autoscaler_class_set": AUTOSCALER_CLASS in annotations,
        "isvc_autoscaler_class": annotations.get(AUTOSCALER_CLASS, ""),
        "isvc_autoscaler_metric_set": AUTOSCALER_METRICS in annotations,
        "isvc_autoscaler_metric": annotations.get(AUTOSCALER_METRICS, ""),
        "isvc_target_utilization_set": utilization is not None,
        "isvc_target_utilization_integer": utilization is None or parsed is not None,
        "isvc_target_utilization": 80 if utilization is None else parsed or 0,
    }

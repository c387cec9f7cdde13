"""What OME's InferenceService webhook reads besides the decision's facts: the name's format,
the engine's own runner, the autoscaler annotations (the keys of OME's pkg/constants), and the
KEDA settings it checks for the keda class (spec.kedaConfig and KEDA's annotations)."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from policyd.resources.objects import InferenceService

NAME = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
AUTOSCALER_CLASS = "ome.io/autoscalerClass"
AUTOSCALER_METRICS = "ome.io/metrics"
TARGET_UTILIZATION = "ome.io/targetUtilizationPercentage"
KEDA_OPERATOR = "autoscaling.keda.sh/operator"
KEDA_THRESHOLD = "autoscaling.keda.sh/threshold"
KEDA_PROMETHEUS = "autoscaling.keda.sh/prometheus.serverAddress"
KEDA_AUTH_MODES = ("basic", "tls", "bearer", "custom")  # KEDA's authModes (OME's kedaValidAuthModes)
# strconv.ParseFloat of a decimal or hexadecimal number, "inf"/"infinity"/"nan", underscores only
# between digits of a prefixed number; Python's float() also takes spaces and bare underscores
_GO_FLOAT = re.compile(
    r"[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|0[xX](?:[0-9a-fA-F_]+\.?[0-9a-fA-F_]*|\.[0-9a-fA-F_]+)[pP][+-]?\d+"
    r"|[iI][nN][fF](?:[iI][nN][iI][tT][yY])?|[nN][aA][nN])"
)
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


def _go_float(text: str) -> bool:
    """Whether strconv.ParseFloat(text, 64) reads it (out of range is an error too)."""
    if not _GO_FLOAT.fullmatch(text):
        return False
    if "inf" in text.lower() or "nan" in text.lower():
        return True
    try:  # out of range is ParseFloat's error too
        value = float.fromhex(text.replace("_", "")) if "x" in text.lower() else float(text)
    except OverflowError:
        return False
    return math.isfinite(value)


def _address(text: str) -> tuple[str, bool, str]:
    """(scheme, a host is set, url.Parse's error or "") of a Prometheus server address."""
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in text):
        return "", False, f'parse "{text}": net/url: invalid control character in URL'
    if text.startswith(":"):
        return "", False, f'parse "{text}": missing protocol scheme'
    try:
        parts = urlsplit(text)
    except ValueError:  # an unclosed IPv6 host
        return "", False, f"parse \"{text}\": missing ']' in host"
    return parts.scheme.lower(), bool(parts.netloc.rpartition("@")[2]), ""


def _keda_facts(prefix: str, operator: str | None, threshold: str | None, address: str | None) -> dict[str, Any]:
    scheme, host, error = _address(address or "")
    return {
        f"{prefix}_operator_set": operator is not None,
        f"{prefix}_operator": operator or "",
        f"{prefix}_threshold_set": threshold is not None,
        f"{prefix}_threshold": threshold or "",
        f"{prefix}_threshold_number": threshold is None or _go_float(threshold),
        f"{prefix}_address_set": address is not None,
        f"{prefix}_address": address or "",
        f"{prefix}_address_error": error,
        f"{prefix}_address_scheme": scheme,
        f"{prefix}_address_host": address is None or host,
    }


def _set(config: Mapping[str, Any], key: str) -> str | None:
    """A kedaConfig string OME checks: only when set and not empty."""
    value = config.get(key)
    return value if isinstance(value, str) and value else None


def _keda(isvc: InferenceService | None) -> dict[str, Any]:
    """spec.kedaConfig's and KEDA's annotations' settings, as OME's validateKEDAConfig reads them."""
    annotations = isvc.meta.annotations if isvc else {}
    spec = isvc.raw.get("spec") if isvc else None
    config = spec.get("kedaConfig") if isinstance(spec, Mapping) else None
    config = config if isinstance(config, Mapping) else {}
    modes = [m.strip() for m in (_set(config, "authModes") or "").split(",") if m.strip()]
    unknown = [m for m in modes if m not in KEDA_AUTH_MODES]
    return {
        **_keda_facts(
            "isvc_keda_config",
            _set(config, "scalingOperator"),
            _set(config, "scalingThreshold"),
            _set(config, "promServerAddress"),
        ),
        **_keda_facts(
            "isvc_keda_annotation",
            annotations.get(KEDA_OPERATOR),
            annotations.get(KEDA_THRESHOLD),
            annotations.get(KEDA_PROMETHEUS),
        ),
        "isvc_keda_auth_mode_unknown": unknown[0] if unknown else "",
    }


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
        **_keda(isvc),
    }

"""OME's deployment modes as manifests spell them: the annotation, the values, the components
that take one, and the check of a mode given in a typed field."""

from __future__ import annotations

from policyd.errors import InvalidInput

MODE_ANNOTATION = "ome.io/deploymentMode"
MODES = ("RawDeployment", "OMENative", "MultiNode", "VirtualDeployment")
DEFAULT_MODE = "RawDeployment"
COMPONENTS = ("engine", "decoder", "router")


def check_mode(value: str, field: str) -> str:
    """A mode given in a typed field (``spec.deploymentMode``); unknown values are refused."""
    if value and value not in MODES:
        raise InvalidInput(field, f"unknown deployment mode {value!r} (one of {', '.join(MODES)})")
    return value

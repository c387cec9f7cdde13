"""What the renderer takes from the base model: where its weights are, and the facts OME copies
into labels and annotations."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from policyd.errors import InvalidInput


@dataclass(frozen=True)
class Model:
    name: str
    namespace: str | None  # None for a ClusterBaseModel
    path: str  # spec.storage.path: MODEL_PATH, and the hostPath OME mounts
    vendor: str | None
    format_name: str
    format_version: str | None
    annotations: Mapping[str, str]


def base_model(isvc_spec: Mapping[str, Any], manifest: Mapping[str, Any] | None) -> Model | None:
    """The base model the InferenceService names; None when it names none, since OME then skips
    all model work."""
    if not isvc_spec.get("model"):
        return None
    if manifest is None:
        raise InvalidInput("spec.model", "the InferenceService names a base model but none was given to render")
    metadata = _mapping(manifest.get("metadata"))
    spec = _mapping(manifest.get("spec"))
    name = str(metadata.get("name") or "")
    path = _mapping(spec.get("storage")).get("path")
    if not isinstance(path, str) or not path:
        raise InvalidInput("spec.model", f"base model {name} has no spec.storage.path for MODEL_PATH")
    model_format = _mapping(spec.get("modelFormat"))
    vendor, version = spec.get("vendor"), model_format.get("version")
    annotations = _mapping(metadata.get("annotations"))
    return Model(
        name=name,
        namespace=None if manifest.get("kind") == "ClusterBaseModel" else (metadata.get("namespace") or None),
        path=path,
        vendor=str(vendor) if vendor else None,
        format_name=str(model_format.get("name") or ""),
        format_version=str(version) if version else None,
        annotations={str(k): str(v) for k, v in annotations.items()},
    )


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}

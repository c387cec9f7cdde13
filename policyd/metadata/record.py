"""What OME records on a BaseModel or ClusterBaseModel once it has read the model's files.

Spec ("What OME records for the model", "Models without a recorded pipeline"):

- OME fills in only empty fields: anything already set, such as a hand-written
  ``diffusionPipeline`` listing only some components, stays exactly as written. A field is empty
  when it is absent, null, ``""`` or ``{}``.
- ``pvc://`` models get the architecture, format and framework (and the quantization and size
  of a transformers model) but never a ``diffusionPipeline``.
- ``vendor://`` models and models annotated ``ome.oracle.com/skip-config-parsing: "true"`` get
  nothing: their spec comes back unchanged and their files are not read.

Each function returns the whole spec that would be recorded, as a new dict.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from policyd.errors import InvalidInput
from policyd.metadata.files import fields_from_path
from policyd.metadata.hf_config import config_fields
from policyd.metadata.model_index import model_index_fields

SKIP_ANNOTATION = "ome.oracle.com/skip-config-parsing"


def inspect_model_index(index: Mapping[str, Any], base_model: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The spec recorded for a diffusers model with this ``model_index.json`` content."""
    return _record(base_model, lambda: model_index_fields(index))


def inspect_config(config: Mapping[str, Any], base_model: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The spec recorded for a transformers model with this ``config.json`` content."""
    return _record(base_model, lambda: config_fields(config))


def inspect_path(path: str | Path, base_model: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The spec recorded for the model directory, ``model_index.json`` or ``config.json`` at ``path``."""
    return _record(base_model, lambda: fields_from_path(Path(path)))


@dataclass(frozen=True)
class _Existing:
    spec: dict[str, Any]
    storage_uri: str
    annotations: Mapping[str, Any]

    @classmethod
    def of(cls, base_model: Mapping[str, Any] | None) -> _Existing:
        if base_model is None:
            return cls({}, "", {})
        if not isinstance(base_model, Mapping):
            raise InvalidInput("baseModel", f"must be a manifest object, got {type(base_model).__name__}")
        metadata = _object(base_model, "metadata", "baseModel.metadata")
        spec = _object(base_model, "spec", "baseModel.spec")
        storage = _object(spec, "storage", "baseModel.spec.storage")
        uri = storage.get("storageUri") or ""
        if not isinstance(uri, str):
            raise InvalidInput("baseModel.spec.storage.storageUri", f"must be a string, got {uri!r}")
        annotations = _object(metadata, "annotations", "baseModel.metadata.annotations")
        return cls(copy.deepcopy(dict(spec)), uri, annotations)

    @property
    def skipped(self) -> bool:
        return self.storage_uri.startswith("vendor://") or self.annotations.get(SKIP_ANNOTATION) == "true"


def _record(base_model: Mapping[str, Any] | None, read: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    existing = _Existing.of(base_model)
    spec = existing.spec
    if existing.skipped:
        return spec
    fields = read()
    if existing.storage_uri.startswith("pvc://"):
        fields.pop("diffusionPipeline", None)
    for key, value in fields.items():
        if _empty(spec.get(key)):
            spec[key] = value
    return spec


def _empty(value: Any) -> bool:
    return value is None or value == "" or (isinstance(value, Mapping) and not value)


def _object(parent: Mapping[str, Any], key: str, field: str) -> Mapping[str, Any]:
    value = parent.get(key)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidInput(field, f"must be an object, got {type(value).__name__}")
    return value

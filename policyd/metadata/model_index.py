"""What OME records from a diffusers ``model_index.json``.

Key mapping (spec, "What OME records for the model"): ``_class_name`` → ``className``,
``text_encoder`` → ``textEncoder``, ``transformer`` or ``unet`` → ``transformer``, ``scheduler``,
``tokenizer`` and ``vae`` → the same name, any other key whose value is a component →
``additionalComponents`` under that key. A component is a ``[library, type]`` pair of strings;
anything else (``[null, null]`` for an absent optional component, booleans such as
``requires_safety_checker``) is not a component and is ignored, as are diffusers' own
``_``-prefixed keys (``_diffusers_version``, ``_name_or_path``).

When an index has both ``transformer`` and ``unet`` (the spec does not say), ``transformer``
wins and ``unet`` is kept under ``additionalComponents``, so nothing read is dropped.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from policyd.errors import InvalidInput

_WHY = {
    "_class_name": "the pipeline class, recorded as className and modelArchitecture",
    "_diffusers_version": "the version recorded for the diffusers format and framework",
}

_FIELDS = {
    "text_encoder": "textEncoder",
    "transformer": "transformer",
    "scheduler": "scheduler",
    "tokenizer": "tokenizer",
    "vae": "vae",
}


def component(value: Any) -> dict[str, str] | None:
    """``{"library", "type"}`` for a ``[library, type]`` pair of strings, else None."""
    if isinstance(value, list) and len(value) == 2 and all(isinstance(part, str) and part for part in value):
        return {"library": value[0], "type": value[1]}
    return None


def pipeline(index: Mapping[str, Any]) -> dict[str, Any]:
    """The ``diffusionPipeline`` OME records for ``index``."""
    recorded: dict[str, Any] = {"className": _required(index, "_class_name")}
    additional: dict[str, dict[str, str]] = {}
    for key, value in index.items():
        found = component(value)
        if not isinstance(key, str) or key.startswith("_") or found is None:
            continue
        if key == "unet" and component(index.get("transformer")) is None:
            recorded["transformer"] = found
        elif key in _FIELDS:
            recorded[_FIELDS[key]] = found
        else:
            additional[key] = found
    if additional:
        recorded["additionalComponents"] = additional
    return recorded


def model_index_fields(index: Mapping[str, Any]) -> dict[str, Any]:
    """Every BaseModel spec field OME records for a diffusers model."""
    if not isinstance(index, Mapping):
        raise InvalidInput("model_index.json", f"must be a JSON object, got {type(index).__name__}")
    class_name = _required(index, "_class_name")
    version = _required(index, "_diffusers_version")
    return {
        "diffusionPipeline": pipeline(index),
        "modelArchitecture": class_name,
        "modelFormat": {"name": "diffusers", "version": version},
        "modelFramework": {"name": "diffusers", "version": version},
    }


def _required(index: Mapping[str, Any], key: str) -> str:
    value = index.get(key)
    if value is None:
        raise InvalidInput(key, f"missing: a model_index.json names {_WHY[key]}")
    if not isinstance(value, str) or not value:
        raise InvalidInput(key, f"must be a non-empty string, got {value!r}")
    return value

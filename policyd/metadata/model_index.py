"""What OME records from a diffusers ``model_index.json``.

Key mapping (spec, "What OME records for the model"): ``_class_name`` → ``className``,
``text_encoder`` → ``textEncoder``, ``transformer`` or ``unet`` → ``transformer``, ``scheduler``,
``tokenizer`` and ``vae`` → the same name, any other key whose value is a component →
``additionalComponents`` under that key. Where the page is silent, as OME's parser reads it:

- keys match without regard to case, and ``_``-prefixed keys are diffusers' own, not components;
- the class is ``_class_name`` (or ``class_name``, ``className``), the version
  ``_diffusers_version`` (or ``diffusers_version``); without a class OME cannot read the file,
  and without a version it records the version as an empty string;
- a component is a list of strings, ``[library, type]`` (a third item is ignored, a single
  item is the type, ``null`` items are empty strings, an empty list is none), or an object
  with ``_class_name``/``class_name``/``className``/``type`` and ``_library``/``library``;
  anything else (booleans, numbers, lists with other items) is not a component;
- with both ``transformer`` and ``unet`` OME keeps whichever it meets last, in no fixed
  order; policyd keeps ``transformer``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from policyd.errors import InvalidInput

_FIELDS = {
    "text_encoder": "textEncoder",
    "transformer": "transformer",
    "unet": "transformer",
    "scheduler": "scheduler",
    "tokenizer": "tokenizer",
    "vae": "vae",
}
CLASS_KEYS = ("_class_name", "class_name", "className")
VERSION_KEYS = ("_diffusers_version", "diffusers_version")


def _first_string(values: Mapping[str, Any], keys: tuple[str, ...]) -> str:
    for key in keys:
        value = values.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def component(value: Any) -> dict[str, str] | None:
    """``{"library", "type"}`` for a component value, else None."""
    if isinstance(value, list):
        if not value or not all(part is None or isinstance(part, str) for part in value):
            return None
        parts = [part or "" for part in value]
        return {"type": parts[0]} if len(parts) == 1 else {"library": parts[0], "type": parts[1]}
    if isinstance(value, Mapping):
        kind = _first_string(value, (*CLASS_KEYS, "type"))
        library = _first_string(value, ("_library", "library"))
        if not kind and not library:
            return None
        return {"library": library, "type": kind}
    return None


def _compact(found: dict[str, str]) -> dict[str, str]:
    """As OME writes a component: empty library or type left out."""
    return {k: v for k, v in found.items() if v}


def pipeline(index: Mapping[str, Any]) -> dict[str, Any]:
    """The ``diffusionPipeline`` OME records for ``index``."""
    recorded: dict[str, Any] = {}
    class_name = _first_string(index, CLASS_KEYS)
    if class_name:
        recorded["className"] = class_name
    additional: dict[str, dict[str, str]] = {}
    for key, value in index.items():
        if not isinstance(key, str) or key.startswith("_") or (found := component(value)) is None:
            continue
        field = _FIELDS.get(key.lower())
        if field is None:
            additional[key] = _compact(found)
        elif not (key.lower() == "unet" and component(_lower(index).get("transformer")) is not None):
            recorded[field] = _compact(found)
    if additional:
        recorded["additionalComponents"] = additional
    return recorded


def _lower(index: Mapping[str, Any]) -> dict[str, Any]:
    return {k.lower(): v for k, v in index.items() if isinstance(k, str)}


def model_index_fields(index: Mapping[str, Any]) -> dict[str, Any]:
    """Every BaseModel spec field OME records for a diffusers model."""
    if not isinstance(index, Mapping):
        raise InvalidInput("model_index.json", f"must be a JSON object, got {type(index).__name__}")
    class_name = _first_string(index, CLASS_KEYS)
    if not class_name:
        raise InvalidInput(
            "_class_name", "model_type or _class_name field is missing or empty in config file 'model_index.json'"
        )
    version = _first_string(index, VERSION_KEYS)
    return {
        "diffusionPipeline": pipeline(index),
        "modelArchitecture": class_name,
        "modelFormat": {"name": "diffusers", "version": version},
        "modelFramework": {"name": "diffusers", "version": version},
    }

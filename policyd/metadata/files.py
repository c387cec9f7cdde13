"""Reading a model's metadata file from disk, as OME's model agent does.

In a model directory ``model_index.json`` is read in preference to ``config.json``. A file is a
model index when it has ``_class_name`` and ``_diffusers_version`` (or is named
``model_index.json``, so that an incomplete one is reported as a model index); any other object
is read as a transformers config. Every failure is an InvalidInput whose field is the file.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from policyd.errors import InvalidInput
from policyd.metadata.hf_config import config_fields
from policyd.metadata.model_index import model_index_fields

MODEL_INDEX = "model_index.json"
CONFIG = "config.json"


def is_model_index(document: Mapping[str, Any]) -> bool:
    return "_class_name" in document and "_diffusers_version" in document


def fields_from_path(path: Path) -> dict[str, Any]:
    """The spec fields OME records from the model directory or metadata file at ``path``."""
    file = _model_file(path)
    document = _load(file)
    try:
        if is_model_index(document) or file.name == MODEL_INDEX:
            return model_index_fields(document)
        return config_fields(document)
    except InvalidInput as err:
        raise InvalidInput(str(file), f"{err.field}: {err.message}" if err.field else err.message) from err


def _model_file(path: Path) -> Path:
    if path.is_dir():
        for name in (MODEL_INDEX, CONFIG):
            if (path / name).is_file():
                return path / name
        raise InvalidInput(str(path), f"a model directory needs a {MODEL_INDEX} or a {CONFIG}, and this has neither")
    if not path.exists():
        raise InvalidInput(str(path), "no such file or directory")
    return path


def _load(file: Path) -> Mapping[str, Any]:
    try:
        document = json.loads(file.read_bytes())
    except OSError as err:
        raise InvalidInput(str(file), f"cannot be read: {err.strerror or err}") from err
    except ValueError as err:  # JSONDecodeError, or bytes that are no Unicode text
        raise InvalidInput(str(file), f"is not JSON: {err}") from err
    if not isinstance(document, dict):
        raise InvalidInput(str(file), f"must hold a JSON object, got {type(document).__name__}")
    return document

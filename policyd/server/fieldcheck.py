"""Field validation of the manifests a request carries, as the Kubernetes API server does it:
the caller chooses with the ``policyd-field-validation`` metadata (Strict, Warn — the
default — or Ignore, the values of kubectl's ``--validate``/``fieldValidation``). Warn sends
``unknown field "spec.modle"`` in ``policyd-warning`` trailers; Strict refuses the request."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from policyd.edge.metadata_keys import VALIDATION_KEY
from policyd.errors import InvalidInput
from policyd.resources.schema import unknown_fields

MODES = ("Strict", "Warn", "Ignore")


def mode_of(metadata: Mapping[str, str]) -> str:
    value = metadata.get(VALIDATION_KEY) or "Warn"
    for mode in MODES:
        if value.lower() == mode.lower():
            return mode
    raise InvalidInput(f"metadata[{VALIDATION_KEY}]", f"unknown field validation {value!r} (one of {', '.join(MODES)})")


class FieldCheck:
    """Collects the warnings of one call."""

    def __init__(self, mode: str = "Warn") -> None:
        self.mode = mode
        self.warnings: list[str] = []

    def manifest(self, doc: Mapping[str, Any], field: str, subject: bool = False) -> None:
        """Check one manifest found at ``field`` of the request; ``subject`` when it is the
        request's InferenceService (its warnings need not say which object)."""
        if self.mode == "Ignore":
            return
        unknown = unknown_fields(doc)
        if not unknown:
            return
        texts = [f'unknown field "{path}"' for path in unknown]
        if self.mode == "Strict":
            violations = tuple((f"{field}.{path}", text) for path, text in zip(unknown, texts, strict=True))
            raise InvalidInput(violations[0][0], "strict decoding error: " + ", ".join(texts), violations)
        meta = doc.get("metadata")
        name = meta.get("name") if isinstance(meta, Mapping) else None
        prefix = "" if subject else f"{doc.get('kind')}/{name}: "
        self.warnings.extend(prefix + text for text in texts)

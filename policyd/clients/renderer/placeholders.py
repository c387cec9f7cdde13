"""The placeholders OME fills in a runner from the InferenceService's metadata, with Go
template semantics for exactly these forms (spaces inside the braces allowed):

    {{.Name}}  {{.Namespace}}  {{.Labels.key}}  {{.Annotations.key}}
    {{index .Labels `key`}}  {{index .Annotations `key`}}   (also "key", as Go accepts)

A missing label or annotation gives ``<no value>`` in the field form and an empty string
with index. Any other brace text, such as a Jinja chat template, is left as it is: this is
not a template engine.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

_NO_VALUE = "<no value>"  # what Go's text/template prints for a missing map key
_PLACEHOLDER = re.compile(
    r"\{\{\s*(?:"
    r"\.(?P<field>Name|Namespace)"
    r"|\.(?P<map>Labels|Annotations)\.(?P<key>[^\W\d]\w*)"
    r"|index\s+\.(?P<imap>Labels|Annotations)\s+(?:`(?P<raw>[^`]*)`|\"(?P<quoted>[^\"\\]*)\")"
    r")\s*\}\}"
)


def fill_container(container: dict[str, Any], metadata: Mapping[str, Any]) -> dict[str, Any]:
    """The container with the placeholders in every string filled in. Parts without any are
    the container's own, not copies: it is the renderer's copy already."""
    if "{{" not in json.dumps(container, default=str):  # most hold none, and C finds that fastest
        return container
    filled: dict[str, Any] = _fill(container, metadata)
    return filled


def fill_text(text: str, metadata: Mapping[str, Any]) -> str:
    """``text`` with each placeholder replaced by its value from ``metadata``."""
    if "{{" not in text:
        return text
    return _PLACEHOLDER.sub(lambda match: _value(match, metadata), text)


def _value(match: re.Match[str], metadata: Mapping[str, Any]) -> str:
    if match["field"]:
        return str(metadata.get(match["field"].lower()) or "")
    if match["map"]:
        found = _string_map(metadata, match["map"]).get(match["key"])
        return _NO_VALUE if found is None else str(found)
    key = match["raw"] if match["raw"] is not None else match["quoted"]
    found = _string_map(metadata, match["imap"]).get(key)
    return "" if found is None else str(found)


def _string_map(metadata: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    value = metadata.get(name.lower())
    return value if isinstance(value, Mapping) else {}


def _fill(value: Any, metadata: Mapping[str, Any]) -> Any:
    """``value`` with its placeholders filled in; the very same object when it holds none."""
    if isinstance(value, str):
        return fill_text(value, metadata)
    if isinstance(value, dict):
        filled = {key: _fill(item, metadata) for key, item in value.items()}
        return value if all(filled[key] is item for key, item in value.items()) else filled
    if isinstance(value, list):
        items = [_fill(item, metadata) for item in value]
        return value if all(new is old for new, old in zip(items, value, strict=True)) else items
    return value

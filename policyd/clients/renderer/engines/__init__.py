"""Engine templates: the ``ome.io/engine`` annotation on a runtime names one, whose engineConfig,
decoderConfig and routerConfig fill in whatever the runtime's leave unset (spec 004). Each
template is a YAML file beside this module, named after the annotation's value."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from policyd.clients.renderer.merge import merge_config
from policyd.errors import InvalidInput

ENGINE_ANNOTATION = "ome.io/engine"
CONFIGS = ("engineConfig", "decoderConfig", "routerConfig")
_HERE = Path(__file__).parent


@cache
def engines() -> dict[str, Mapping[str, Any]]:
    """Every template, by the annotation value that names it."""
    return {path.stem: yaml.safe_load(path.read_text()) for path in sorted(_HERE.glob("*.yaml"))}


def runtime_spec(runtime: Mapping[str, Any]) -> Mapping[str, Any]:
    """The runtime's spec with its engine template underneath its component configs; the spec
    itself when it names no engine. The template is merged by the same rules as an
    InferenceService over a runtime, the runtime's values winning."""
    spec: Mapping[str, Any] = runtime["spec"]
    annotations = (runtime.get("metadata") or {}).get("annotations") or {}
    name = annotations.get(ENGINE_ANNOTATION) if isinstance(annotations, Mapping) else None
    if not name:
        return spec
    template = engines().get(name)
    if template is None:
        known = ", ".join(engines())
        raise InvalidInput(
            f"runtime metadata.annotations[{ENGINE_ANNOTATION}]", f"unknown engine {name!r} (one of {known})"
        )
    filled = dict(spec)
    for key in CONFIGS:
        given = spec.get(key) or {}
        if not isinstance(given, Mapping):
            raise InvalidInput(f"runtime spec.{key}", f"must be a mapping, got {type(given).__name__}")
        filled[key] = merge_config(template[key], given)
    return filled

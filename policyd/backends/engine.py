"""The engine a backend reads: the runtime's engine runner with the InferenceService's on top,
and a key for what the InferenceService sets there, so backends' engine facts are memoised by
the runtime's digest and that key (most InferenceServices set nothing; facts/derive.py)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping

from policyd.resources.objects import InferenceService, ServingRuntime
from policyd.semantics.runner_merge import Runner, engine_runner


def engine_key(isvc: InferenceService | None) -> str:
    """A digest of what the InferenceService's engine sets on the runner ("" for nothing)."""
    if isvc is None:
        return ""
    spec = isvc.raw.get("spec")
    engine = spec.get("engine") if isinstance(spec, Mapping) else None
    key = ""
    if isinstance(engine, Mapping):
        parts = {k: engine.get(k) for k in ("runner", "leader") if engine.get(k) is not None}
        if parts:
            key = hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:16]
    return key


def runner(runtime: ServingRuntime, isvc: InferenceService | None) -> Runner | None:
    """The runtime's engine runner as the InferenceService runs it, None without an engine."""
    spec = runtime.raw.get("spec")
    isvc_spec = isvc.raw.get("spec") if isvc is not None else None
    return engine_runner(
        spec if isinstance(spec, Mapping) else {}, isvc_spec if isinstance(isvc_spec, Mapping) else None
    )

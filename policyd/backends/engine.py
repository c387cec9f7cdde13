"""The engine a backend reads: the runtime's engine runner with the InferenceService's on top,
and a key for what the InferenceService sets there, so a backend memoises its engine facts by
the runtime's digest and that key (most InferenceServices set nothing)."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Mapping

from policyd.resources.objects import InferenceService, ServingRuntime
from policyd.semantics.runner_merge import Runner, engine_runner

# the last InferenceService's key: asked for once per runtime in a request
_last = threading.local()


def engine_key(isvc: InferenceService | None) -> str:
    """A digest of what the InferenceService's engine sets on the runner ("" for nothing)."""
    if isvc is None:
        return ""
    cached = getattr(_last, "entry", None)
    if cached is not None and cached[0] is isvc:
        return str(cached[1])
    spec = isvc.raw.get("spec")
    engine = spec.get("engine") if isinstance(spec, Mapping) else None
    key = ""
    if isinstance(engine, Mapping):
        parts = {k: engine.get(k) for k in ("runner", "leader") if engine.get(k) is not None}
        if parts:
            key = hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:16]
    _last.entry = (isvc, key)
    return key


def runner(runtime: ServingRuntime, isvc: InferenceService | None) -> Runner | None:
    """The runtime's engine runner as the InferenceService runs it, None without an engine."""
    spec = runtime.raw.get("spec")
    isvc_spec = isvc.raw.get("spec") if isvc is not None else None
    return engine_runner(
        spec if isinstance(spec, Mapping) else {}, isvc_spec if isinstance(isvc_spec, Mapping) else None
    )

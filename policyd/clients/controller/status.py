"""The InferenceService status the controller writes: its RuntimeReady condition (and
RuntimeDrifted, when it is pinned), the readiness OME reports (readiness.py: the components'
conditions, Ready, the URL, components, modelStatus) and observedGeneration. A condition's
lastTransitionTime moves only when its status does."""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from typing import Any

from policyd.clients.controller.outcome import Condition


def now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def status_update(
    isvc: Mapping[str, Any], conditions: Sequence[Condition], at: str, fields: Mapping[str, Any] | None = None
) -> dict[str, Any] | None:
    """The status fields to write for ``conditions`` and ``fields`` (a merge patch of the other
    status fields), or None when the status already says them."""
    status = isvc.get("status") or {}
    generation = (isvc.get("metadata") or {}).get("generation")
    written: list[dict[str, Any]] = [dict(c) for c in status.get("conditions") or []]
    changed = False
    for condition in conditions:
        index = next((i for i, c in enumerate(written) if c.get("type") == condition.type), None)
        old = written[index] if index is not None else {}
        new = {
            **old,  # fields other writers keep there (severity)
            "type": condition.type,
            "status": condition.status,
            "reason": condition.reason,
            "message": condition.message,
            "lastTransitionTime": old["lastTransitionTime"]
            if old.get("status") == condition.status and old.get("lastTransitionTime")
            else at,
        }
        if condition.severity:
            new["severity"] = condition.severity
        if new == old:
            continue
        changed = True
        if index is None:
            written.append(new)
        else:
            written[index] = new
    if not changed and not fields and (generation is None or status.get("observedGeneration") == generation):
        return None
    update: dict[str, Any] = {"conditions": written, **(fields or {})}
    if generation is not None:
        update["observedGeneration"] = generation
    return update

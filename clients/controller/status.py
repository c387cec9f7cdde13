"""The InferenceService status the controller writes: its RuntimeReady condition and
observedGeneration. lastTransitionTime moves only when the condition's status does."""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

from clients.controller.outcome import Condition


def now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def status_update(isvc: Mapping[str, Any], condition: Condition, at: str) -> dict[str, Any] | None:
    """The status fields to write for ``condition``, or None when the status already says it."""
    status = isvc.get("status") or {}
    generation = (isvc.get("metadata") or {}).get("generation")
    conditions: list[dict[str, Any]] = [dict(c) for c in status.get("conditions") or []]
    index = next((i for i, c in enumerate(conditions) if c.get("type") == condition.type), None)
    old = conditions[index] if index is not None else {}
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
    if new == old and (generation is None or status.get("observedGeneration") == generation):
        return None
    if index is None:
        conditions.append(new)
    else:
        conditions[index] = new
    update: dict[str, Any] = {"conditions": conditions}
    if generation is not None:
        update["observedGeneration"] = generation
    return update

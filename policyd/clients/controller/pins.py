"""Pinning (spec 002: ``spec.runtime.autoSync: false``): an InferenceService pinned to a snapshot
of its runtime, kept in the cluster as a ControllerRevision the InferenceService owns — the
kind Kubernetes keeps a StatefulSet's or DaemonSet's revisions in: immutable data, a revision
number, collected with its owner, listed by label, and what `kubectl rollout history` users know.
``spec.runtime.revision`` names one; without it the newest is the pin, made at the first
reconcile that found the runtime. Workloads render from the pin, so a change to the runtime
does not roll out; RuntimeDrifted says whether the runtime still is what the pin holds."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from policyd.clients.controller.outcome import Condition

RUNTIME_DRIFTED = "RuntimeDrifted"
PIN_LABEL = "ome.io/pinned-by"  # on a ControllerRevision: the InferenceService it pins
SOURCE_KIND, SOURCE_NAME = "ome.io/runtime-kind", "ome.io/runtime-name"  # annotations: what it snapshots


@dataclass(frozen=True)
class Pin:
    name: str  # the ControllerRevision's
    revision: int
    kind: str  # the runtime's kind and name
    runtime: str
    manifest: Mapping[str, Any]  # the runtime as the catalog takes it

    def differs(self, live: Mapping[str, Any]) -> bool:
        """Whether the runtime says otherwise than the pin: its spec (a runtime deleted and made
        again as it was is the pin's again, whatever its uid and creation time)."""
        return _canonical(self.manifest) != _canonical(live)


def _canonical(manifest: Mapping[str, Any]) -> str:
    return json.dumps(manifest.get("spec") or {}, sort_keys=True)


def pinned(isvc: Mapping[str, Any]) -> bool:
    runtime = (isvc.get("spec") or {}).get("runtime") or {}
    return bool(runtime.get("name")) and runtime.get("autoSync") is False


def wanted_revision(isvc: Mapping[str, Any]) -> str:
    """The ControllerRevision ``spec.runtime.revision`` names, or ""."""
    return str(((isvc.get("spec") or {}).get("runtime") or {}).get("revision") or "")


def drift(pin: Pin, live: Mapping[str, Any] | None) -> Condition:
    """RuntimeDrifted: the pinned runtime gone, changed since the pin, or what the pin holds."""
    source = f"{pin.kind} {pin.runtime}"
    if live is None:
        return Condition(
            "True",
            "SourceRuntimeMissing",
            f"{source} no longer exists; serving from its pinned revision {pin.name}",
            RUNTIME_DRIFTED,
        )
    if pin.differs(live):
        return Condition(
            "True",
            "SourceRuntimeChanged",
            f"{source} changed since its pinned revision {pin.name}; the change does not roll out "
            "(autoSync: false): set spec.runtime.revision to a newer one, or autoSync: true",
            RUNTIME_DRIFTED,
        )
    return Condition(
        "False", "SourceRuntimeUnchanged", f"{source} is as its pinned revision {pin.name}", RUNTIME_DRIFTED
    )

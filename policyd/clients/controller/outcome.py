"""What reconciling one InferenceService produces: its RuntimeReady condition, events, workloads."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

RUNTIME_READY = "RuntimeReady"
RESOLVED = "RuntimeResolved"
ADVISORY = "RuntimeCompatibilityAdvisory"


@dataclass(frozen=True)
class Condition:
    status: str  # "True" | "False" | "Unknown"
    reason: str
    message: str
    type: str = RUNTIME_READY
    severity: str = ""  # knative's: "" (Error) for Ready and what it depends on, "Info" for the others

    @property
    def ready(self) -> bool:
        return self.status == "True"


@dataclass(frozen=True)
class Event:
    type: str  # "Normal" | "Warning"
    reason: str
    message: str


@dataclass(frozen=True)
class Outcome:
    condition: Condition
    events: tuple[Event, ...] = ()
    workloads: tuple[dict[str, Any], ...] = ()
    # failures the manager only logs (OME records no event for them, e.g. a router in MultiNode)
    log_errors: tuple[str, ...] = field(default_factory=tuple)
    # policyd's catalog revision the answer was decided on
    catalog_revision: str = ""
    # the runtime the workloads were rendered from (kind, name, manifest): a pin's snapshot, or policyd's
    runtime: tuple[str, str, Mapping[str, Any]] | None = None

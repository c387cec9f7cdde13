"""What the controller needs from a cluster, and the controller loop over it."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from typing import Any, Protocol

from clients.controller.catalog_sync import CATALOG_KINDS, CatalogSync
from clients.controller.outcome import Condition, Event, Outcome
from clients.controller.reconcile import Reconciler

log = logging.getLogger("policyd.controller")
Manifest = Mapping[str, Any]


class Cluster(Protocol):
    def watch(self, kind: str) -> Iterator[tuple[str, Manifest]]:
        """(ADDED | MODIFIED | DELETED, object) for every object of ``kind``, existing ones first."""
        ...

    def inference_services(self) -> list[Manifest]: ...

    def set_condition(self, isvc: Manifest, condition: Condition) -> None: ...

    def record_event(self, isvc: Manifest, event: Event) -> None: ...

    def apply(self, obj: Manifest, owner: Manifest) -> None:
        """Server-side apply ``obj``, owned by ``owner``."""
        ...


def owner_reference(isvc: Manifest) -> dict[str, Any]:
    meta = isvc.get("metadata") or {}
    return {
        "apiVersion": isvc.get("apiVersion", "ome.io/v1beta1"),
        "kind": "InferenceService",
        "name": meta.get("name", ""),
        "uid": meta.get("uid", ""),
        "controller": True,
        "blockOwnerDeletion": True,
    }


class Controller:
    """Feeds the catalog, reconciles InferenceServices, writes what the reconciler decided."""

    def __init__(self, cluster: Cluster, catalog: CatalogSync, reconciler: Reconciler) -> None:
        self.cluster, self.catalog, self.reconciler = cluster, catalog, reconciler

    def on_catalog_event(self, event_type: str, obj: Manifest) -> None:
        self.catalog.handle(event_type, obj)

    def on_isvc_event(self, event_type: str, isvc: Manifest) -> Outcome | None:
        self.catalog.handle(event_type, isvc)
        if event_type == "DELETED":
            return None  # owner references let the cluster collect the workloads
        outcome = self.reconciler.reconcile(isvc, _accelerator_classes(isvc))
        self.cluster.set_condition(isvc, outcome.condition)
        for event in outcome.events:
            self.cluster.record_event(isvc, event)
        for error in outcome.log_errors:
            log.error(
                "Failed to reconcile component",
                extra={"isvc": (isvc.get("metadata") or {}).get("name"), "error": error},
            )
        for workload in outcome.workloads:
            self.cluster.apply(workload, isvc)
        return outcome

    def resync(self) -> None:
        """Reconcile every InferenceService again (after the catalog changed)."""
        for isvc in self.cluster.inference_services():
            self.on_isvc_event("MODIFIED", isvc)

    def catalog_kinds(self) -> tuple[str, ...]:
        return CATALOG_KINDS


def _accelerator_classes(isvc: Manifest) -> dict[str, str]:
    """The class each model component asks for; the scheduler's placement is the cluster's business."""
    selector = ((isvc.get("spec") or {}).get("acceleratorSelector") or {}).get("acceleratorClass")
    return {"engine": selector, "decoder": selector} if selector else {}

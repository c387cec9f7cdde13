"""What the controller does with what the watches show it: policyd's catalog kept equal to the
cluster's, each InferenceService reconciled (RuntimeReady, events, workloads), and the
InferenceServices that follow a catalog object reconciled again when it changes or goes away.

Observations arrive on the event loop's thread (``observe``); work runs one key at a time on a
worker thread (``process``) and returns the keys to do next. Keys: AUDIT, ("catalog", kind,
namespace, name), ("isvc", namespace, name)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Hashable, Iterable
from typing import Any

from kubernetes.client.exceptions import ApiException

from clients.controller.catalog_sync import CatalogSync
from clients.controller.events import EventRecorder
from clients.controller.kube import CatalogKey, Conflict, Kube, Manifest, catalog_key
from clients.controller.outcome import Condition, Event, Outcome
from clients.controller.reconcile import Reconciler, Unavailable
from clients.controller.status import now, status_update

log = logging.getLogger("policyd.controller")
Key = tuple[Hashable, ...]
IsvcKey = tuple[str, str]
AUDIT: Key = ("audit",)
PRIORITY: dict[Hashable, int] = {"audit": 0, "catalog": 1, "isvc": 2}
CONFLICT = "WorkloadConflict"


class NotReady(Exception):
    """InferenceServices wait until policyd holds the whole catalog once (no RuntimeNotFound from a half-synced one)."""


class Retry(Exception):
    """The reconcile did what it could; the rest (named in the message) is retried with backoff."""


class Controller:
    def __init__(
        self,
        kube: Kube,
        catalog: CatalogSync,
        reconciler: Reconciler,
        recorder: EventRecorder,
        clock: Callable[[], str] = now,
    ) -> None:
        self.kube, self.catalog, self.reconciler, self.recorder, self.clock = kube, catalog, reconciler, recorder, clock
        self._lock = threading.Lock()
        self._seq = 0  # counts observations, to tell a watch event newer than a listing
        self._catalog: dict[CatalogKey, tuple[int, Manifest | None]] = {}  # None: deleted, not yet out of policyd
        self._isvcs: dict[IsvcKey, Manifest] = {}
        self._gone: list[str] = []  # uids of deleted InferenceServices, for the event recorder
        self._resolved: set[IsvcKey] = set()  # InferenceServices whose last reconcile found a runtime
        self.catalog_ready = False
        self.policyd_down: Unavailable | None = None  # the last failure to reach policyd, until an audit succeeds
        self._audit_pending = False  # to log a relisting once, not once per object

    # --- observations (the event loop's thread)

    def observe(self, event_type: str | None, obj: Manifest) -> list[Key]:
        """A watch event; ``event_type`` None is an object of a (re)listing."""
        meta = obj.get("metadata") or {}
        if obj.get("kind") == "InferenceService":
            key = (meta.get("namespace", ""), meta.get("name", ""))
            with self._lock:
                if event_type == "DELETED":
                    self._isvcs.pop(key, None)
                    self._gone.append(meta.get("uid", ""))
                else:
                    self._isvcs[key] = obj
            return [("isvc", *key)]
        ckey = catalog_key(obj)
        with self._lock:
            self._seq += 1
            self._catalog[ckey] = (self._seq, None if event_type == "DELETED" else obj)
        keys: list[Key] = [("catalog", *ckey)]
        if event_type is None and self.catalog_ready:
            # the watch listed again after a gap (410 Gone): deletions in the gap were not seen
            if not self._audit_pending:
                log.info("%s listed again after a watch gap: auditing the catalog", ckey[0])
                self._audit_pending = True
            keys.append(AUDIT)
        return keys

    # --- work (the worker's thread)

    def process(self, key: Key) -> list[Key]:
        try:
            if key == AUDIT:
                return self.audit()
            if key[0] == "catalog":
                return self.sync_catalog((str(key[1]), str(key[2]), str(key[3])))
            return self.reconcile((str(key[1]), str(key[2])))
        except Unavailable as err:
            if err.service == "policyd":
                # it may come back with an empty catalog: nothing is decided until an audit refilled it
                self.catalog_ready = False
                self.policyd_down = err
            raise

    def audit(self) -> list[Key]:
        """List the catalog kinds and make policyd hold exactly them: what the watches missed
        (deletions during a disconnection, a policyd that restarted empty) is put right here."""
        with self._lock:
            start = self._seq
        listed = self.kube.list_catalog()
        with self._lock:
            for key, (seq, _) in list(self._catalog.items()):
                if seq <= start and key not in listed:
                    self._catalog[key] = (seq, None)
            for key, obj in listed.items():
                seq, _ = self._catalog.get(key, (0, None))
                if seq <= start:  # a watch event newer than the listing wins
                    self._catalog[key] = (seq, obj)
            snapshot = dict(self._catalog)
        changed = self.catalog.replace({key: obj for key, (_, obj) in snapshot.items() if obj is not None})
        self._drop_deleted(snapshot)
        self._audit_pending = False
        if not self.catalog_ready:
            log.info("catalog in sync with policyd", extra={"objects": len(listed)})
        elif changed:
            log.info(
                "catalog audit: %d objects differed from the cluster, now in sync",
                len(changed),
                extra={"objects": [f"{kind} {ns}/{name}".replace(" /", " ") for kind, ns, name in changed]},
            )
        self.catalog_ready, self.policyd_down = True, None
        return self._dependents(changed)

    def sync_catalog(self, key: CatalogKey) -> list[Key]:
        if not self.catalog_ready:
            return []  # the first audit pushes everything
        with self._lock:
            if key not in self._catalog:
                return []
            entry = self._catalog[key]
        changed = self.catalog.update(key, entry[1])
        self._drop_deleted({key: entry})
        return self._dependents(changed)

    def _drop_deleted(self, done: dict[CatalogKey, tuple[int, Manifest | None]]) -> None:
        """Forget the deletions policyd has now seen, unless a newer observation came meanwhile."""
        with self._lock:
            for key, entry in done.items():
                if entry[1] is None and self._catalog.get(key) == entry:
                    self._catalog.pop(key, None)

    def _dependents(self, changed: Iterable[CatalogKey]) -> list[Key]:
        """The InferenceServices to reconcile after a catalog change: those that follow a changed
        object, and those without a runtime (a new or recreated runtime may be theirs). One whose
        runtime was chosen picks the change up when its runtime is chosen again (spec 004)."""
        changed = set(changed)
        if not changed:
            return []
        with self._lock:
            isvcs = list(self._isvcs.items())
        return [("isvc", *key) for key, isvc in isvcs if key not in self._resolved or _follows(key[0], isvc) & changed]

    def reconcile(self, key: IsvcKey) -> list[Key]:
        with self._lock:
            isvc = self._isvcs.get(key)
            gone, self._gone = self._gone, []
        for uid in gone:
            self.recorder.forget(uid)
        if isvc is None:  # deleted: owner references let the cluster collect its workloads
            self._resolved.discard(key)
            return []
        if not self.catalog_ready:
            if self.policyd_down is not None:
                self._write_status(isvc, _unavailable(self.policyd_down))
            raise NotReady()
        try:
            outcome = self.reconciler.reconcile(isvc)
        except Unavailable as err:
            self._write_status(isvc, _unavailable(err))
            raise
        if outcome.catalog_revision and outcome.catalog_revision != self.catalog.revision:
            # policyd decided on a catalog we did not build: it restarted (empty) or was changed
            # behind our back. Put the catalog right first, then decide again.
            log.warning("policyd's catalog is not the cluster's; syncing it again", extra={"isvc": "/".join(key)})
            return [AUDIT, ("isvc", *key)]
        (self._resolved.add if outcome.condition.ready else self._resolved.discard)(key)
        if not self._write_status(isvc, outcome.condition):
            return []
        problems = self._workloads(isvc, outcome) if outcome.condition.ready else []
        conflicts = [Event("Warning", CONFLICT, _conflict_message(p)) for p in problems if isinstance(p, Conflict)]
        self.recorder.record(isvc, (*outcome.events, *conflicts))
        for error in outcome.log_errors:
            log.error("Failed to reconcile component", extra={"isvc": "/".join(key), "error": error})
        if problems:
            raise Retry("; ".join(str(p) for p in problems))
        return []

    def _write_status(self, isvc: Manifest, condition: Condition) -> bool:
        """False when the InferenceService is gone."""
        update = status_update(isvc, condition, self.clock())
        if update is None:
            return True
        try:
            self.kube.write_status(isvc, update)
        except ApiException as err:
            if err.status == 404:
                return False
            raise  # 409: a newer version is on its way from the watch; retried
        meta = isvc["metadata"]
        log.info(
            "InferenceService %s/%s: RuntimeReady %s %s",
            meta["namespace"],
            meta["name"],
            condition.status,
            condition.reason,
            extra={"condition_message": condition.message},
        )
        return True

    def _workloads(self, isvc: Manifest, outcome: Outcome) -> list[Exception]:
        """Apply every rendered object, then delete the owned ones no longer rendered."""
        problems: list[Exception] = []
        for workload in outcome.workloads:
            try:
                self.kube.apply(workload, isvc)
            except (Conflict, ApiException) as err:
                problems.append(err)
        keep = {(w.get("kind", ""), (w.get("metadata") or {}).get("name", "")) for w in outcome.workloads}
        for kind, name in self.kube.prune(isvc, keep):
            log.info(
                "deleted %s %s: its component is no longer declared",
                kind,
                name,
                extra={"isvc": isvc["metadata"]["name"], "namespace": isvc["metadata"]["namespace"]},
            )
        return problems


def _follows(namespace: str, isvc: Manifest) -> frozenset[CatalogKey]:
    """What the InferenceService follows: the runtime it names (either kind), unless it is pinned
    (autoSync: false), and then its model. Their changes roll out to it right away (spec 004)."""
    spec: dict[str, Any] = dict(isvc.get("spec") or {})
    runtime = spec.get("runtime") or {}
    if not runtime.get("name") or runtime.get("autoSync") is False:
        return frozenset()
    keys = {("ClusterServingRuntime", "", runtime["name"]), ("ServingRuntime", namespace, runtime["name"])}
    model = spec.get("model") or {}
    if model.get("name"):
        kind = model.get("kind") or "ClusterBaseModel"
        keys.add((kind, "" if kind.startswith("Cluster") else namespace, model["name"]))
    return frozenset(keys)


def _unavailable(err: Unavailable) -> Condition:
    """RuntimeReady Unknown: the controller cannot tell while policyd or the renderer does not answer."""
    reason = "PolicyUnavailable" if err.service == "policyd" else "RendererUnavailable"
    return Condition("Unknown", reason, f"{err}; retrying")


def _conflict_message(conflict: Exception) -> str:
    return f"not applied: {conflict} (another field manager owns these fields; policy-controller does not force them)"

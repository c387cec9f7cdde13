"""What the controller does with what the watches show it: policyd's catalog kept equal to the
cluster's, each InferenceService reconciled (RuntimeReady, events, workloads), and the
InferenceServices that follow a catalog object reconciled again when it changes or goes away.

The workloads it applied are watched too (``observe_owned``): one deleted or whose spec someone
else changed is applied again, and their status (and their pods') flows into the InferenceService's
as OME reports it (readiness.py), without asking policyd again.

Observations arrive on the event loop's thread (``observe``); work runs on several worker threads
(``process``), a key in one at a time, and returns the keys to do next. Keys: AUDIT, CATALOG (every
catalog change not yet in policyd, pushed together), ("isvc", namespace, name) (decide, apply,
write status), ("status", namespace, name) (the readiness only); an InferenceService's two keys
never run at once."""

from __future__ import annotations

import collections
import dataclasses
import logging
import threading
from collections.abc import Callable, Hashable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from kubernetes.client.exceptions import ApiException

from policyd.clients.controller.catalog_sync import CatalogSync
from policyd.clients.controller.events import EventRecorder
from policyd.clients.controller.kube import (
    APPLIED,
    Applied,
    CatalogKey,
    Conflict,
    Kube,
    Manifest,
    WorkloadKey,
    catalog_key,
)
from policyd.clients.controller.observed import STATUS_KIND_NAMES, Observed, owner
from policyd.clients.controller.outcome import Condition, Event, Outcome
from policyd.clients.controller.pins import Pin, drift, pinned, wanted_revision
from policyd.clients.controller.readiness import readiness, severity, status_fields
from policyd.clients.controller.reconcile import Reconciler, Unavailable
from policyd.clients.controller.status import now, status_update
from policyd.clients.manifests import catalog_item

log = logging.getLogger("policyd.controller")
Key = tuple[Hashable, ...]
IsvcKey = tuple[str, str]
AUDIT: Key = ("audit",)
CATALOG: Key = ("catalog",)
PRIORITY: dict[Hashable, int] = {"audit": 0, "catalog": 1, "isvc": 2, "status": 3}
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
        self._unsynced: set[CatalogKey] = set()  # observed, not yet pushed to policyd
        self._isvcs: dict[IsvcKey, Manifest] = {}
        self._gone: list[str] = []  # uids of deleted InferenceServices, for the event recorder
        self._resolved: set[IsvcKey] = set()  # InferenceServices whose last reconcile found a runtime
        # what the last reconcile of an InferenceService made of it (its content's digest, the
        # condition): a watch event that shows no more than that (the status it wrote) is not work
        self._settled: dict[IsvcKey, tuple[str, tuple[Condition, ...]]] = {}
        # the workloads each InferenceService (by uid) owns: listed at each audit, then kept by our
        # own applies and deletions, so no reconcile lists them (a listing reads every object of its
        # kind in the namespace: N InferenceServices would cost N^2)
        self._owned: dict[str, dict[WorkloadKey, tuple[int, Applied]]] = {}
        self.catalog_ready = False
        self.policyd_down: Unavailable | None = None  # the last failure to reach policyd, until an audit succeeds
        self._audit_pending = False  # to log a relisting once, not once per object
        self._watched: set[CatalogKey] = set()  # catalog objects a watch has shown: listed again, a gap
        # kinds a watch has shown an event of: any listing of them after that is a gap too (its
        # objects may all be new, the ones it showed deleted in the gap)
        self._evented: set[str] = set()
        self.observed = Observed()
        # one lock an InferenceService: its reconcile and its status refresh write the same status
        self._isvc_locks: collections.defaultdict[IsvcKey, threading.Lock] = collections.defaultdict(threading.Lock)

    # --- observations (the event loop's thread)

    def observe(self, event_type: str | None, obj: Manifest) -> list[Key]:
        """A watch event; ``event_type`` None is an object of a (re)listing."""
        meta = obj.get("metadata") or {}
        ckey = catalog_key(obj)
        deleted = event_type == "DELETED"
        if obj.get("kind") == "InferenceService":
            key = (meta.get("namespace", ""), meta.get("name", ""))
            with self._lock:
                if deleted:
                    self._isvcs.pop(key, None)
                    self._gone.append(meta.get("uid", ""))
                else:
                    self._isvcs[key] = obj
                # policyd's catalog holds the InferenceServices too: what-if (policyctl diff) decides them
                self._seq += 1
                self._catalog[ckey] = (self._seq, None if deleted else obj)
                self._unsynced.add(ckey)
                settled = self._settled.get(key)
            if not deleted and settled is not None and _shows_only(obj, *settled):
                return [CATALOG]
            return [CATALOG, ("isvc", *key)]
        self.catalog.observed(obj)  # a policyd that watches is asked to have seen it too
        with self._lock:
            self._seq += 1
            self._catalog[ckey] = (self._seq, None if deleted else obj)
            self._unsynced.add(ckey)
            seen = ckey in self._watched or ckey[0] in self._evented
            (self._watched.discard if deleted else self._watched.add)(ckey)
            if event_type is not None:
                self._evented.add(ckey[0])
        keys: list[Key] = [CATALOG]
        if event_type is None and seen and self.catalog_ready:
            # the watch listed an object it had shown again: it listed again after a gap (410 Gone),
            # and deletions in the gap were not seen (the first listing is no gap)
            if not self._audit_pending:
                log.info("%s listed again after a watch gap: auditing the catalog", ckey[0])
                self._audit_pending = True
            keys.append(AUDIT)
        return keys

    def observe_owned(self, event_type: str | None, obj: Manifest) -> list[Key]:
        """A watch event of a workload or pod an InferenceService owns: its status refreshed; a
        workload we applied that is gone, or changed by someone else, applied again."""
        found = owner(obj)
        if found is None:
            return []
        self.observed.seen(event_type, obj)
        (namespace, name), uid = found
        keys: list[Key] = [("status", namespace, name)] if obj.get("kind") in STATUS_KIND_NAMES else []
        if uid and self._tampered(uid, obj, deleted=event_type == "DELETED"):
            keys.append(("isvc", namespace, name))
        return keys

    def _tampered(self, uid: str, obj: Manifest, deleted: bool) -> bool:
        """Whether a workload we applied was deleted, or had its spec or our digest changed by
        someone else; it is forgotten then, so the next reconcile applies it again."""
        meta = obj.get("metadata") or {}
        workload = (str(obj.get("kind", "")), str(meta.get("name", "")))
        with self._lock:
            mine = self._owned.get(uid, {})
            if workload not in mine:
                return False
            applied = mine[workload][1]
            if deleted:
                changed = not applied.uid or applied.uid == meta.get("uid")  # not a newer object of that name
            else:
                digest = (meta.get("annotations") or {}).get(APPLIED, "")
                generation = int(meta.get("generation") or 0)
                changed = digest != applied.digest or 0 < applied.generation < generation
            if changed:
                self._seq += 1
                del mine[workload]
        if changed:
            log.info(
                "%s %s %s: applying it again",
                workload[0],
                workload[1],
                "was deleted" if deleted else "was changed by another writer",
                extra={"namespace": meta.get("namespace", "")},
            )
        return changed

    # --- work (the workers' threads)

    def process(self, key: Key) -> list[Key]:
        try:
            if key == AUDIT:
                return self.audit()
            if key == CATALOG:
                return self.sync_catalog()
            isvc_key = (str(key[1]), str(key[2]))
            with self._isvc_locks[isvc_key]:
                if key[0] == "status":
                    return self.refresh_status(isvc_key)
                return self.reconcile(isvc_key)
        except Exception as err:
            if key[0] == "isvc":
                with self._lock:  # not settled: its next watch event is work again
                    self._settled.pop((str(key[1]), str(key[2])), None)
            if isinstance(err, Unavailable) and err.service == "policyd":
                # it may come back with an empty catalog: nothing is decided until an audit refilled it
                self.catalog_ready = False
                self.policyd_down = err
            raise

    def audit(self) -> list[Key]:
        """List the catalog kinds and make policyd hold exactly them: what the watches missed
        (deletions during a disconnection, a policyd that restarted empty) is put right here.
        The workloads InferenceServices own are listed too."""
        with self._lock:
            start = self._seq
        first = not self.catalog_ready
        observed_from = self.observed.mark()
        with ThreadPoolExecutor(2) as other:  # the listings at once: the API server has cores to spare
            listing = other.submit(self.kube.list_owned)
            # the first audit fills what the readiness is computed from (later, the watches keep it)
            status_listing = other.submit(self.kube.list_status_objects) if first else None
            listed = self.kube.list_catalog()
            owned = listing.result()
            if status_listing is not None:
                self.observed.listed(status_listing.result(), observed_from)
        with self._lock:
            for key, (seq, _) in list(self._catalog.items()):
                if seq <= start and key not in listed:
                    self._catalog[key] = (seq, None)
                    if key[0] == "InferenceService":
                        self._isvcs.pop(key[1:], None)
            for key, obj in listed.items():
                seq, _ = self._catalog.get(key, (0, None))
                if seq <= start:  # a watch event newer than the listing wins
                    self._catalog[key] = (seq, obj)
                    if key[0] == "InferenceService":
                        self._isvcs[key[1:]] = obj
            self._merge_owned(owned, start)
            snapshot = dict(self._catalog)
            unsynced = bool(self._unsynced)
        changed = self.catalog.replace({key: obj for key, (_, obj) in snapshot.items() if obj is not None})
        self._drop_deleted(snapshot)
        self._audit_pending = False
        if first:
            log.info("catalog in sync with policyd", extra={"objects": len(listed)})
        elif changed:
            log.info(
                "catalog audit: %d objects differed from the cluster, now in sync",
                len(changed),
                extra={"objects": [f"{kind} {ns}/{name}".replace(" /", " ") for kind, ns, name in changed]},
            )
        recovering = self.policyd_down is not None
        self.catalog_ready, self.policyd_down = True, None
        follow_ups: list[Key] = [CATALOG] if unsynced else []
        if first or recovering:
            # every InferenceService is decided now (policyd back: decided again, whatever changed,
            # rather than on its retry's backoff)
            with self._lock:
                return follow_ups + [("isvc", *key) for key in self._isvcs]
        return follow_ups + self._dependents(changed)

    def _merge_owned(self, owned: dict[str, dict[WorkloadKey, Applied]], start: int) -> None:
        """The listing of owned workloads, under the lock: what we applied or deleted since it
        started wins over it."""
        for uid, workloads in list(self._owned.items()):
            for workload, (seq, _) in list(workloads.items()):
                if seq <= start and workload not in owned.get(uid, {}):
                    del workloads[workload]
            if not workloads:
                del self._owned[uid]
        for uid, listed in owned.items():
            mine = self._owned.setdefault(uid, {})
            for workload, applied in listed.items():
                if mine.get(workload, (0, None))[0] <= start:
                    mine[workload] = (0, applied)

    def sync_catalog(self) -> list[Key]:
        """Push every catalog change observed since the last push, together."""
        if not self.catalog_ready:
            return []  # the first audit pushes everything (and comes back here for what came meanwhile)
        with self._lock:
            keys, self._unsynced = self._unsynced, set()
            entries = {key: self._catalog[key] for key in keys if key in self._catalog}
        try:
            changed = self.catalog.update({key: obj for key, (_, obj) in entries.items()})
        except Exception:
            with self._lock:
                self._unsynced |= keys
            raise
        self._drop_deleted(entries)
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
        changed = {key for key in changed if key[0] != "InferenceService"}  # no InferenceService follows one
        if not changed:
            return []
        with self._lock:
            isvcs = list(self._isvcs.items())
            resolved = set(self._resolved)
        return [("isvc", *key) for key, isvc in isvcs if key not in resolved or _follows(key[0], isvc) & changed]

    def reconcile(self, key: IsvcKey) -> list[Key]:
        with self._lock:
            isvc = self._isvcs.get(key)
            gone, self._gone = self._gone, []
            for uid in gone:
                self._owned.pop(uid, None)  # owner references let the cluster collect its workloads
        for uid in gone:
            self.recorder.forget(uid)
        if isvc is None:
            with self._lock:
                self._resolved.discard(key)
                self._settled.pop(key, None)
            self._isvc_locks.pop(key, None)
            return []
        if not self.catalog_ready:
            if self.policyd_down is not None:
                self._write_status(isvc, (_unavailable(self.policyd_down),))
            raise NotReady()
        mark = self.catalog.mark()
        pins = self.kube.pins(isvc) if pinned(isvc) else []
        pin = self._pin_of(isvc, pins)
        if isinstance(pin, Condition):  # spec.runtime.revision names no snapshot of it
            self._write_status(isvc, (pin,))
            return []
        try:
            outcome = self.reconciler.reconcile(isvc, pin)
            conditions = (outcome.condition, *self._drift(isvc, pins, pin, outcome))
        except Unavailable as err:
            self._write_status(isvc, (_unavailable(err),))
            raise
        if outcome.catalog_revision and not self.catalog.built_since(outcome.catalog_revision, mark):
            # policyd decided on a catalog we did not build, or an older one: it restarted (empty,
            # or from an older state) or was changed behind our back. Put the catalog right first,
            # then decide again.
            log.warning("policyd's catalog is not the cluster's; syncing it again", extra={"isvc": "/".join(key)})
            return [AUDIT, ("isvc", *key)]
        with self._lock:
            (self._resolved.add if outcome.condition.ready else self._resolved.discard)(key)
            # before the status is written: the watch event of that write is then no work
            self._settled[key] = (catalog_item(isvc)[1], conditions)
        if not self._write_status(isvc, conditions):
            return []
        problems = self._workloads(isvc, outcome) if outcome.condition.ready else []
        conflicts = [Event("Warning", CONFLICT, _conflict_message(p)) for p in problems if isinstance(p, Conflict)]
        self.recorder.record(isvc, (*outcome.events, *conflicts))
        for error in outcome.log_errors:
            log.error("Failed to reconcile component", extra={"isvc": "/".join(key), "error": error})
        if problems:
            raise Retry("; ".join(str(p) for p in problems))
        return [("status", *key)]

    def refresh_status(self, key: IsvcKey) -> list[Key]:
        """Write the readiness OME reports from the workloads and pods as the watches show them."""
        if not self.catalog_ready:
            raise NotReady()  # the first audit lists what it is computed from
        with self._lock:
            isvc = self._isvcs.get(key)
        if isvc is None:
            self._isvc_locks.pop(key, None)
            return []
        workloads, pods = self.observed.of(key)
        found = readiness(isvc, workloads, pods)
        conditions = tuple(dataclasses.replace(c, severity=severity(c.type)) for c in found.conditions)
        self._write_status(isvc, conditions, status_fields(found, isvc))
        return []

    def _pin_of(self, isvc: Manifest, pins: list[Pin]) -> Pin | Condition | None:
        """The snapshot a pinned InferenceService is decided on: the one spec.runtime.revision names
        (RuntimeReady False when there is none of that name), else the newest; None when not pinned
        or not yet (its first reconcile with the runtime makes one)."""
        wanted = wanted_revision(isvc)
        if not pinned(isvc) or not (wanted or pins):
            return None
        if not wanted:
            return pins[-1]
        found = next((p for p in pins if p.name == wanted), None)
        if found is not None:
            return found
        known = ", ".join(p.name for p in pins) or "none yet"
        message = f"runtime revision {wanted} not found (this InferenceService's revisions: {known})"
        return Condition("False", "RuntimeRevisionNotFound", message)

    def _drift(self, isvc: Manifest, pins: list[Pin], pin: Pin | None, outcome: Outcome) -> tuple[Condition, ...]:
        """RuntimeDrifted of a pinned InferenceService that has a runtime: its pin (made now, from
        the runtime rendered, when it has none) against the runtime in the catalog now."""
        if not pinned(isvc) or not outcome.condition.ready or outcome.runtime is None:
            return ()
        if pin is None:
            kind, name, manifest = outcome.runtime
            pin = self.kube.make_pin(isvc, kind, name, manifest, revision=len(pins) + 1)
            log.info(
                "pinned %s/%s to %s %s (revision %s)",
                isvc["metadata"]["namespace"],
                isvc["metadata"]["name"],
                kind,
                name,
                pin.name,
            )
        live = self.reconciler.live_runtime(pin.kind, isvc["metadata"]["namespace"], pin.runtime)
        return (drift(pin, live),)

    def _write_status(self, isvc: Manifest, conditions: tuple[Condition, ...], fields: Manifest | None = None) -> bool:
        """False when the InferenceService is gone."""
        update = status_update(isvc, conditions, self.clock(), fields)
        if update is None:
            return True
        try:
            written = self.kube.write_status(isvc, update)
        except ApiException as err:
            if err.status == 404:
                return False
            raise  # 409: a newer version is on its way from the watch; retried
        meta = isvc["metadata"]
        key = (meta["namespace"], meta["name"])
        with self._lock:  # the next write starts from this one, unless the watch showed a newer version
            known = self._isvcs.get(key)
            if known is not None and known["metadata"].get("resourceVersion") == meta.get("resourceVersion"):
                self._isvcs[key] = {**written, "kind": "InferenceService"}
        log.info(
            "InferenceService %s/%s: %s",
            meta["namespace"],
            meta["name"],
            ", ".join(f"{c.type} {c.status} {c.reason}" for c in conditions),
            extra={"condition_message": " / ".join(c.message for c in conditions)},
        )
        return True

    def _workloads(self, isvc: Manifest, outcome: Outcome) -> list[Exception]:
        """Apply every rendered object (but those that already carry it), then delete the owned
        ones no longer rendered."""
        uid = isvc["metadata"].get("uid", "")
        with self._lock:
            known = {workload: applied for workload, (_, applied) in self._owned.get(uid, {}).items()}
        problems: list[Exception] = []
        for workload in outcome.workloads:
            key = (workload.get("kind", ""), (workload.get("metadata") or {}).get("name", ""))
            try:
                applied = self.kube.apply(workload, isvc, unless=known[key].digest if key in known else "")
            except (Conflict, ApiException) as err:
                problems.append(err)
                continue
            if applied.uid:
                self._record_applied(uid, key, applied)
        keep = {(w.get("kind", ""), (w.get("metadata") or {}).get("name", "")) for w in outcome.workloads}
        for (kind, name), applied in known.items():
            if (kind, name) in keep:
                continue
            try:
                self.kube.delete(isvc, (kind, name), applied.uid)
            except ApiException as err:
                problems.append(err)
                continue
            with self._lock:
                self._seq += 1
                self._owned.get(uid, {}).pop((kind, name), None)
            log.info(
                "deleted %s %s: its component is no longer declared",
                kind,
                name,
                extra={"isvc": isvc["metadata"]["name"], "namespace": isvc["metadata"]["namespace"]},
            )
        return problems

    def _record_applied(self, uid: str, workload: WorkloadKey, applied: Applied) -> None:
        with self._lock:
            self._seq += 1
            self._owned.setdefault(uid, {})[workload] = (self._seq, applied)


def _shows_only(isvc: Manifest, digest: str, conditions: tuple[Condition, ...]) -> bool:
    """The InferenceService is what its last reconcile made of it: same content, and the status it wrote."""
    return catalog_item(isvc)[1] == digest and status_update(isvc, conditions, "") is None


def _follows(namespace: str, isvc: Manifest) -> frozenset[CatalogKey]:
    """What the InferenceService follows: the runtime it names (either kind), and then its model.
    Their changes roll out to it right away (spec 004); a pinned one (autoSync: false) renders from
    its pin whatever they are, and follows them for its RuntimeDrifted condition."""
    spec: dict[str, Any] = dict(isvc.get("spec") or {})
    runtime = spec.get("runtime") or {}
    if not runtime.get("name"):
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

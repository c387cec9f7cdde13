"""policyd's catalog and the cluster's (Cluster)ServingRuntimes, (Cluster)BaseModels,
AcceleratorClasses and InferenceServices. A policyd that watches the cluster itself (policyd
--cluster, as deployed) is followed: nothing is pushed, and each call says which resourceVersions
the controller has seen, so any replica answers from a catalog at least that new. A policyd
without it (local use) is kept equal: the changes watch events show are pushed together, and an
audit replaces the whole catalog with a fresh listing. Each audit asks policyd which it is. One
push at a time (several workers)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import TypeVar

import grpc

from policyd.clients.controller.kube import CatalogKey, Manifest
from policyd.clients.controller.reconcile import Unavailable
from policyd.clients.manifests import Item, catalog_item
from policyd.contract import policy_pb2 as pb
from policyd.contract import policy_pb2_grpc
from policyd.contract import resources_pb2 as rpb
from policyd.edge.metadata_keys import AT_LEAST_KEY, FIELD_KEY

log = logging.getLogger("policyd.controller.catalog")
# objects per request: policyd's default --max-objects (a daemon that takes fewer says so, and
# the push goes again in halves)
CHUNK = 1000
T = TypeVar("T")
REVISIONS_KEPT = 4096  # revisions recently built, that a decision made meanwhile may carry
CLUSTER = "cluster"  # GetStatusResponse.catalog_source of a policyd that watches the cluster itself


def _refused(err: grpc.RpcError) -> bool:
    return bool(err.code() == grpc.StatusCode.INVALID_ARGUMENT)


def _too_many(err: grpc.RpcError) -> bool:
    """policyd refused a request for holding more objects or keys than its --max-objects."""
    if err.code() != grpc.StatusCode.RESOURCE_EXHAUSTED:
        return False
    trailers = dict(err.trailing_metadata() or ())
    return trailers.get(FIELD_KEY) in ("objects", "keys")


class CatalogSync:
    def __init__(self, policy: policy_pb2_grpc.PolicyServiceStub, address: str = "") -> None:
        self.policy = policy
        self.address = address
        self._lock = threading.Lock()
        self._pushed: dict[CatalogKey, str] = {}  # key -> digest of what policyd holds
        self._refused: dict[CatalogKey, str] = {}  # key -> digest policyd refused (logged once)
        self._built: dict[str, int] = {}  # revisions our changes made -> when (a count), the last last
        self._count = 0
        self.chunk = CHUNK  # objects per request, halved while policyd takes fewer
        self.follows = False  # policyd watches the cluster itself: nothing is pushed
        self._seen: dict[str, int] = {}  # kind -> the newest resourceVersion observed of it

    def observed(self, obj: Manifest) -> None:
        """A watch showed ``obj`` (a catalog kind's): calls ask policyd to have seen it too."""
        version = str((obj.get("metadata") or {}).get("resourceVersion", ""))
        kind = str(obj.get("kind", ""))
        if version.isdigit():
            with self._lock:
                self._seen[kind] = max(self._seen.get(kind, 0), int(version))

    def at_least(self) -> tuple[tuple[str, str], ...]:
        """The call metadata asking a policyd that watches for a catalog at least as new as what
        the controller has seen (nothing for one it pushes to: its revisions tell)."""
        if not self.follows:
            return ()
        with self._lock:
            seen = ",".join(f"{kind}={version}" for kind, version in sorted(self._seen.items()))
        return ((AT_LEAST_KEY, seen),) if seen else ()

    @property
    def revision(self) -> str:
        """policyd's catalog revision after our last change."""
        return next(reversed(self._built), "")

    def mark(self) -> int:
        """Now, for built_since."""
        return self._count

    def built_since(self, revision: str, mark: int) -> bool:
        """Whether ``revision`` is the catalog we had built at ``mark`` or one we built since
        (waiting for a push in progress, whose revision a decision may carry before we learn it)."""
        if self.follows or self._built.get(revision, -1) >= mark:
            return True  # a policyd that watches answers at least as new as we asked (at_least)
        with self._lock:
            return self._built.get(revision, -1) >= mark

    def _record(self, revision: str) -> None:
        self._count += 1
        self._built.pop(revision, None)
        self._built[revision] = self._count
        if len(self._built) > REVISIONS_KEPT:
            del self._built[next(iter(self._built))]

    def replace(self, desired: Mapping[CatalogKey, Manifest]) -> list[CatalogKey]:
        """policyd's catalog becomes exactly ``desired`` but what policyd refuses; returns the keys
        whose content changed there."""
        with self._lock:
            items = {key: catalog_item(obj) for key, obj in desired.items()}
            if self._watches_itself():
                return self._follow({key: digest for key, (_, digest) in items.items()})
            accepted = {key: item for key, item in items.items() if self._refused.get(key) != item[1]}
            try:
                try:
                    self._in_chunks(lambda: self._replace(accepted))
                except grpc.RpcError as err:
                    if not _refused(err):
                        raise
                    # find which, then replace without them
                    self._drop_refused(
                        accepted,
                        lambda _, item: self.policy.ApplyObjects(
                            pb.ApplyObjectsRequest(objects=[rpb.Object(manifest=item[0])])
                        ),
                    )
                    self._in_chunks(lambda: self._replace(accepted))
            except grpc.RpcError as err:
                raise Unavailable("policyd", self.address, err) from err
            return self._follow({key: digest for key, (_, digest) in accepted.items()})

    def _follow(self, now: dict[CatalogKey, str]) -> list[CatalogKey]:
        """Under the lock: ``now`` is what policyd holds (pushed, or watched by policyd itself);
        the keys whose content changed."""
        before, self._pushed = self._pushed, now
        return [key for key in before.keys() | now.keys() if before.get(key) != now.get(key)]

    def _watches_itself(self) -> bool:
        """Whether policyd reads the cluster itself (asked at each audit: it may have been
        redeployed either way meanwhile)."""
        try:
            source = self.policy.GetStatus(pb.GetStatusRequest()).catalog_source
        except grpc.RpcError as err:
            raise Unavailable("policyd", self.address, err) from err
        follows: bool = source == CLUSTER
        if follows != self.follows:
            log.info(
                "policyd at %s %s",
                self.address,
                "watches the cluster itself: following it, pushing nothing"
                if follows
                else "does not watch the cluster: keeping its catalog equal to the cluster's",
            )
            self._refused.clear()
        self.follows = follows
        return follows

    def _replace(self, accepted: Mapping[CatalogKey, Item]) -> None:
        """In one request when it fits; else the first replaces (runtimes, models and classes first),
        the others add the rest. Decisions need only the catalog kinds: a catalog that lacks some
        InferenceServices meanwhile is the revision of no decision we keep."""
        ordered = sorted(accepted.items(), key=lambda entry: entry[0][0] == "InferenceService")
        deciding = sum(1 for key, _ in ordered if key[0] != "InferenceService")
        chunk = self.chunk
        for start in range(0, max(len(ordered), 1), chunk):
            objects = [rpb.Object(manifest=manifest) for _, (manifest, _) in ordered[start : start + chunk]]
            request = pb.ApplyObjectsRequest(objects=objects, replace=start == 0)
            answer = self.policy.ApplyObjects(request)
            if start == 0:
                self._say_removed([c.key for c in answer.changes if c.action == "deleted"])
            if start + chunk >= deciding:
                self._record(answer.catalog_revision)

    def _say_removed(self, removed: list[pb.ObjectKey]) -> None:
        """A replace removed objects the controller never pushed: policyd held another catalog
        (another cluster's controller, a catalog directory, a policyctl apply). Said, not silent."""
        strange = [k for k in removed if (k.kind, k.namespace, k.name) not in self._pushed]
        if strange:
            names = [f"{k.kind} {k.namespace + '/' if k.namespace else ''}{k.name}" for k in strange[:5]]
            log.warning(
                "policyd at %s held %d objects this cluster does not have (%s%s): they are removed, "
                "its catalog is this cluster's now; if another controller keeps it, point this one elsewhere",
                self.address,
                len(strange),
                ", ".join(names),
                ", …" if len(strange) > 5 else "",
                extra={"removed": len(strange)},
            )

    def _in_chunks(self, push: Callable[[], T]) -> T:
        """``push``, again with half as many objects per request while policyd refuses a request
        for holding more than its --max-objects (what was pushed before stays: every push
        leaves out what policyd already holds)."""
        while True:
            try:
                return push()
            except grpc.RpcError as err:
                if not _too_many(err) or self.chunk == 1:
                    raise
                self.chunk = max(1, self.chunk // 2)
                log.warning(
                    "policyd takes fewer objects in one request (%s); pushing %d at a time",
                    err.details(),
                    self.chunk,
                    extra={"chunk": self.chunk},
                )

    def update(self, changes: Mapping[CatalogKey, Manifest | None]) -> list[CatalogKey]:
        """Objects changed (None: deleted); returns the keys whose copy in policyd changed."""
        with self._lock:
            before = {key: self._pushed.get(key) for key in changes}
            if self.follows:
                for key, obj in changes.items():
                    if obj is None:
                        self._pushed.pop(key, None)
                    else:
                        self._pushed[key] = catalog_item(obj)[1]
                return [key for key, digest in before.items() if self._pushed.get(key) != digest]
            try:
                self._in_chunks(lambda: self._update(changes))
            except grpc.RpcError as err:
                raise Unavailable("policyd", self.address, err) from err
            return [key for key, digest in before.items() if self._pushed.get(key) != digest]

    def _update(self, changes: Mapping[CatalogKey, Manifest | None]) -> None:
        gone = [key for key, obj in changes.items() if obj is None]
        for key in gone:
            self._refused.pop(key, None)
        items = {key: catalog_item(obj) for key, obj in changes.items() if obj is not None}
        items = {
            key: item for key, item in items.items() if item[1] not in (self._pushed.get(key), self._refused.get(key))
        }
        entries, size = list(items.items()), self.chunk
        for start in range(0, len(entries), size):
            chunk = dict(entries[start : start + size])
            try:
                self._apply(chunk)
            except grpc.RpcError as err:
                if not _refused(err):
                    raise
                # What policyd refuses (as OME's webhook would) is not in the catalog, nor an older
                # version of it: deciding on a version the cluster no longer has would be wrong.
                gone += self._drop_refused(dict(chunk), lambda key, item: self._apply({key: item}))
        self._delete(gone)

    def _apply(self, items: Mapping[CatalogKey, Item]) -> None:
        objects = [rpb.Object(manifest=manifest) for manifest, _ in items.values()]
        self._record(self.policy.ApplyObjects(pb.ApplyObjectsRequest(objects=objects)).catalog_revision)
        for key, (_, digest) in items.items():
            self._pushed[key] = digest
            self._refused.pop(key, None)

    def _delete(self, keys: list[CatalogKey]) -> None:
        size = self.chunk
        for start in range(0, len(keys), size):
            request = pb.DeleteObjectsRequest(
                keys=[pb.ObjectKey(kind=kind, namespace=ns, name=name) for kind, ns, name in keys[start : start + size]]
            )
            self._record(self.policy.DeleteObjects(request).catalog_revision)
        for key in keys:
            self._pushed.pop(key, None)

    def _drop_refused(
        self, items: dict[CatalogKey, Item], apply: Callable[[CatalogKey, Item], object]
    ) -> list[CatalogKey]:
        """One refused object fails a whole request: ``apply`` each of ``items`` alone to know which.
        Those policyd refuses are logged and taken out of ``items``; returns their keys."""
        refused = []
        for key, item in list(items.items()):
            try:
                apply(key, item)
            except grpc.RpcError as err:
                if not _refused(err):
                    raise
                self._log_refusal(key, item, err)
                del items[key]
                refused.append(key)
        return refused

    def _log_refusal(self, key: CatalogKey, item: Item, err: grpc.RpcError) -> None:
        self._refused[key] = item[1]
        kind, namespace, name = key
        log.warning(
            "policyd refused %s %s: %s",
            kind,
            f"{namespace}/{name}" if namespace else name,
            err.details(),
            extra={"kind": kind, "namespace": namespace, "object": name},
        )

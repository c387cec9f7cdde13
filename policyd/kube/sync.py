"""The catalog read from the cluster (``policyd --cluster``): the six OME kinds listed and
watched (policyd.kube.watch), each event parsed once into a catalog object and handed to the
serving state as one change. Ready once every kind's first list is in; stale, and saying since
when, while the API server does not answer (the last synced catalog keeps serving). Objects the
catalog refuses are kept out, and named."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from kubernetes import client

from policyd.catalog.snapshot import CatalogObject, Key, make_key
from policyd.edge.metadata_keys import AT_LEAST_KEY
from policyd.errors import InvalidInput
from policyd.kube.watch import KindWatch, Manifest
from policyd.resources.cluster_content import catalog_content
from policyd.resources.kinds import OME_KINDS, OmeKind
from policyd.resources.manifests import parse_object

log = logging.getLogger("policyd.cluster")


@dataclass(frozen=True)
class Refusal:
    """A cluster object the catalog does not take, and why (what OME's webhook would refuse in it)."""

    key: Key
    field: str
    message: str

    def __str__(self) -> str:
        kind, namespace, name = self.key
        return f"{kind}/{namespace + '/' if namespace else ''}{name}: {self.field}: {self.message}"


class Catalog(Protocol):
    """Where the cluster's objects go: the serving state."""

    def take_cluster(
        self, kind: str, objects: Sequence[CatalogObject], deleted: Sequence[Key] = (), whole: bool = False
    ) -> list[Refusal]: ...


@dataclass
class KindState:
    kind: OmeKind
    synced: bool = False
    resource_version: str = ""
    keys: set[Key] = field(default_factory=set)  # in the catalog
    failing_since: float = 0.0  # 0: answered since its last failure
    error: str = ""


Parsed = CatalogObject | Refusal  # a cluster object as the catalog takes it, or why it does not


def _parse(obj: Manifest) -> Parsed:
    """The object without the cluster's bookkeeping, parsed once; or why the catalog refuses it."""
    try:
        return parse_object(catalog_content(obj))
    except InvalidInput as err:
        meta = obj.get("metadata") or {}
        key = make_key(str(obj.get("kind", "")), str(meta.get("namespace", "")), str(meta.get("name", "")))
        return Refusal(key, err.field, err.message)


def parse_resource_version(text: str) -> int | None:
    """A resourceVersion as a number, to compare (etcd's revision; None when the server's is not one)."""
    return int(text) if text.isdigit() else None


def parse_at_least(text: str) -> dict[str, int]:
    """``Kind=resourceVersion,…`` (the AT_LEAST_KEY metadata); InvalidInput naming what is wrong."""
    wanted: dict[str, int] = {}
    kinds = {k.name for k in OME_KINDS}
    for pair in filter(None, (p.strip() for p in text.split(","))):
        kind, sep, version = pair.partition("=")
        if not sep or kind not in kinds or not version.isdigit():
            raise InvalidInput(
                AT_LEAST_KEY, f"{pair!r} is not Kind=resourceVersion (a kind of {', '.join(sorted(kinds))})"
            )
        wanted[kind] = max(wanted.get(kind, 0), int(version))
    return wanted


class ClusterCatalog:
    def __init__(
        self,
        catalog: Catalog,
        api: client.ApiClient,
        on_ready: Callable[[], None] = lambda: None,
        on_change: Callable[[ClusterCatalog], None] = lambda _: None,
        kinds: tuple[OmeKind, ...] = OME_KINDS,
    ) -> None:
        self._catalog = catalog
        self.on_ready = on_ready  # once every kind is listed
        self._on_change = on_change  # after each change the catalog took (metrics)
        self._lock = threading.Condition()
        self._kinds = {kind.name: KindState(kind) for kind in kinds}
        self.refused: dict[Key, Refusal] = {}
        self.ready = False
        self._watches = [KindWatch(api, kind, self, _parse) for kind in kinds]

    def start(self) -> None:
        for w in self._watches:
            w.start()

    def stop(self) -> None:
        for w in self._watches:
            w.stop()

    # --- what the servicer asks

    def unsynced(self) -> list[str]:
        """The kinds whose first list is not in yet."""
        with self._lock:
            return [name for name, state in self._kinds.items() if not state.synced]

    def stale(self) -> tuple[float, str]:
        """Since when the API server has not answered a watch (0 when every watch is answered), and why."""
        with self._lock:
            failing = [s for s in self._kinds.values() if s.failing_since]
            if not failing:
                return 0.0, ""
            first = min(failing, key=lambda s: s.failing_since)
            return first.failing_since, f"{first.kind.name}: {first.error}"

    def kinds(self) -> list[tuple[KindState, int, int, int]]:
        """Each kind's state, with its refused objects, lists and watches counted."""
        with self._lock:
            refused: dict[str, int] = {}
            for key in self.refused:
                refused[key[0]] = refused.get(key[0], 0) + 1
            return [
                (state, refused.get(name, 0), w.counts.lists, w.counts.watches)
                for (name, state), w in zip(self._kinds.items(), self._watches, strict=True)
            ]

    def behind(self, wanted: Mapping[str, int], timeout: float) -> str:
        """Wait up to ``timeout`` seconds for the catalog to have seen each kind up to its
        resourceVersion in ``wanted``; what is still behind then ("" when nothing)."""

        def lagging() -> str:
            for name, version in wanted.items():
                seen = parse_resource_version(self._kinds[name].resource_version)
                if seen is not None and seen < version:
                    return f"{name} seen up to resourceVersion {seen}, asked for {version}"
            return ""

        with self._lock:
            self._lock.wait_for(lambda: not lagging(), timeout)
            return lagging()

    # --- the watches' reports (each kind's own thread)

    def listed(self, kind: OmeKind, objects: Sequence[Parsed], resource_version: str) -> None:
        parsed = [o for o in objects if not isinstance(o, Refusal)]
        unparsed = [o for o in objects if isinstance(o, Refusal)]
        refused = self._catalog.take_cluster(kind.name, parsed, whole=True)
        with self._lock:
            state = self._kinds[kind.name]
            previous = {k: self.refused.pop(k) for k in [k for k in self.refused if k[0] == kind.name]}
            state.keys = {make_key(kind.name, o.meta.namespace, o.meta.name) for o in parsed}
            self._refuse(state, [*unparsed, *refused], previous)
            first = not state.synced
            state.synced, state.resource_version = True, resource_version
            became_ready = not self.ready and all(s.synced for s in self._kinds.values())
            self.ready = self.ready or became_ready
            self._lock.notify_all()
        if first:
            log.info(
                "%s listed: %d objects",
                kind.name,
                len(objects),
                extra={"kind": kind.name, "objects": len(objects), "resource_version": resource_version},
            )
        if became_ready:
            log.info("every kind listed: the catalog is the cluster's; serving")
            self.on_ready()
        self._on_change(self)

    def changed(self, kind: OmeKind, event: str, obj: Manifest, resource_version: str) -> None:
        meta = obj.get("metadata") or {}
        key = make_key(kind.name, str(meta.get("namespace", "")), str(meta.get("name", "")))
        found = None if event == "DELETED" else _parse(obj)
        parsed = [found] if found is not None and not isinstance(found, Refusal) else []
        # an object deleted, or one the catalog cannot take: its older version goes too
        refused = self._catalog.take_cluster(kind.name, parsed, [] if parsed else [key])
        with self._lock:
            state = self._kinds[kind.name]
            previous = {key: self.refused.pop(key)} if key in self.refused else {}
            state.keys.discard(key)
            state.keys.update(make_key(kind.name, o.meta.namespace, o.meta.name) for o in parsed)
            self._refuse(state, [*(r for r in [found] if isinstance(r, Refusal)), *refused], previous)
            state.resource_version = resource_version
            self._lock.notify_all()
        self._on_change(self)

    def moved(self, kind: OmeKind, resource_version: str) -> None:
        with self._lock:
            self._kinds[kind.name].resource_version = resource_version
            self._lock.notify_all()

    def connected(self, kind: OmeKind) -> None:
        with self._lock:
            state = self._kinds[kind.name]
            if state.failing_since:
                log.info("%s: the API server answers again", kind.name, extra={"kind": kind.name})
            state.failing_since, state.error = 0.0, ""

    def failed(self, kind: OmeKind, error: str) -> None:
        with self._lock:
            state = self._kinds[kind.name]
            if not state.failing_since:
                state.failing_since = time.time()
                log.warning(
                    "%s: the API server does not answer (%s); the last synced catalog keeps serving",
                    kind.name,
                    error,
                    extra={"kind": kind.name, "error": error},
                )
            state.error = error

    # --- helpers

    def _refuse(self, state: KindState, refusals: Sequence[Refusal], previous: Mapping[Key, Refusal]) -> None:
        """Under the lock: keep ``refusals`` out of the kind's keys, named; logged when new (not in ``previous``)."""
        for refusal in refusals:
            state.keys.discard(refusal.key)
            if previous.get(refusal.key) != refusal:
                kind, namespace, name = refusal.key
                log.warning(
                    "cluster object refused; it stays out of the catalog: %s",
                    refusal,
                    extra={
                        "kind": kind,
                        "namespace": namespace,
                        "object": name,
                        "field": refusal.field,
                        "error": refusal.message,
                    },
                )
            self.refused[refusal.key] = refusal

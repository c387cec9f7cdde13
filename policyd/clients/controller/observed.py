"""The live objects InferenceServices own, as the watches show them: the workloads the controller
applied (with the status the cluster's controllers write on them) and their pods. Readiness is
computed from these, so a status refresh reads nothing from the API server. A listing (the
controller's first audit) fills it before any status is computed: the watches' own first
listings may come after an InferenceService's, and a status computed without its workloads would
say "Initializing" of one that is Ready."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

from policyd.clients.renderer.metadata import LABEL_ISVC

Manifest = Mapping[str, Any]
IsvcKey = tuple[str, str]  # (namespace, name)
ObjectKey = tuple[str, str]  # (kind, name)
# what readiness reads: the workloads' status, the Services' ports, the pods' scheduling and containers
STATUS_KINDS = (
    ("apps/v1", "Deployment"),
    ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet"),
    ("v1", "Service"),
    ("v1", "Pod"),
)
STATUS_KIND_NAMES = frozenset(kind for _, kind in STATUS_KINDS)
_UNREAD_METADATA = frozenset({"managedFields", "annotations"})  # annotations: kept less the one below
_LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def owner(obj: Manifest) -> tuple[IsvcKey, str] | None:
    """The InferenceService an object belongs to, and its uid: a workload's controller reference;
    a pod's label (its controller is a ReplicaSet or a LeaderWorkerSet's StatefulSet)."""
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace", "")
    if obj.get("kind") == "Pod":
        name = (meta.get("labels") or {}).get(LABEL_ISVC)
        return ((namespace, name), "") if name else None
    for ref in meta.get("ownerReferences") or []:
        if ref.get("controller") and ref.get("kind") == "InferenceService":
            return (namespace, ref.get("name", "")), ref.get("uid", "")
    return None


def trimmed(obj: Manifest) -> Manifest:
    """What readiness reads of an object, copied: its managedFields, kubectl's last applied
    configuration and (but a Service's ports) its spec are most of a pod's or a Deployment's size,
    and thousands of them are held. A copy, so the parsed listing it came from is freed whole."""
    meta = obj.get("metadata") or {}
    kept: dict[str, Any] = {k: _copied(v) for k, v in obj.items() if k not in ("metadata", "spec")}
    kept["metadata"] = {k: _copied(v) for k, v in meta.items() if k not in _UNREAD_METADATA}
    annotations = meta.get("annotations")
    if isinstance(annotations, Mapping):
        kept["metadata"]["annotations"] = {k: v for k, v in annotations.items() if k != _LAST_APPLIED}
    if obj.get("kind") == "Service":
        kept["spec"] = {"ports": _copied((obj.get("spec") or {}).get("ports"))}
    return kept


def _copied(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _copied(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copied(v) for v in value]
    return value


def _keys(obj: Manifest) -> tuple[IsvcKey, ObjectKey] | None:
    found = owner(obj)
    if found is None or obj.get("kind") not in STATUS_KIND_NAMES:
        return None
    return found[0], (str(obj.get("kind")), (obj.get("metadata") or {}).get("name", ""))


class Observed:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seq = 0  # counts watch events, to tell one newer than a listing
        # (seq, object); None: deleted (kept until a listing newer than the deletion)
        self._objects: dict[IsvcKey, dict[ObjectKey, tuple[int, Manifest | None]]] = {}
        self._listed = False  # once listed, a deletion needs no record: no listing will bring it back

    def mark(self) -> int:
        """Where the watches are now: take it before a listing starts."""
        with self._lock:
            return self._seq

    def seen(self, event_type: str | None, obj: Manifest) -> None:
        """A watch event (``event_type`` None: an object of a listing) of an owned object."""
        keys = _keys(obj)
        if keys is None:
            return
        isvc, key = keys
        with self._lock:
            self._seq += 1
            objects = self._objects.setdefault(isvc, {})
            if event_type != "DELETED":
                objects[key] = (self._seq, trimmed(obj))
            elif not self._listed:
                objects[key] = (self._seq, None)
            else:
                objects.pop(key, None)
                if not objects:
                    del self._objects[isvc]

    def listed(self, objects: Sequence[Manifest], start: int) -> None:
        """Every owned object of the status kinds (``trimmed`` already), listed after ``mark()``
        gave ``start``: what no watch event showed since is as listed."""
        fresh: dict[IsvcKey, dict[ObjectKey, Manifest]] = {}
        for obj in objects:
            keys = _keys(obj)
            if keys is not None:
                fresh.setdefault(keys[0], {})[keys[1]] = obj
        with self._lock:
            self._listed = True
            for isvc in set(self._objects) | set(fresh):
                mine, theirs = self._objects.get(isvc, {}), fresh.get(isvc, {})
                kept = {k: v for k, v in mine.items() if v[0] > start}  # newer than the listing
                kept.update({k: (0, obj) for k, obj in theirs.items() if k not in kept})
                if any(obj is not None for _, obj in kept.values()):
                    self._objects[isvc] = kept
                else:
                    self._objects.pop(isvc, None)

    def of(self, isvc: IsvcKey) -> tuple[list[Manifest], list[Manifest]]:
        """The InferenceService's workloads and pods, each sorted by name (the same input, the same status)."""
        with self._lock:
            objects = sorted((k, obj) for k, (_, obj) in self._objects.get(isvc, {}).items() if obj is not None)
        workloads = [obj for (kind, _), obj in objects if kind != "Pod"]
        pods = [obj for (kind, _), obj in objects if kind == "Pod"]
        return workloads, pods

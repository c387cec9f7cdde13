"""A catalog snapshot: what runtimes, models, InferenceServices and AcceleratorClasses exist,
at one revision.

Snapshots are immutable. A change of a few objects makes the next snapshot from this one
(``changed``) without touching the others: the revision is a sum of per-object digests, and
what a snapshot derived for its requests (runtimes in scope by name, indexes) is carried over
by updating only the changed objects."""

from __future__ import annotations

import bisect
import hashlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from policyd.catalog.layered import layered
from policyd.resources.objects import (
    ACCELERATOR_CLASS_KIND,
    ISVC_KIND,
    MODEL_KINDS,
    NAMESPACED_KINDS,
    RUNTIME_KINDS,
    AcceleratorClass,
    BaseModel,
    InferenceService,
    ServingRuntime,
)

Key = tuple[str, str, str]  # kind, namespace ("" at cluster scope), name
CatalogObject = BaseModel | ServingRuntime | InferenceService | AcceleratorClass
Changes = Mapping[Key, CatalogObject | None]  # None: deleted
T = TypeVar("T")
_REVISION_BITS = 48  # 12 hex digits


def make_key(kind: str, namespace: str, name: str) -> Key:
    """The catalog key of an object; cluster-scoped kinds ignore the namespace."""
    return (kind, namespace if kind in NAMESPACED_KINDS else "", name)


def key_of(obj: CatalogObject) -> Key:
    return make_key(obj.kind, obj.meta.namespace, obj.meta.name)


def _object_hash(obj: CatalogObject) -> int:
    text = f"{'/'.join(key_of(obj))}={obj.digest}".encode()
    return int.from_bytes(hashlib.sha256(text).digest()[: _REVISION_BITS // 8], "big")


def _revision(total: int) -> str:
    return f"{total:0{_REVISION_BITS // 4}x}"


def revision_of(objects: Iterable[CatalogObject]) -> str:
    """A revision that changes whenever any object's content, or the set of objects, does:
    the sum of the objects' digests, so one change updates it without the others."""
    return _revision(sum(_object_hash(o) for o in objects) % (1 << _REVISION_BITS))


class Derived(Protocol):
    """Something a snapshot computed from its objects that a changed snapshot can update."""

    def derive(self, catalog: Catalog, changes: Changes) -> Derived | None:
        """The same for ``catalog`` (this snapshot with ``changes``), or None to compute it anew."""


# which of a catalog's mappings holds each kind
_MAP_OF = {
    **dict.fromkeys(RUNTIME_KINDS, 0),
    **dict.fromkeys(MODEL_KINDS, 1),
    ISVC_KIND: 2,
    ACCELERATOR_CLASS_KIND: 3,
}


@dataclass(frozen=True)
class AcceleratorClasses:
    """The catalog's AcceleratorClasses by name, and their revision: what a fact read from the
    catalog reads, and what verdicts judged from such a fact are kept by (decision/verdict_cache.py)."""

    by_name: Mapping[str, AcceleratorClass]
    revision: str

    @staticmethod
    def of(catalog: Catalog) -> AcceleratorClasses:
        classes = catalog.accelerator_classes.values()
        return AcceleratorClasses({c.meta.name: c for c in classes}, revision_of(classes))

    def derive(self, catalog: Catalog, changes: Changes) -> AcceleratorClasses | None:
        """Carried over while no AcceleratorClass changes."""
        return None if any(key[0] == ACCELERATOR_CLASS_KIND for key in changes) else self


NO_ACCELERATOR_CLASSES = AcceleratorClasses({}, revision_of(()))


@dataclass(frozen=True)
class Catalog:
    revision: str
    runtimes: Mapping[Key, ServingRuntime]
    models: Mapping[Key, BaseModel]
    # not read by decisions: the InferenceServices a controller synced (what-if's subjects); the
    # AcceleratorClasses, what lint checks accelerator class names against and catalog facts read
    inference_services: Mapping[Key, InferenceService] = field(default_factory=dict)
    accelerator_classes: Mapping[Key, AcceleratorClass] = field(default_factory=dict)
    total: int = 0  # the revision's sum
    _derived: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)

    @staticmethod
    def of(objects: Iterable[CatalogObject], revision: str = "") -> Catalog:
        maps: tuple[dict[Key, Any], ...] = ({}, {}, {}, {})
        for obj in objects:
            maps[_MAP_OF[obj.kind]][key_of(obj)] = obj
        total = sum(_object_hash(o) for m in maps for o in m.values()) % (1 << _REVISION_BITS)
        runtimes, models, isvcs, classes = maps
        return Catalog(revision or _revision(total), runtimes, models, isvcs, classes, total)

    def objects(self) -> list[CatalogObject]:
        return [
            *self.runtimes.values(),
            *self.models.values(),
            *self.inference_services.values(),
            *self.accelerator_classes.values(),
        ]

    def keys(self) -> list[Key]:
        return [*self.runtimes, *self.models, *self.inference_services, *self.accelerator_classes]

    def get(self, key: Key) -> CatalogObject | None:
        found: CatalogObject | None = (
            self.runtimes.get(key)
            or self.models.get(key)
            or self.inference_services.get(key)
            or self.accelerator_classes.get(key)
        )
        return found

    def changed(self, upserts: Iterable[CatalogObject] = (), deletes: Iterable[Key] = ()) -> Catalog:
        """This catalog with ``upserts`` added or replaced and ``deletes`` removed; it costs
        the changed objects, not a pass over (or a copy of) every object (policyd.catalog.layered)."""
        maps = self._maps()
        edits: tuple[dict[Key, Any], ...] = ({}, {}, {}, {})
        changes: dict[Key, CatalogObject | None] = {}
        total = self.total

        def current(i: int, key: Key) -> CatalogObject | None:
            found: CatalogObject | None = edits[i][key] if key in edits[i] else maps[i].get(key)
            return found

        for key in deletes:
            i = _MAP_OF.get(key[0])
            old = current(i, key) if i is not None else None
            if i is not None and old is not None:
                total -= _object_hash(old)
                edits[i][key] = None
                changes[key] = None
        for obj in upserts:
            key = key_of(obj)
            i = _MAP_OF[obj.kind]
            old = current(i, key)
            if old is not None:
                total -= _object_hash(old)
            total += _object_hash(obj)
            edits[i][key] = obj
            changes[key] = obj
        total %= 1 << _REVISION_BITS
        runtimes, models, isvcs, classes = (layered(m).changed(e) for m, e in zip(maps, edits, strict=True))
        out = Catalog(_revision(total), runtimes, models, isvcs, classes, total)
        for name, value in list(self._derived.items()):
            carried = value.derive(out, changes)
            if carried is not None:
                out._derived[name] = carried
        return out

    def _maps(self) -> tuple[Mapping[Key, Any], ...]:
        return (self.runtimes, self.models, self.inference_services, self.accelerator_classes)

    def overlay(self, objects: list[CatalogObject], isolated: bool) -> Catalog:
        """This catalog with ``objects`` added or replaced (or only ``objects`` when isolated), for one request."""
        if not objects and not isolated:
            return self
        extra = revision_of(objects)
        if isolated:
            return Catalog.of(objects, extra)
        merged = self.changed(objects)
        return Catalog(
            f"{self.revision}+{extra}",
            merged.runtimes,
            merged.models,
            merged.inference_services,
            merged.accelerator_classes,
            merged.total,
            merged._derived,
        )

    def derived(self, name: Any, build: Callable[[Catalog], T]) -> T:
        """What ``build`` computes from this snapshot, once per snapshot (and carried over to
        changed snapshots when it is Derived)."""
        value = self._derived.get(name)
        if value is None:
            value = self._derived[name] = build(self)
        return value

    def classes(self) -> AcceleratorClasses:
        """The AcceleratorClasses by name, once per snapshot while none changes."""
        return self.derived(("accelerator classes",), AcceleratorClasses.of)

    def in_scope(self, namespace: str) -> tuple[ServingRuntime, ...]:
        """The runtimes an InferenceService in ``namespace`` may use: its namespace's
        ServingRuntimes, then every ClusterServingRuntime, each by name. The same object for
        a namespace while the snapshot stands (what is kept per scope is found by it)."""
        cluster = self._by_name("ClusterServingRuntime", "").runtimes
        namespaced = self._by_name("ServingRuntime", namespace).runtimes
        if not namespaced:
            return cluster
        return self.derived(("in scope", namespace), lambda c: _InScope((*namespaced, *cluster))).runtimes

    def of_kind(self, kind: str, namespace: str) -> tuple[ServingRuntime, ...]:
        """The runtimes of ``kind`` in ``namespace`` (empty for ClusterServingRuntimes), by name."""
        return self._by_name(kind, namespace).runtimes

    def _by_name(self, kind: str, namespace: str) -> _ByName:
        return self.derived(("by name", kind, namespace), lambda c: _ByName.of(c, kind, namespace))

    def runtime(self, kind: str, namespace: str, name: str) -> ServingRuntime | None:
        return self.runtimes.get(make_key(kind, namespace, name))


def _name(runtime: ServingRuntime) -> str:
    return runtime.meta.name


@dataclass(frozen=True)
class _InScope:
    runtimes: tuple[ServingRuntime, ...]

    def derive(self, catalog: Catalog, changes: Changes) -> None:
        """Not carried over: made again from the changed snapshot's runtimes by name."""
        return None


@dataclass(frozen=True)
class _ByName:
    """The runtimes of one kind in one namespace, by name."""

    kind: str
    namespace: str
    runtimes: tuple[ServingRuntime, ...]

    @staticmethod
    def of(catalog: Catalog, kind: str, namespace: str) -> _ByName:
        found = [r for (k, ns, _), r in catalog.runtimes.items() if k == kind and ns == namespace]
        return _ByName(kind, namespace, tuple(sorted(found, key=_name)))

    def derive(self, catalog: Catalog, changes: Changes) -> _ByName:
        mine = [k for k in changes if k[0] == self.kind and k[1] == self.namespace]
        if not mine:
            return self
        runtimes = list(self.runtimes)
        for key in mine:
            at = bisect.bisect_left(runtimes, key[2], key=_name)
            if at < len(runtimes) and runtimes[at].meta.name == key[2]:
                del runtimes[at]
            new = changes[key]
            if isinstance(new, ServingRuntime):
                runtimes.insert(bisect.bisect_left(runtimes, key[2], key=_name), new)
        return _ByName(self.kind, self.namespace, tuple(runtimes))

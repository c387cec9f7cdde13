"""A catalog snapshot: what runtimes and models exist, at one revision."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from policyd.resources.objects import NAMESPACED_KINDS, AcceleratorClass, BaseModel, InferenceService, ServingRuntime

Key = tuple[str, str, str]  # kind, namespace ("" at cluster scope), name
CatalogObject = BaseModel | ServingRuntime | InferenceService | AcceleratorClass


def make_key(kind: str, namespace: str, name: str) -> Key:
    """The catalog key of an object; cluster-scoped kinds ignore the namespace."""
    return (kind, namespace if kind in NAMESPACED_KINDS else "", name)


def key_of(obj: CatalogObject) -> Key:
    return make_key(obj.kind, obj.meta.namespace, obj.meta.name)


def revision_of(objects: Iterable[CatalogObject]) -> str:
    """A revision that changes whenever any object's content, or the set of objects, does."""
    h = hashlib.sha256()
    for key, content in sorted((key_of(o), o.digest) for o in objects):
        h.update(f"{'/'.join(key)}={content}\n".encode())
    return h.hexdigest()[:12]


@dataclass(frozen=True)
class Catalog:
    revision: str
    runtimes: Mapping[Key, ServingRuntime]
    models: Mapping[Key, BaseModel]
    # not read by decisions: the InferenceServices a controller synced (what-if's subjects) and the
    # AcceleratorClasses (what lint checks accelerator class names against)
    inference_services: Mapping[Key, InferenceService] = field(default_factory=dict)
    accelerator_classes: Mapping[Key, AcceleratorClass] = field(default_factory=dict)

    @staticmethod
    def of(objects: Iterable[CatalogObject], revision: str = "") -> Catalog:
        runtimes: dict[Key, ServingRuntime] = {}
        models: dict[Key, BaseModel] = {}
        isvcs: dict[Key, InferenceService] = {}
        classes: dict[Key, AcceleratorClass] = {}
        for obj in objects:
            if isinstance(obj, ServingRuntime):
                runtimes[key_of(obj)] = obj
            elif isinstance(obj, BaseModel):
                models[key_of(obj)] = obj
            elif isinstance(obj, InferenceService):
                isvcs[key_of(obj)] = obj
            else:
                classes[key_of(obj)] = obj
        everything: list[CatalogObject] = [*runtimes.values(), *models.values(), *isvcs.values(), *classes.values()]
        return Catalog(revision or revision_of(everything), runtimes, models, isvcs, classes)

    def objects(self) -> list[CatalogObject]:
        return [
            *self.runtimes.values(),
            *self.models.values(),
            *self.inference_services.values(),
            *self.accelerator_classes.values(),
        ]

    def get(self, key: Key) -> CatalogObject | None:
        found: CatalogObject | None = (
            self.runtimes.get(key)
            or self.models.get(key)
            or self.inference_services.get(key)
            or self.accelerator_classes.get(key)
        )
        return found

    def overlay(self, objects: list[CatalogObject], isolated: bool) -> Catalog:
        """This catalog with ``objects`` added or replaced (or only ``objects`` when isolated), for one request."""
        if not objects and not isolated:
            return self
        base: list[CatalogObject] = [] if isolated else self.objects()
        extra = revision_of(objects)
        return Catalog.of([*base, *objects], f"{'' if isolated else self.revision + '+'}{extra}")

    def in_scope(self, namespace: str) -> list[ServingRuntime]:
        """The runtimes an InferenceService in ``namespace`` may use: its namespace's
        ServingRuntimes, then every ClusterServingRuntime, each by name."""
        namespaced = sorted(
            (r for (kind, ns, _), r in self.runtimes.items() if kind == "ServingRuntime" and ns == namespace),
            key=lambda r: r.meta.name,
        )
        cluster = sorted(
            (r for (kind, _, _), r in self.runtimes.items() if kind == "ClusterServingRuntime"),
            key=lambda r: r.meta.name,
        )
        return [*namespaced, *cluster]

    def runtime(self, kind: str, namespace: str, name: str) -> ServingRuntime | None:
        return self.runtimes.get(make_key(kind, namespace, name))

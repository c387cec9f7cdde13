"""Where OME places the engine's and the decoder's pods, and what it gives their runners, from the
AcceleratorClass chosen for the component (components/base.go, utils/merging.go), leaders and
workers included:

- nodeSelector (UpdatePodSpecNodeSelector, MergeNodeSelector), with a base model only: the
  runtime's ``spec.nodeSelector``, the class's ``spec.discovery.nodeSelector`` over it and the
  InferenceService component's own ``nodeSelector`` over that, all over the pod's (whose
  model-ready label is already there).
- affinity (UpdateEngineAffinity, UpdateDecoderAffinity): the class's
  ``spec.discovery.affinity``, in place of the pod's, when the InferenceService component sets
  no ``affinity`` of its own.
- resources (MergeResource), when the InferenceService component's runner sets none: requests
  and limits the runner lacks from the runtime's ``spec.containers`` entry of the runner's name,
  then each of the class's ``spec.resources`` in both, over any value.

Without a class (none chosen, or its object not given) the runtime's and the InferenceService's
parts still apply, as they do in OME.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from policyd.clients.renderer.parts import Runner
from policyd.errors import InvalidInput
from policyd.resources import kinds as ome

DEFAULT_QUANTITY = "1"  # the CRD's default for spec.resources[].quantity, which OME reads defaulted
_KINDS = ("requests", "limits")

Quantity = str | int


@dataclass(frozen=True)
class AcceleratorClass:
    name: str
    node_selector: Mapping[str, str]  # spec.discovery.nodeSelector
    affinity: Mapping[str, Any] | None  # spec.discovery.affinity; None when unset
    resources: Mapping[str, Quantity]  # spec.resources: resource name -> quantity per pod


@dataclass(frozen=True)
class Placement:
    """What OME writes over an engine's or a decoder's finished pod spec."""

    node_selector: Mapping[str, str]
    affinity: Mapping[str, Any] | None  # replaces the pod's when set

    def place(self, pod: dict[str, Any]) -> None:
        if self.node_selector:
            pod["nodeSelector"] = {**(pod.get("nodeSelector") or {}), **self.node_selector}
        if self.affinity is not None:
            pod["affinity"] = copy.deepcopy(dict(self.affinity))


def accelerator_classes(manifests: Sequence[Mapping[str, Any]]) -> dict[str, AcceleratorClass]:
    """The given AcceleratorClass objects by name."""
    parsed = (_accelerator_class(manifest) for manifest in manifests)
    return {accelerator_class.name: accelerator_class for accelerator_class in parsed}


def placement(
    runtime_spec: Mapping[str, Any],
    accelerator_class: AcceleratorClass | None,
    isvc_component: Mapping[str, Any],
    has_model: bool,
) -> Placement:
    """``isvc_component``: the InferenceService's own engine or decoder, before any merge, which
    is what OME reads here."""
    node_selector: dict[str, str] = {}
    if has_model:  # OME places a component by selector only when it serves a base model
        node_selector.update(_string_map(runtime_spec.get("nodeSelector"), "runtime spec.nodeSelector"))
        node_selector.update(accelerator_class.node_selector if accelerator_class else {})
        node_selector.update(isvc_component.get("nodeSelector") or {})
    # OME looks only at the InferenceService's component-level affinity, so the class's also
    # replaces one from the runtime's config or from a leader or worker.
    own_affinity = isvc_component.get("affinity") is not None
    affinity = None if own_affinity or accelerator_class is None else accelerator_class.affinity
    return Placement(node_selector, affinity)


def runtime_resources(runtime_spec: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """The resources of the runtime's ``spec.containers`` by container name, the first of a name
    (where OME stops looking)."""
    containers = runtime_spec.get("containers") or []
    if not isinstance(containers, list):
        raise InvalidInput("runtime spec.containers", f"must be a list, got {type(containers).__name__}")
    found: dict[str, Mapping[str, Any]] = {}
    for i, entry in enumerate(containers):
        name = entry.get("name") if isinstance(entry, Mapping) else None
        if not isinstance(name, str) or name in found:
            continue
        resources = entry.get("resources") or {}
        path = f"runtime spec.containers[{i}].resources"
        if not isinstance(resources, Mapping):
            raise InvalidInput(path, f"must be a mapping, got {type(resources).__name__}")
        for kind in _KINDS:
            if resources.get(kind) is not None and not isinstance(resources[kind], Mapping):
                raise InvalidInput(f"{path}.{kind}", f"must be a mapping, got {type(resources[kind]).__name__}")
        found[name] = resources
    return found


def merge_resources(
    runner: Runner,
    from_runtime: Mapping[str, Mapping[str, Any]],
    accelerator_class: AcceleratorClass | None,
    isvc_component: Mapping[str, Any],
) -> Runner:
    """The runner with OME's MergeResource applied, unless the InferenceService's own runner
    (not a leader's or worker's) sets resources. ``from_runtime``: runtime_resources()."""
    if _sets_resources(isvc_component.get("runner")):
        return runner
    runtime_container = from_runtime.get(runner.get("name") or "") or {}
    resources = dict(runner.get("resources") or {})
    for kind in _KINDS:
        merged = {**(runtime_container.get(kind) or {}), **(resources.get(kind) or {})}
        merged.update(accelerator_class.resources if accelerator_class else {})
        if merged:  # an empty map OME leaves out (omitempty)
            resources[kind] = merged
    return {**runner, "resources": resources} if resources else runner


def _sets_resources(runner: Any) -> bool:
    """Whether a runner sets requests, limits or claims; an empty map counts, as OME decodes it
    to a non-nil one."""
    resources = (runner.get("resources") if isinstance(runner, Mapping) else None) or {}
    return resources.get("requests") is not None or resources.get("limits") is not None or bool(resources.get("claims"))


def _accelerator_class(manifest: Mapping[str, Any]) -> AcceleratorClass:
    metadata = _mapping(manifest.get("metadata"), "AcceleratorClass metadata")
    name = metadata.get("name")
    if not isinstance(name, str) or not name:
        raise InvalidInput("AcceleratorClass metadata.name", "an AcceleratorClass needs a name")
    where = f"AcceleratorClass {name}"
    if manifest.get("kind") != ome.ACCELERATOR_CLASS.name:
        raise InvalidInput(f"{where} kind", f"must be {ome.ACCELERATOR_CLASS.name}, got {manifest.get('kind')!r}")
    spec = _mapping(manifest.get("spec"), f"{where} spec")
    discovery = _mapping(spec.get("discovery"), f"{where} spec.discovery")
    affinity = discovery.get("affinity")
    if affinity is not None and not isinstance(affinity, Mapping):
        raise InvalidInput(f"{where} spec.discovery.affinity", f"must be a mapping, got {type(affinity).__name__}")
    return AcceleratorClass(
        name=name,
        node_selector=_string_map(discovery.get("nodeSelector"), f"{where} spec.discovery.nodeSelector"),
        affinity=affinity,
        resources=_resources(spec.get("resources"), f"{where} spec.resources"),
    )


def _resources(items: Any, path: str) -> dict[str, Quantity]:
    if items is None:
        return {}
    if not isinstance(items, list):
        raise InvalidInput(path, f"must be a list, got {type(items).__name__}")
    resources: dict[str, Quantity] = {}
    for i, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise InvalidInput(f"{path}[{i}]", f"must be a mapping, got {type(item).__name__}")
        name, quantity = item.get("name"), item.get("quantity")
        quantity = DEFAULT_QUANTITY if quantity is None else quantity
        if not isinstance(name, str) or not name:
            raise InvalidInput(f"{path}[{i}].name", "must be a resource name")
        if isinstance(quantity, bool) or not isinstance(quantity, str | int):
            raise InvalidInput(f"{path}[{i}].quantity", f"must be a quantity, got {quantity!r}")
        resources[name] = quantity  # a later entry for a name wins, as in OME's loop
    return resources


def _string_map(value: Any, path: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidInput(path, f"must be a mapping of strings, got {type(value).__name__}")
    for key, item in value.items():
        if not isinstance(item, str):
            raise InvalidInput(f"{path}[{key}]", f"must be a string, got {type(item).__name__}")
    return dict(value)


def _mapping(value: Any, path: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidInput(path, f"must be a mapping, got {type(value).__name__}")
    return value

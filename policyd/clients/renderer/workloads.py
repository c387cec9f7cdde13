"""Every Kubernetes object for one component in the deployment mode policyd decided for it.

- RawDeployment: a Deployment with its Service, autoscaler and PodDisruptionBudget (raw.py);
  the router also gets the ServiceAccount it runs as, with a Role to read pods.
- OMENative, single-node: rendered as RawDeployment, the one single-node workload OME's
  reconcilers build.
- MultiNode: a LeaderWorkerSet and its Service (multinode.py).
- VirtualDeployment: nothing, as OME creates nothing for it.

Pod specs keep only PodSpec fields, so OME's own keys (runner, leader, worker, minReplicas,
labels, ...) never reach Kubernetes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from policyd.clients.renderer.metadata import ComponentMeta
from policyd.clients.renderer.model import Model
from policyd.clients.renderer.model_volume import add_model_volume, require_model_node
from policyd.clients.renderer.multinode import multinode_objects
from policyd.clients.renderer.parts import PARTS, worker_size
from policyd.clients.renderer.placement import Placement
from policyd.clients.renderer.pods import assemble, with_defaults
from policyd.clients.renderer.raw import raw_objects, router_access
from policyd.errors import InvalidInput
from policyd.semantics.modes import EffectiveMode

MULTI_NODE = "MultiNode"
VIRTUAL_DEPLOYMENT = "VirtualDeployment"
MODEL_COMPONENTS = ("engine", "decoder")  # the ones whose runners get the model, and whose pods go to it


@dataclass(frozen=True)
class Pods:
    """What every pod of a component shares: the InferenceService's metadata for placeholders,
    the base model, if any, and for the engine and the decoder their placement."""

    component_name: str
    isvc_metadata: Mapping[str, Any]
    model: Model | None
    placement: Placement | None = None

    def finish(self, holder: Mapping[str, Any], path: str, hint: str, readiness_probe: bool) -> dict[str, Any]:
        pod = assemble(holder, self.isvc_metadata, path, hint)
        if self.model is not None:
            add_model_volume(pod, self.model)
            if self.component_name in MODEL_COMPONENTS:
                require_model_node(pod, self.model)
        if self.placement is not None:  # after the model-ready label, as OME: both land
            self.placement.place(pod)
        return with_defaults(pod, readiness_probe)


def build_objects(
    component: Mapping[str, Any], mode: EffectiveMode, meta: ComponentMeta, pods: Pods
) -> list[dict[str, Any]]:
    """The objects for a merged component; a MultiNode one is expected with its PodSpec fields
    and runner folded into its leader and worker (merge.fold_into_parts)."""
    name = pods.component_name
    if mode.mode == VIRTUAL_DEPLOYMENT:
        return []
    if mode.mode == MULTI_NODE:
        return _multinode(component, meta, pods)
    hint = f"runtime declares no {name}Config.runner and the InferenceService sets none"
    if any(component.get(part) is not None for part in PARTS):
        hint += f"; its leader and worker run only in MultiNode, and it runs in {mode.mode} (set by {mode.source})"
    pod = pods.finish(component, "", hint, readiness_probe=True)
    if name != "router":
        return raw_objects(meta, component, pod)
    pod["serviceAccountName"] = meta.name  # OME runs the router as its own ServiceAccount
    return [*router_access(meta), *raw_objects(meta, component, pod)]


def _multinode(component: Mapping[str, Any], meta: ComponentMeta, pods: Pods) -> list[dict[str, Any]]:
    name = pods.component_name
    if not isinstance(component.get("worker"), Mapping):
        raise InvalidInput(
            "", f"MultiNode needs a worker: runtime declares no {name}Config.worker and the InferenceService sets none"
        )
    leader_hint = (
        f"a leader needs a runner: runtime declares no {name}Config.leader.runner or {name}Config.runner "
        "and the InferenceService sets none"
    )
    worker_hint = (
        f"a worker needs a runner: runtime declares no {name}Config.worker.runner or {name}Config.runner "
        "and the InferenceService sets none"
    )
    leader = pods.finish(component["leader"], "leader.runner", leader_hint, readiness_probe=False)
    worker = pods.finish(component["worker"], "worker.runner", worker_hint, readiness_probe=False)
    return multinode_objects(meta, component, leader, worker, worker_size(component))

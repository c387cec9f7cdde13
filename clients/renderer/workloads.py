"""The Kubernetes objects for one component in its effective deployment mode.

- RawDeployment: an ``apps/v1`` Deployment named ``<isvc>-<component>``.
- OMENative and VirtualDeployment, single-node: rendered as a Deployment too, the one
  single-node workload this renderer targets.
- MultiNode: a ``leaderworkerset.x-k8s.io/v1`` LeaderWorkerSet named ``<isvc>-<component>``,
  ``leaderWorkerTemplate.size`` = 1 + worker.size. A router cannot run in this mode.

Pod specs keep only PodSpec fields, so OME's own keys (runner, leader, worker, minReplicas,
labels, ...) never reach Kubernetes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from clients.renderer.parts import PARTS, pod_fields, worker_size
from policyd.errors import InvalidInput
from policyd.semantics.modes import EffectiveMode

MULTI_NODE = "MultiNode"
LABEL_ISVC = "ome.io/inferenceservice"
LABEL_COMPONENT = "component"
LABEL_RUNTIME = "serving-runtime"
LWS_API_VERSION = "leaderworkerset.x-k8s.io/v1"


@dataclass(frozen=True)
class Owner:
    """What the objects belong to: the InferenceService and the runtime it runs on."""

    isvc_name: str
    namespace: str | None
    runtime_name: str


def check_runnable(component_name: str, mode: EffectiveMode) -> None:
    """Refuse a mode the component cannot run in: the router cannot run MultiNode."""
    if component_name == "router" and mode.mode == MULTI_NODE:
        raise InvalidInput(
            "",
            f"Failed to reconcile component with invalid deployment mode for router: MultiNode (set by {mode.source})",
        )


def build_workload(
    component_name: str, component: Mapping[str, Any], mode: EffectiveMode, owner: Owner
) -> dict[str, Any]:
    """The Deployment or LeaderWorkerSet for a merged component; a MultiNode one is expected
    with its PodSpec fields and runner folded into its leader and worker (merge.fold_into_parts)."""
    check_runnable(component_name, mode)
    labels = {**(component.get("labels") or {}), **_own_labels(owner, component_name)}
    template_metadata: dict[str, Any] = {"labels": labels}
    if component.get("annotations"):
        template_metadata["annotations"] = dict(component["annotations"])
    metadata: dict[str, Any] = {"name": f"{owner.isvc_name}-{component_name}"}
    if owner.namespace:
        metadata["namespace"] = owner.namespace
    metadata["labels"] = dict(labels)
    replicas = component.get("minReplicas", 1)
    if mode.mode == MULTI_NODE:
        return {
            "apiVersion": LWS_API_VERSION,
            "kind": "LeaderWorkerSet",
            "metadata": metadata,
            "spec": {
                "replicas": replicas,
                "leaderWorkerTemplate": _leader_worker(component_name, component, template_metadata),
            },
        }
    if not isinstance(component.get("runner"), Mapping):
        hint = (
            f"; its leader and worker run only in MultiNode, and it runs in {mode.mode} (set by {mode.source})"
            if _has_parts(component)
            else ""
        )
        raise InvalidInput(
            "", f"runtime declares no {component_name}Config.runner and the InferenceService sets none{hint}"
        )
    # The selector leaves out serving-runtime: a Deployment's selector cannot change, the runtime can.
    selector = {key: labels[key] for key in (LABEL_ISVC, LABEL_COMPONENT)}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": metadata,
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": selector},
            "template": _pod_template(component, template_metadata, ""),
        },
    }


def check_multi_node(component_name: str, component: Mapping[str, Any]) -> None:
    """Refuse a MultiNode component without a worker runner and size, or with a runner-less leader."""
    worker = component.get("worker")
    if not (isinstance(worker, Mapping) and isinstance(worker.get("runner"), Mapping)):
        raise InvalidInput(
            "",
            f"MultiNode needs a worker runner: runtime declares no {component_name}Config.worker.runner "
            "and the InferenceService sets none",
        )
    worker_size(component)
    leader = component.get("leader")
    if leader is not None and not isinstance(leader.get("runner"), Mapping):
        raise InvalidInput("leader.runner", "a leader needs a runner")


def _leader_worker(
    component_name: str, component: Mapping[str, Any], template_metadata: Mapping[str, Any]
) -> dict[str, Any]:
    check_multi_node(component_name, component)
    template: dict[str, Any] = {"size": 1 + worker_size(component)}
    # Without a leaderTemplate, LeaderWorkerSet runs the leader from the workerTemplate.
    if component.get("leader") is not None:
        template["leaderTemplate"] = _pod_template(component["leader"], template_metadata, "leader.")
    template["workerTemplate"] = _pod_template(component["worker"], template_metadata, "worker.")
    return template


def _pod_template(holder: Mapping[str, Any], metadata: Mapping[str, Any], path: str) -> dict[str, Any]:
    fields = pod_fields(holder)
    runner = holder["runner"]
    sidecars = fields.pop("containers", None) or []
    if any(isinstance(sidecar, Mapping) and sidecar.get("name") == runner.get("name") for sidecar in sidecars):
        raise InvalidInput(f"{path}containers", f"a container has the runner's name {runner.get('name')!r}")
    return {
        "metadata": {key: dict(value) for key, value in metadata.items()},
        "spec": {"containers": [runner, *sidecars], **fields},
    }


def _own_labels(owner: Owner, component_name: str) -> dict[str, str]:
    return {LABEL_ISVC: owner.isvc_name, LABEL_COMPONENT: component_name, LABEL_RUNTIME: owner.runtime_name}


def _has_parts(component: Mapping[str, Any]) -> bool:
    return any(component.get(part) is not None for part in PARTS)

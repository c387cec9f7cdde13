"""A MultiNode component's objects, as OME's MultiNodeReconciler makes them (reconcilers/lws,
reconcilers/multinode): a LeaderWorkerSet of groups of one leader and ``worker.size`` workers, and
a Service to the leaders."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from policyd.clients.renderer.kube_service import service
from policyd.clients.renderer.metadata import LABEL_APP, ComponentMeta
from policyd.clients.renderer.names import lws_name

LWS_API_VERSION = "leaderworkerset.x-k8s.io/v1"
NODE_TYPE = "ray.io/node-type"
LEADER = {NODE_TYPE: "head"}  # OME marks leaders as Ray heads, and its Service selects them by that alone
_PROMETHEUS = ("prometheus.io/path", "prometheus.io/port", "prometheus.io/scrape")  # workers serve no endpoint


def multinode_objects(
    meta: ComponentMeta, component: Mapping[str, Any], leader: dict[str, Any], worker: dict[str, Any], workers: int
) -> list[dict[str, Any]]:
    """``leader`` and ``worker`` are the finished PodSpecs, ``workers`` the workers per leader."""
    leader_labels = {**meta.labels, LABEL_APP: meta.name, **LEADER}
    worker_annotations = {k: v for k, v in meta.annotations.items() if k not in _PROMETHEUS}
    replicas = component.get("minReplicas")
    lws = {
        "apiVersion": LWS_API_VERSION,
        "kind": "LeaderWorkerSet",
        "metadata": meta.object(lws_name(meta.name)),
        "spec": {
            "replicas": 1 if replicas is None else replicas,
            "startupPolicy": "LeaderCreated",
            "networkConfig": {"subdomainPolicy": "Shared"},
            "rolloutStrategy": {
                "type": "RollingUpdate",
                "rollingUpdateConfiguration": {"maxUnavailable": 1, "maxSurge": 1},
            },
            "leaderWorkerTemplate": {
                "size": 1 + workers,
                "restartPolicy": "RecreateGroupOnPodRestart",
                "leaderTemplate": {"metadata": meta.template(labels=leader_labels), "spec": leader},
                "workerTemplate": {"metadata": meta.template(annotations=worker_annotations), "spec": worker},
            },
        },
    }
    return [lws, service(meta, meta.labels, LEADER, leader)]

"""The Service clients reach an InferenceService by (reconcilers/external_service), as OME's install
makes it (its chart's default ``disableIngressCreation: true``): named after the InferenceService,
selecting the router's pods when a router is declared, else the engine's, on the first port of
that component's Service; its type from the ``ome.io/service-type`` annotation; the
InferenceService's cloud load-balancer annotations carried over. None for an InferenceService
labelled ``networking.knative.dev/visibility: cluster-local``, one that declares neither a router
nor an engine, or one whose target component rendered no Service (VirtualDeployment, where OME
stops before it; a component that failed to render, where OME's reconcile fails first). The URL
the controller reports is this Service's."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from policyd.clients.renderer.kube_service import SERVICE_TYPE
from policyd.clients.renderer.metadata import LABEL_COMPONENT, LABEL_ISVC, owner_reference
from policyd.clients.renderer.names import truncated

VISIBILITY = "networking.knative.dev/visibility"
CLUSTER_LOCAL = "cluster-local"
_ANNOTATION_PREFIXES = ("service.beta.kubernetes.io/", "cloud.google.com/", "service.kubernetes.io/")
_TYPES = ("LoadBalancer", "NodePort", "ClusterIP")
DEFAULT_PORT = 8080  # constants.CommonISVCPort


def external_service(isvc: Mapping[str, Any], rendered: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    metadata = isvc.get("metadata") or {}
    spec = isvc.get("spec") or {}
    if (metadata.get("labels") or {}).get(VISIBILITY) == CLUSTER_LOCAL:
        return None
    if spec.get("router") is None and spec.get("engine") is None:
        return None
    port = target_port(isvc, rendered)
    if port is None:
        return None
    name = str(metadata["name"])
    annotations = {
        key: value
        for key, value in (metadata.get("annotations") or {}).items()
        if any(key.startswith(prefix) and len(key) > len(prefix) for prefix in _ANNOTATION_PREFIXES)
    }
    kind = (metadata.get("annotations") or {}).get(SERVICE_TYPE)
    meta: dict[str, Any] = {
        "name": name,
        "labels": {LABEL_ISVC: name, LABEL_COMPONENT: "external-service"},
        "ownerReferences": [owner_reference(isvc)],
    }
    if metadata.get("namespace"):
        meta["namespace"] = metadata["namespace"]
    if annotations:
        meta["annotations"] = annotations
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": meta,
        "spec": {
            "selector": {LABEL_ISVC: name, LABEL_COMPONENT: target_component(spec)},
            "ports": [{"name": "http", "port": port, "targetPort": port, "protocol": "TCP"}],
            "type": kind if kind in _TYPES else "ClusterIP",
        },
    }


def target_component(spec: Mapping[str, Any]) -> str:
    """The component clients reach: the router when one is declared, else the engine."""
    return "router" if spec.get("router") is not None else "engine"


def target_port(isvc: Mapping[str, Any], objects: Sequence[Mapping[str, Any]]) -> int | None:
    """GetTargetServicePort: the first port of the target component's Service among ``objects``
    (8080 when it has none); None when that Service is not among them."""
    name = str((isvc.get("metadata") or {}).get("name", ""))
    service_name = truncated(f"{name}-{target_component(isvc.get('spec') or {})}")
    for obj in objects:
        if (obj.get("kind"), obj.get("apiVersion")) == ("Service", "v1") and (obj.get("metadata") or {}).get(
            "name"
        ) == service_name:
            ports = (obj.get("spec") or {}).get("ports") or []
            port = ports[0].get("port") if isinstance(ports, list) and ports and isinstance(ports[0], Mapping) else None
            return port if isinstance(port, int) else DEFAULT_PORT
    return None

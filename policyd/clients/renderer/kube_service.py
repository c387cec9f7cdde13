"""The Service in front of a component (reconcilers/service): named after the component (63
characters at most), with the ports of the pod's first container, and the type the
``ome.io/service-type`` annotation asks for."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from policyd.clients.renderer.metadata import ComponentMeta, without_pod_only
from policyd.clients.renderer.names import truncated

SERVICE_TYPE = "ome.io/service-type"
LOAD_BALANCER_IP = "ome.io/load-balancer-ip"
_TYPES = ("LoadBalancer", "NodePort", "ClusterIP")
_DEFAULT_PORT = 8080


def service(
    meta: ComponentMeta, labels: Mapping[str, str], selector: Mapping[str, str], pod: Mapping[str, Any]
) -> dict[str, Any]:
    annotations = without_pod_only(meta.annotations)
    kind = annotations.get(SERVICE_TYPE)
    spec: dict[str, Any] = {
        "type": kind if kind in _TYPES else "ClusterIP",
        "selector": dict(selector),
        "ports": _ports(pod),
    }
    if spec["type"] == "LoadBalancer" and annotations.get(LOAD_BALANCER_IP):
        spec["loadBalancerIP"] = annotations[LOAD_BALANCER_IP]
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": meta.object(truncated(meta.name), labels=labels, annotations=annotations),
        "spec": spec,
    }


def _ports(pod: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A port for each port of the first container (OME looks no further), else 8080."""
    first = pod["containers"][0]
    ports = [p for p in first.get("ports") or [] if isinstance(p, Mapping)]
    if not ports:
        return [{"name": first.get("name"), "port": _DEFAULT_PORT, "targetPort": _DEFAULT_PORT, "protocol": "TCP"}]
    out = []
    for port in ports:
        number = port.get("containerPort")
        entry = {"name": port["name"]} if port.get("name") else {}
        out.append({**entry, "port": number, "targetPort": number, "protocol": port.get("protocol") or "TCP"})
    return out

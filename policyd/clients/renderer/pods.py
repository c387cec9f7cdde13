"""A pod spec from a component (or its leader, or worker), as OME's PodSpecReconciler builds it:
the PodSpec fields, and the runner merged into the container of its name or added after the
others; then the defaults OME writes itself (reconcilers/deployment, reconcilers/lws), so that
what is applied is what OME creates rather than what the API server would fill in."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from policyd.clients.renderer.merge import merge_container
from policyd.clients.renderer.parts import DEFAULT_RUNNER_NAME, pod_fields
from policyd.clients.renderer.placeholders import fill_container
from policyd.errors import InvalidInput

_DEFAULT_PORT = 8080


def assemble(holder: Mapping[str, Any], metadata: Mapping[str, Any], path: str, hint: str) -> dict[str, Any]:
    """The PodSpec of ``holder``. Placeholders are filled in the main container: the runner, or
    without one the first container. ``hint`` says, in the error for neither, which config
    lacks the runner."""
    pod = pod_fields(holder)
    containers = [dict(c) if isinstance(c, Mapping) else c for c in pod.get("containers") or []]
    runner = holder.get("runner")
    if isinstance(runner, Mapping):
        main = next((i for i, c in enumerate(containers) if _name(c) == runner.get("name")), len(containers))
        if main == len(containers):
            containers.append(dict(runner))
        else:
            containers[main] = merge_container(containers[main], runner)
    elif containers and isinstance(containers[0], Mapping):
        main = 0
    else:
        raise InvalidInput(path, hint)
    containers[main] = fill_container(containers[main], metadata)
    pod["containers"] = containers
    return pod


def with_defaults(pod: dict[str, Any], readiness_probe: bool) -> dict[str, Any]:
    """OME's setDefaultPodSpec; a Deployment's also gives ``ome-container`` a TCP readiness probe."""
    _unset_to(pod, "dnsPolicy", "ClusterFirst")
    _unset_to(pod, "restartPolicy", "Always")
    _unset_to(pod, "terminationGracePeriodSeconds", 30)
    _unset_to(pod, "securityContext", {})
    _unset_to(pod, "schedulerName", "default-scheduler")
    for container in pod["containers"]:
        if not isinstance(container, dict):
            continue
        _unset_to(container, "terminationMessagePath", "/dev/termination-log")
        _unset_to(container, "terminationMessagePolicy", "File")
        _unset_to(container, "imagePullPolicy", "IfNotPresent")
        if readiness_probe and container.get("name") == DEFAULT_RUNNER_NAME:
            _unset_to(container, "readinessProbe", _tcp_probe(container))
    return pod


def _unset_to(holder: dict[str, Any], key: str, value: Any) -> None:
    """Set ``key`` when it is unset: absent, null, or an empty string (Go's zero value)."""
    if holder.get(key) in (None, ""):
        holder[key] = value


def _tcp_probe(container: Mapping[str, Any]) -> dict[str, Any]:
    ports = container.get("ports") or []
    first = ports[0] if ports and isinstance(ports[0], Mapping) else {}
    return {
        "tcpSocket": {"port": first.get("containerPort", _DEFAULT_PORT)},
        "timeoutSeconds": 1,
        "periodSeconds": 10,
        "successThreshold": 1,
        "failureThreshold": 3,
    }


def _name(container: Any) -> Any:
    return container.get("name") if isinstance(container, Mapping) else None

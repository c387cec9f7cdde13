"""What a component is made of: PodSpec fields, a runner, and for a multi-node
component a leader and a worker, each with PodSpec fields and a runner."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kubernetes.client import V1PodSpec

from policyd.errors import InvalidInput

# Taken from the kubernetes client so the list follows the API the project builds against.
POD_SPEC_FIELDS: frozenset[str] = frozenset(V1PodSpec.attribute_map.values())
DEFAULT_RUNNER_NAME = "ome-container"
PARTS = ("leader", "worker")

Runner = dict[str, Any]


def pod_fields(config: Mapping[str, Any]) -> dict[str, Any]:
    """The PodSpec fields of a component, leader or worker, without OME's own keys."""
    return {key: value for key, value in config.items() if key in POD_SPEC_FIELDS}


def map_runners(component: Mapping[str, Any], fn: Callable[[Runner], Runner]) -> dict[str, Any]:
    """The component with ``fn`` applied to each of its runners: its own, its leader's and
    its worker's. An error from ``fn`` is placed under the runner's path."""
    out = dict(component)
    if isinstance(out.get("runner"), Mapping):
        out["runner"] = _call(fn, out["runner"], "runner")
    for part in PARTS:
        holder = out.get(part)
        if isinstance(holder, Mapping) and isinstance(holder.get("runner"), Mapping):
            out[part] = {**holder, "runner": _call(fn, holder["runner"], f"{part}.runner")}
    return out


def _call(fn: Callable[[Runner], Runner], runner: Mapping[str, Any], path: str) -> Runner:
    try:
        return fn(dict(runner))
    except InvalidInput as error:
        raise error.under(path) from None


def worker_size(component: Mapping[str, Any]) -> int:
    """``worker.size``: the worker pods for each leader, 0 when unset (as OME's getWorkerSize)."""
    worker = component.get("worker")
    size = worker.get("size") if isinstance(worker, Mapping) else None
    return 0 if size is None else int(size)

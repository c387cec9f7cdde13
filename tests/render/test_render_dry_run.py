"""Every object rendered for every catalog runtime passes a server-side-apply dry-run in the test
cluster (a real kube-apiserver with OME's and LeaderWorkerSet's CRDs): the API server's own
validation, defaulting and field management, beyond the offline schemas. The leader/worker
runtimes are rendered in MultiNode, the sglang-pd template with all three components."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import dynamic
from kubernetes.dynamic.exceptions import DynamicApiError
from testkit.cluster import Cluster

from policyd.clients.renderer.render import RenderInput, render

from .builders import UID, make_isvc, make_runtime, render_input
from .catalog import catalog_inputs
from .test_render_schemas import LEADER_WORKER_RUNTIMES, MULTI_NODE

FIELD_MANAGER = "policyd-render-dry-run"


def _inputs() -> Iterator[tuple[str, RenderInput]]:
    for name, inp in catalog_inputs():
        if name not in LEADER_WORKER_RUNTIMES:
            yield name, inp
            continue
        spec = dict(inp.inference_service["spec"])
        for component in ("engine", "decoder"):
            if component in spec:
                spec[component] = {**spec[component], "annotations": MULTI_NODE}
        isvc = {**inp.inference_service, "spec": spec}
        yield name, render_input(isvc, inp.runtime, inp.model, {}, inp.accelerator_config)
    runtime = make_runtime()
    runtime["metadata"]["annotations"] = {"ome.io/engine": "sglang-pd"}
    isvc = make_isvc(engine={}, decoder={}, router={})
    isvc["metadata"].update(namespace="default", uid=UID)
    model = {
        "apiVersion": "ome.io/v1beta1",
        "kind": "ClusterBaseModel",
        "metadata": {"name": "llama"},
        "spec": {"storage": {"path": "/raid/models/llama"}},
    }
    yield "sglang-pd template", render_input(isvc, runtime, model)


def _dry_run_apply(client: dynamic.DynamicClient, obj: dict[str, Any]) -> str | None:
    """Why the API server refuses ``obj``; None when it accepts it."""
    resource = client.resources.get(api_version=obj["apiVersion"], kind=obj["kind"])
    try:
        resource.server_side_apply(body=obj, field_manager=FIELD_MANAGER, dry_run="All")
    except DynamicApiError as error:
        return f"{obj['kind']} {obj['metadata']['name']}: {error.summary()}"
    return None


@pytest.fixture(scope="module")
def api(kube_cluster: Cluster) -> dynamic.DynamicClient:
    return dynamic.DynamicClient(kube_cluster.api())


def test_every_catalog_runtimes_objects_pass_a_server_side_apply_dry_run(api: dynamic.DynamicClient) -> None:
    refused: list[str] = []
    kinds: set[str] = set()
    for name, inp in _inputs():
        result = render(inp)
        assert not result.errors, (name, result.errors)
        for obj in result.objects:
            kinds.add(obj["kind"])
            if (why := _dry_run_apply(api, obj)) is not None:
                refused.append(f"{name}: {why}")
    assert not refused, "\n".join(refused)
    assert kinds == {
        "Deployment",
        "Service",
        "HorizontalPodAutoscaler",
        "PodDisruptionBudget",
        "LeaderWorkerSet",
        "ServiceAccount",
        "Role",
        "RoleBinding",
    }


def test_the_dry_run_refuses_what_the_api_server_would(api: dynamic.DynamicClient) -> None:
    _, inp = next(_inputs())
    deployment = next(o for o in render(inp).objects if o["kind"] == "Deployment")
    deployment["spec"]["selector"] = {"matchLabels": {"app": "something-else"}}
    why = _dry_run_apply(api, deployment)
    assert why is not None and "selector" in why, why

"""The renderer sidecar on a unix socket, fed by the daemon's decision through policyctl render."""

from __future__ import annotations

import json
from typing import Any

import grpc
import pytest
import yaml
from grpc_health.v1 import health_pb2, health_pb2_grpc

from policyd.contract import policy_pb2 as pb
from policyd.contract import render_pb2, render_pb2_grpc
from policyd.contract import resources_pb2 as rpb

from .conftest import Files
from .support import (
    MODEL_NAME,
    MODEL_PATH,
    NAMESPACE,
    RUNTIME_70B,
    RUNTIME_NAME,
    isvc_manifest,
    model_manifest,
    no_traceback,
    policyctl,
    spec_manifest,
)


def _workloads(stdout: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(stdout) if d]


def _engine(workloads: list[dict[str, Any]]) -> dict[str, Any]:
    (deployment,) = [w for w in workloads if w["kind"] == "Deployment"]
    return deployment


def _container(deployment: dict[str, Any]) -> dict[str, Any]:
    containers: list[dict[str, Any]] = deployment["spec"]["template"]["spec"]["containers"]
    (container,) = [c for c in containers if c["name"] == "ome-container"]
    return container


def test_renderer_health_is_serving(renderer: str) -> None:
    assert renderer.startswith("unix:")
    with grpc.insecure_channel(renderer) as channel:
        reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=5)
    assert reply.status == health_pb2.HealthCheckResponse.SERVING


def test_render_the_auto_selected_runtime(daemon: str, renderer: str, files: Files) -> None:
    result = policyctl("render", "-f", str(files.isvc), "--renderer", renderer, address=daemon)
    no_traceback(result)
    assert result.returncode == 0, result.stdout + result.stderr
    deployment = _engine(_workloads(result.stdout))
    assert deployment["apiVersion"] == "apps/v1"
    assert deployment["metadata"]["name"] == f"{MODEL_NAME}-engine"
    assert deployment["metadata"]["namespace"] == NAMESPACE
    assert deployment["metadata"]["labels"]["serving-runtime"] == RUNTIME_NAME
    container = _container(deployment)
    assert f"--served-model-name={MODEL_NAME}" in container["args"]
    assert "--tp-size=1" in container["args"]
    env = {e["name"]: e.get("value") for e in container.get("env", [])}
    assert env["MODEL_PATH"] == MODEL_PATH  # from the model in the daemon's catalog


def test_render_a_named_runtime_on_an_accelerator_class(daemon: str, renderer: str, files: Files) -> None:
    result = policyctl(
        "render",
        "-f",
        str(files.isvc_70b),
        "--renderer",
        renderer,
        "--accelerator-class",
        "nvidia-l40s",
        address=daemon,
    )
    no_traceback(result)
    assert result.returncode == 0, result.stdout + result.stderr
    deployment = _engine(_workloads(result.stdout))
    assert deployment["metadata"]["labels"]["serving-runtime"] == RUNTIME_70B
    args = _container(deployment)["args"]
    # The nvidia-l40s acceleratorConfig of the entry policyd matched (spec 004, Per-accelerator configuration).
    assert "--tp-size=4" in args
    assert "--pp-size=2" in args
    assert "--mem-frac=0.85" in args
    assert "--tp-size=8" not in args


def test_render_prints_every_object_of_the_component_in_omes_order_then_the_external_service(
    daemon: str, renderer: str, files: Files
) -> None:
    result = policyctl("render", "-f", str(files.isvc), "--renderer", renderer, address=daemon)
    assert result.returncode == 0, result.stdout + result.stderr
    workloads = _workloads(result.stdout)
    kinds = [w["kind"] for w in workloads]
    assert kinds == ["Deployment", "Service", "HorizontalPodAutoscaler", "PodDisruptionBudget", "Service"]
    assert {w["metadata"]["name"] for w in workloads[:-1]} == {f"{MODEL_NAME}-engine"}
    # OME's install default (ingress creation disabled): a Service named after the InferenceService
    # selects the engine's pods on its Service's first port
    external = workloads[-1]
    assert external["metadata"]["name"] == MODEL_NAME
    assert external["metadata"]["labels"]["component"] == "external-service"
    assert external["spec"]["selector"] == {"ome.io/inferenceservice": MODEL_NAME, "component": "engine"}
    assert external["spec"]["ports"][0]["port"] == workloads[1]["spec"]["ports"][0]["port"]


def _render(renderer: str, **fields: Any) -> render_pb2.RenderResponse:
    isvc = isvc_manifest(runtime={"name": RUNTIME_NAME, "kind": "ServingRuntime"})
    request = render_pb2.RenderRequest(
        inference_service=rpb.InferenceServiceInput(manifest=json.dumps(isvc)),
        runtime=rpb.Object(manifest=json.dumps(spec_manifest("004", "ServingRuntime", RUNTIME_NAME))),
        model=rpb.Object(manifest=json.dumps(model_manifest())),
        **fields,
    )
    with grpc.insecure_channel(renderer) as channel:
        reply: render_pb2.RenderResponse = render_pb2_grpc.RendererServiceStub(channel).Render(request, timeout=10)
    return reply


def test_the_renderer_renders_the_mode_it_is_given_and_reports_a_components_mode_error(renderer: str) -> None:
    virtual = pb.ComponentMode(component="engine", mode="VirtualDeployment", source="default")
    assert list(_render(renderer, modes=[virtual]).objects) == []
    refused = pb.ComponentMode(
        component="engine", mode="RawDeployment", source="default", error=pb.Rejection(message="policyd says no")
    )
    assert list(_render(renderer, modes=[refused]).errors) == ["engine: policyd says no"]


def test_a_renderer_given_no_mode_decides_none_and_says_so(renderer: str) -> None:
    assert list(_render(renderer).errors) == [
        "engine: no deployment mode given for it (RenderRequest.modes, from policyd's Effective)"
    ]


def test_a_mode_for_an_unknown_component_is_invalid_argument_naming_the_field(renderer: str) -> None:
    with pytest.raises(grpc.RpcError) as raised:
        _render(renderer, modes=[pb.ComponentMode(component="predictor", mode="RawDeployment")])
    assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert (
        raised.value.details() == "modes[0].component: unknown component 'predictor' (one of engine, decoder, router)"
    )

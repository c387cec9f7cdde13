"""The renderer sidecar on a unix socket, fed by the daemon's decision through policyctl render."""

from __future__ import annotations

from typing import Any

import grpc
import yaml
from grpc_health.v1 import health_pb2, health_pb2_grpc

from .conftest import Files
from .support import MODEL_NAME, MODEL_PATH, NAMESPACE, RUNTIME_70B, RUNTIME_NAME, no_traceback, policyctl


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

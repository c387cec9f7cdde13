"""Small manifests for unit tests: an InferenceService, a runtime and a model, each built from
the parts a test cares about."""

from __future__ import annotations

from typing import Any

from clients.renderer import RenderInput, RenderResult, render

MODEL_PATH = "/raid/models/meta/llama-3-2-3b-instruct"


def runner(**fields: Any) -> dict[str, Any]:
    """An SGLang runner with one GPU; ``fields`` replace its fields."""
    return {
        "name": "ome-container",
        "image": "docker.io/lmsysorg/sglang:v0.5.5.post3-cu129-amd64",
        "args": ["--model-path=$(MODEL_PATH)", "--tp-size=1"],
        "resources": {"requests": {"nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "1"}},
        **fields,
    }


def make_runtime(kind: str = "ClusterServingRuntime", **configs: Any) -> dict[str, Any]:
    """A runtime named ``rt`` with the given engineConfig / decoderConfig / routerConfig."""
    metadata: dict[str, Any] = {"name": "rt"}
    if kind == "ServingRuntime":
        metadata["namespace"] = "demo"
    return {"apiVersion": "ome.io/v1beta1", "kind": kind, "metadata": metadata, "spec": configs}


def make_isvc(model: bool = True, labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    """An InferenceService ``svc`` in ``demo`` declaring the given components."""
    metadata: dict[str, Any] = {"name": "svc", "namespace": "demo"}
    if labels is not None:
        metadata["labels"] = labels
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": "InferenceService",
        "metadata": metadata,
        "spec": {**({"model": {"name": "llama"}} if model else {}), **spec},
    }


def make_model(path: str | None = MODEL_PATH) -> dict[str, Any]:
    storage = {"storageUri": "hf://example/llama", **({"path": path} if path else {})}
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": "ClusterBaseModel",
        "metadata": {"name": "llama"},
        "spec": {"storage": storage},
    }


def run(
    isvc: dict[str, Any],
    runtime: dict[str, Any],
    classes: dict[str, str] | None = None,
    accelerator_config: dict[str, Any] | None = None,
) -> RenderResult:
    model = make_model() if isvc["spec"].get("model") else None
    return render(RenderInput(isvc, runtime, runtime["kind"], model, classes or {}, accelerator_config))


def only(result: RenderResult, kind: str = "Deployment") -> dict[str, Any]:
    """The one object of ``kind``, after checking there were no errors."""
    assert not result.errors, result.errors
    (obj,) = [o for o in result.objects if o["kind"] == kind]
    return obj


def container(obj: dict[str, Any], template: str = "") -> dict[str, Any]:
    """The first container of a Deployment's pod, or of a LeaderWorkerSet's ``template``."""
    pod = obj["spec"]["leaderWorkerTemplate"][template] if template else obj["spec"]["template"]
    first: dict[str, Any] = pod["spec"]["containers"][0]
    return first


def env(c: dict[str, Any]) -> dict[str, Any]:
    """A container's env as name -> value (or the whole entry when it has no value)."""
    return {e["name"]: e.get("value", e) for e in c.get("env", [])}

"""Small manifests for unit tests: an InferenceService, a runtime and a model, each built from
the parts a test cares about."""

from __future__ import annotations

from functools import cache
from typing import Any

from testkit.deciding import effective
from testkit.shared import RULES

from policyd.catalog.snapshot import Catalog
from policyd.clients.renderer.render import RenderInput, RenderResult, render
from policyd.policy.revision import Revision, build_revision
from policyd.resources.manifests import parse_inference_service, parse_runtime
from policyd.semantics.modes import EffectiveMode

MODEL_PATH = "/raid/models/meta/llama-3-2-3b-instruct"
UID = "6f3c1a52-0d55-4c1e-9a8e-2b7d5f0c9e11"


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
    """An InferenceService ``svc`` in ``demo`` declaring the given components, with the uid the
    API server gave it."""
    metadata: dict[str, Any] = {"name": "svc", "namespace": "demo", "uid": UID}
    if labels is not None:
        metadata["labels"] = labels
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": "InferenceService",
        "metadata": metadata,
        "spec": {**({"model": {"name": "llama"}} if model else {}), **spec},
    }


def make_accelerator_class(name: str = "nvidia-h100", **spec: Any) -> dict[str, Any]:
    """An AcceleratorClass ``name``; ``spec`` replaces its discovery, resources, ..."""
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": "AcceleratorClass",
        "metadata": {"name": name},
        "spec": {"vendor": "nvidia", "capabilities": {"memoryGB": "80Gi"}, **spec},
    }


def make_model(path: str | None = MODEL_PATH) -> dict[str, Any]:
    storage = {"storageUri": "hf://example/llama", **({"path": path} if path else {})}
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": "ClusterBaseModel",
        "metadata": {"name": "llama"},
        "spec": {"storage": storage},
    }


@cache
def _revision() -> Revision:
    return build_revision(RULES)


def policyd_modes(isvc: dict[str, Any], runtime: dict[str, Any]) -> tuple[dict[str, EffectiveMode], dict[str, str]]:
    """Each declared component's mode and mode error as policyd's Effective decides them (its own
    code, in process, for the InferenceService naming ``runtime``), which is what the renderer is given."""
    named = {
        **isvc,
        "spec": {**isvc["spec"], "runtime": {"name": runtime["metadata"]["name"], "kind": runtime["kind"]}},
    }
    decided = effective(Catalog.of([parse_runtime(runtime)]), parse_inference_service(named), _revision())
    errors = {m.component: m.error.message for m in decided.modes if m.error is not None}
    return {m.component: EffectiveMode(m.component, m.mode, m.source) for m in decided.modes}, errors


def render_input(
    isvc: dict[str, Any],
    runtime: dict[str, Any],
    model: dict[str, Any] | None,
    classes: dict[str, str] | None = None,
    accelerator_config: Any = None,
    class_objects: list[dict[str, Any]] | None = None,
) -> RenderInput:
    """A render input with the modes policyd would decide; ``class_objects``: the AcceleratorClass
    manifests given with it."""
    modes, errors = policyd_modes(isvc, runtime)
    return RenderInput(
        isvc, runtime, runtime["kind"], model, classes or {}, accelerator_config, modes, errors, class_objects or []
    )


def run(
    isvc: dict[str, Any],
    runtime: dict[str, Any],
    classes: dict[str, str] | None = None,
    accelerator_config: dict[str, Any] | None = None,
    class_objects: list[dict[str, Any]] | None = None,
) -> RenderResult:
    model = make_model() if isvc["spec"].get("model") else None
    return render(render_input(isvc, runtime, model, classes, accelerator_config, class_objects))


def of_kind(result: RenderResult, kind: str) -> list[dict[str, Any]]:
    return [o for o in result.objects if o["kind"] == kind]


def only(result: RenderResult, kind: str = "Deployment") -> dict[str, Any]:
    """The one object of ``kind``, after checking there were no errors."""
    assert not result.errors, result.errors
    (obj,) = [o for o in result.objects if o["kind"] == kind]
    return obj


def container(obj: dict[str, Any], template: str = "", name: str = "ome-container") -> dict[str, Any]:
    """The container ``name`` of a Deployment's pod, or of a LeaderWorkerSet's ``template``."""
    pod = obj["spec"]["leaderWorkerTemplate"][template] if template else obj["spec"]["template"]
    (found,) = [c for c in pod["spec"]["containers"] if c["name"] == name]
    return found


def env(c: dict[str, Any]) -> dict[str, Any]:
    """A container's env as name -> value (or the whole entry when it has no value)."""
    return {e["name"]: e.get("value", e) for e in c.get("env", [])}

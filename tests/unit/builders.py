"""Small OME manifests (dicts, as a user would ``kubectl apply`` them) and helpers that turn
them into a Catalog and run the pure decisions with a rules revision."""

from __future__ import annotations

import shutil
from functools import cache
from pathlib import Path
from typing import Any

from testkit.shared import CASES as CASES
from testkit.shared import CATALOG as CATALOG
from testkit.shared import SHARED as SHARED

from policyd.catalog.snapshot import Catalog
from policyd.decision.decider import Decider
from policyd.policy.revision import Revision, build_revision
from policyd.resources.manifests import parse_inference_service, parse_object
from policyd.resources.objects import AcceleratorClass, BaseModel, InferenceService, ServingRuntime

REPO = Path(__file__).resolve().parents[2]
RULES = REPO / "rules"
CATALOG_DIR = CATALOG

API = "ome.io/v1beta1"
NAMESPACE = "llama-demo"
MODEL = "llama-3-2-3b-instruct"
IMAGE = "docker.io/lmsysorg/sglang:v0.5.5.post3-cu129-amd64"


@cache
def default_revision() -> Revision:
    """The bundled rules/, built once for the whole run."""
    return build_revision(RULES)


def plain(revision: Revision) -> Decider:
    """A decider of ``revision`` that judges every runtime and keeps nothing (what-if's)."""
    return Decider(revision, shortcuts=False)


def copy_rules(tmp_path: Path) -> Path:
    """A private copy of the bundled rules/ to edit."""
    target = tmp_path / "rules"
    shutil.copytree(RULES, target)
    return target


def model(
    name: str = MODEL,
    *,
    kind: str = "ClusterBaseModel",
    namespace: str = NAMESPACE,
    fmt: tuple[str, str] | None = ("safetensors", "1.0.0"),
    framework: tuple[str, str] | None = ("transformers", "4.45.0.dev0"),
    architecture: str | None = "LlamaForCausalLM",
    quantization: str | None = None,
    size: str | None = "3B",
    pipeline: dict[str, Any] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    body: dict[str, Any] = {}
    if fmt:
        body["modelFormat"] = {"name": fmt[0], "version": fmt[1]}
    if framework:
        body["modelFramework"] = {"name": framework[0], "version": framework[1]}
    if architecture:
        body["modelArchitecture"] = architecture
    if quantization:
        body["quantization"] = quantization
    if size:
        body["modelParameterSize"] = size
    if pipeline is not None:
        body["diffusionPipeline"] = pipeline
    body["storage"] = {"storageUri": f"hf://example/{name}", "path": f"/raid/models/{name}"}
    body.update(spec)
    metadata: dict[str, Any] = {"name": name}
    if kind == "BaseModel":
        metadata["namespace"] = namespace
    return {"apiVersion": API, "kind": kind, "metadata": metadata, "spec": body}


def entry(
    *,
    fmt: tuple[str, str] = ("safetensors", "1.0.0"),
    framework: tuple[str, str] = ("transformers", "4.45.0.dev0"),
    architecture: str | None = "LlamaForCausalLM",
    auto_select: bool | None = True,
    priority: int | None = 1,
    **fields: Any,
) -> dict[str, Any]:
    """One supportedModelFormats entry; ``fields`` are added as they are (quantization,
    diffusionPipeline, operator-bearing modelFormat, ...)."""
    body: dict[str, Any] = {
        "modelFormat": {"name": fmt[0], "version": fmt[1]},
        "modelFramework": {"name": framework[0], "version": framework[1]},
    }
    if architecture:
        body["modelArchitecture"] = architecture
    if auto_select is not None:
        body["autoSelect"] = auto_select
    if priority is not None:
        body["priority"] = priority
    body.update(fields)
    return body


def runtime(
    name: str = "srt-llama",
    *,
    kind: str = "ClusterServingRuntime",
    namespace: str = NAMESPACE,
    entries: list[dict[str, Any]] | None = None,
    size_range: tuple[str, str] | None = None,
    classes: list[str] | None = None,
    engine_mode: str | None = None,
    decoder_mode: str | None = None,
    router_mode: str | None = None,
    image: str = IMAGE,
    **spec: Any,
) -> dict[str, Any]:
    body: dict[str, Any] = {"supportedModelFormats": [entry()] if entries is None else entries}
    if size_range:
        body["modelSizeRange"] = {"min": size_range[0], "max": size_range[1]}
    if classes is not None:
        body["acceleratorRequirements"] = {"acceleratorClasses": classes}
    body["engineConfig"] = {"runner": {"name": "ome-container", "image": image}}
    if engine_mode:
        body["engineConfig"]["annotations"] = {"ome.io/deploymentMode": engine_mode}
    for component, mode in (("decoder", decoder_mode), ("router", router_mode)):
        if mode:
            body[f"{component}Config"] = {
                "annotations": {"ome.io/deploymentMode": mode},
                "runner": {"name": "ome-container", "image": image},
            }
    body.update(spec)
    metadata: dict[str, Any] = {"name": name}
    if kind == "ServingRuntime":
        metadata["namespace"] = namespace
    return {"apiVersion": API, "kind": kind, "metadata": metadata, "spec": body}


def isvc(
    name: str = "svc",
    *,
    namespace: str = NAMESPACE,
    model_name: str | None = MODEL,
    model_kind: str | None = None,
    runtime_name: str | None = None,
    runtime_kind: str | None = None,
    auto_sync: bool | None = None,
    engine: dict[str, Any] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """An InferenceService with an engine (``engine=None`` keeps the default engine;
    pass ``engine={}``-like dicts to set its annotations)."""
    body: dict[str, Any] = {}
    if model_name:
        body["model"] = {"name": model_name, **({"kind": model_kind} if model_kind else {})}
    if runtime_name:
        ref: dict[str, Any] = {"name": runtime_name}
        if runtime_kind:
            ref["kind"] = runtime_kind
        if auto_sync is not None:
            ref["autoSync"] = auto_sync
        body["runtime"] = ref
    body["engine"] = {"minReplicas": 1, "maxReplicas": 1} if engine is None else engine
    body.update(spec)
    for key in [k for k, v in body.items() if v is None]:
        del body[key]
    return {
        "apiVersion": API,
        "kind": "InferenceService",
        "metadata": {"name": name, "namespace": namespace},
        "spec": body,
    }


def mode_annotation(mode: str) -> dict[str, Any]:
    return {"annotations": {"ome.io/deploymentMode": mode}}


def catalog(*docs: dict[str, Any]) -> Catalog:
    return Catalog.of([parsed(d) for d in docs])


def parsed(doc: dict[str, Any]) -> BaseModel | ServingRuntime | InferenceService | AcceleratorClass:
    return parse_object(doc)


def parsed_isvc(doc: dict[str, Any]) -> InferenceService:
    return parse_inference_service(doc)

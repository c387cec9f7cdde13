"""vLLM-Omni diffusers-backend objects: Qwen-Image as OME records it, runtimes whose engine runs
``vllm serve … --omni --diffusion-load-format diffusers`` with the flags a test adds, and
InferenceServices for them."""

from __future__ import annotations

import copy
from typing import Any

NAMESPACE = "qwen-demo"
SERVE = ["vllm", "serve", "$(MODEL_PATH)", "--omni", "--port", "8080"]
DIFFUSERS = ["--diffusion-load-format", "diffusers"]
_QWEN_IMAGE: dict[str, Any] = {
    "apiVersion": "ome.io/v1beta1",
    "kind": "ClusterBaseModel",
    "metadata": {"name": "qwen-image"},
    "spec": {
        "modelFormat": {"name": "diffusers", "version": "0.35.0"},
        "modelFramework": {"name": "diffusers", "version": "0.35.0"},
        "modelArchitecture": "QwenImagePipeline",
        "diffusionPipeline": {
            "className": "QwenImagePipeline",
            "scheduler": {"library": "diffusers", "type": "FlowMatchEulerDiscreteScheduler"},
            "textEncoder": {"library": "transformers", "type": "Qwen2_5_VLForConditionalGeneration"},
            "tokenizer": {"library": "transformers", "type": "Qwen2Tokenizer"},
            "transformer": {"library": "diffusers", "type": "QwenImageTransformer2DModel"},
            "vae": {"library": "diffusers", "type": "AutoencoderKLQwenImage"},
        },
        "storage": {"storageUri": "hf://Qwen/Qwen-Image", "path": "/raid/models/qwen/qwen-image"},
    },
}


def model(name: str = "qwen-image", *, pipeline_class: str = "QwenImagePipeline", repo: str = "Qwen/Qwen-Image",
          transformer_type: str | None = "QwenImageTransformer2DModel", **spec: Any) -> dict[str, Any]:  # fmt: skip
    """Qwen-Image as OME records it from its model_index.json, renamed or changed where asked."""
    doc = copy.deepcopy(_QWEN_IMAGE)
    doc["metadata"]["name"] = name
    body = doc["spec"]
    body["modelArchitecture"] = pipeline_class
    body["diffusionPipeline"]["className"] = pipeline_class
    body["storage"]["storageUri"] = f"hf://{repo}"
    if transformer_type is None:
        del body["diffusionPipeline"]["transformer"]
    else:
        body["diffusionPipeline"]["transformer"]["type"] = transformer_type
    body.update(spec)
    return doc


def entry(architecture: str | None = "QwenImagePipeline", priority: int = 1) -> dict[str, Any]:
    out: dict[str, Any] = {
        "modelFormat": {"name": "diffusers", "version": "0.35.0"},
        "modelFramework": {"name": "diffusers", "version": "0.35.0"},
        "autoSelect": True,
        "priority": priority,
    }
    if architecture:
        out["modelArchitecture"] = architecture
    return out


def runtime(
    name: str = "rt",
    *flags: str,
    command: list[str] | None = None,
    args: list[str] | None = None,
    env: dict[str, str] | None = None,
    diffusers: bool = True,
    entries: list[dict[str, Any]] | None = None,
    **runner: Any,
) -> dict[str, Any]:
    """A ClusterServingRuntime running vllm serve --omni (with --diffusion-load-format diffusers
    unless ``diffusers`` is false) and ``flags``; ``command``/``args`` replace the command line."""
    body: dict[str, Any] = {
        "name": "ome-container",
        "image": "vllm/vllm-omni:v0.27.0",
        "command": command if command is not None else [*SERVE, *(DIFFUSERS if diffusers else []), *flags],
        "resources": {"requests": {"nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "1"}},
        **runner,
    }
    if args is not None:
        body["args"] = args
    if env:
        body["env"] = [{"name": k, "value": v} for k, v in env.items()]
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": "ClusterServingRuntime",
        "metadata": {"name": name},
        "spec": {"supportedModelFormats": entries or [entry()], "engineConfig": {"runner": body}},
    }


def isvc(name: str = "qwen-image", *, runtime: str | None = None, model: str = "qwen-image",
         runner: dict[str, Any] | None = None) -> dict[str, Any]:  # fmt: skip
    """An InferenceService for the model, naming ``runtime`` when given, with an engine runner on top."""
    spec: dict[str, Any] = {"model": {"name": model}, "engine": {"minReplicas": 1, "maxReplicas": 1}}
    if runtime:
        spec["runtime"] = {"name": runtime}
    if runner is not None:
        spec["engine"]["runner"] = runner
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": spec,
    }

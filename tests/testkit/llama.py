"""The spec's running example: Llama 3.2 3B served by the sglang-llama-3-2-3b ServingRuntime in llama-demo."""

from __future__ import annotations

from typing import Any

NAMESPACE = "llama-demo"
MODEL_NAME = "llama-3-2-3b-instruct"
RUNTIME_NAME = "sglang-llama-3-2-3b"
MODEL_PATH = "/raid/models/meta/llama-3-2-3b-instruct"
MODEL_70B = "llama-3-3-70b-instruct"


def model_manifest() -> dict[str, Any]:
    """The llama-3-2-3b-instruct ClusterBaseModel with the fields the model agent records."""
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": "ClusterBaseModel",
        "metadata": {"name": MODEL_NAME},
        "spec": {
            "modelFormat": {"name": "safetensors", "version": "1.0.0"},
            "modelFramework": {"name": "transformers", "version": "4.45.0.dev0"},
            "modelArchitecture": "LlamaForCausalLM",
            "modelParameterSize": "3B",
            "storage": {"storageUri": "hf://meta-llama/Llama-3.2-3B-Instruct", "path": MODEL_PATH},
        },
    }


def model_70b_manifest() -> dict[str, Any]:
    """The llama-3-3-70b-instruct ClusterBaseModel spec 004's per-accelerator example serves."""
    doc = model_manifest()
    doc["metadata"] = {"name": MODEL_70B}
    doc["spec"].update(
        modelFramework={"name": "transformers", "version": "4.47.0.dev0"},
        modelParameterSize="70B",
        storage={"storageUri": "hf://meta-llama/Llama-3.3-70B-Instruct", "path": "/raid/models/llama-3-3-70b-instruct"},
    )
    return doc


def llama_entry(**extra: Any) -> dict[str, Any]:
    """The supportedModelFormats entry of the spec's Llama 3.2 runtimes, auto-selectable."""
    return {
        "modelFormat": {"name": "safetensors", "version": "1.0.0"},
        "modelFramework": {"name": "transformers", "version": "4.45.0.dev0"},
        "modelArchitecture": "LlamaForCausalLM",
        "autoSelect": True,
        **extra,
    }

"""The spec's manifests for the controller's stories, from the spec pages and the OME catalog."""

from __future__ import annotations

import copy
import re
from typing import Any

import yaml
from render.shared_data import catalog_model
from testkit.llama import model_manifest
from testkit.shared import SPEC, spec_manifest

from .support import catalog_file

NAMED_RUNTIME = "srt-llama-3-2-1b-instruct"
NAMED_ISVC = "llama-3-2-1b-instruct"
AUTO_RUNTIME = "sglang-llama-3-2-3b"
AUTO_ISVC = "llama-3-2-3b-instruct"
MULTINODE_RUNTIME = "srt-llama-3-3-70b-instruct-multinode"


def named_runtime() -> dict[str, Any]:
    """Spec 002's ClusterServingRuntime, from the OME catalog."""
    return catalog_file("runtimes/srt/meta/llama-3-2-1b-instruct-rt.yaml")


def named_model() -> dict[str, Any]:
    """Spec 002's ClusterBaseModel with the fields Step 1 shows the model agent recorded."""
    model = catalog_file("models/meta/Llama-3.2-1B-Instruct.yaml")
    model["spec"].update(
        modelArchitecture="LlamaForCausalLM",
        modelFormat={"name": "safetensors", "version": "1.0.0"},
        modelFramework={"name": "transformers", "version": "4.45.0.dev0"},
    )
    return model


def named_isvc() -> dict[str, Any]:
    """Spec 002 Step 2: the InferenceService that names the runtime (the page's isvc.yaml)."""
    (page,) = SPEC.glob("002_*.txt")
    for block in re.findall(r"```yaml[^\n]*\n(.*?)```", page.read_text(), re.DOTALL):
        manifest: dict[str, Any] = yaml.safe_load(block)
        if manifest.get("kind") == "InferenceService" and manifest["metadata"]["name"] == NAMED_ISVC:
            return manifest
    raise LookupError(f"{page.name} prints no InferenceService {NAMED_ISVC}")


def auto_runtime() -> dict[str, Any]:
    return spec_manifest("004", "ServingRuntime", AUTO_RUNTIME)


def auto_isvc() -> dict[str, Any]:
    return spec_manifest("004", "InferenceService", AUTO_ISVC)


def auto_model() -> dict[str, Any]:
    return model_manifest()


def multinode_runtime() -> dict[str, Any]:
    return spec_manifest("001", "ClusterServingRuntime", MULTINODE_RUNTIME)


def multinode_isvc() -> dict[str, Any]:
    """Spec 001's InferenceService naming the MultiNode runtime."""
    isvc = copy.deepcopy(spec_manifest("001", "InferenceService", "llama-3-70b"))
    isvc["spec"]["runtime"] = {"name": MULTINODE_RUNTIME}
    return isvc


def multinode_model() -> dict[str, Any]:
    """The 70B ClusterBaseModel with the fields the model agent records (OME refuses a model
    without a format name before it judges any runtime)."""
    model = catalog_model("llama-3-3-70b-instruct")
    model["spec"].update(
        modelArchitecture="LlamaForCausalLM",
        modelFormat={"name": "safetensors", "version": "1.0.0"},
        modelFramework={"name": "transformers", "version": "4.47.0.dev0"},
        modelParameterSize="70B",
    )
    return model

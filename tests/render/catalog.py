"""A render input for each catalog runtime: an InferenceService named ``isvc-<runtime>`` in
``default`` that declares the runtime's components (with a uid, as a created one has), a model
made from the runtime's first supportedModelFormats entry, and the modes policyd decides."""

from __future__ import annotations

import uuid
from typing import Any

from policyd.clients.renderer.render import RenderInput

from .builders import render_input
from .shared_data import catalog_runtimes

_MODEL_FIELDS = ("modelFormat", "modelFramework", "modelArchitecture", "quantization")


def catalog_input(runtime: dict[str, Any]) -> RenderInput:
    name = runtime["metadata"]["name"]
    entry = runtime["spec"]["supportedModelFormats"][0]
    model = {
        "apiVersion": "ome.io/v1beta1",
        "kind": "ClusterBaseModel",
        "metadata": {"name": f"model-{name}"},
        "spec": {
            **{key: entry[key] for key in _MODEL_FIELDS if key in entry},
            "storage": {"storageUri": f"hf://example/{name}", "path": f"/raid/models/{name}"},
        },
    }
    spec: dict[str, Any] = {"model": {"name": f"model-{name}"}, "runtime": {"name": name}, "engine": {"minReplicas": 1}}
    for component in ("decoder", "router"):
        if f"{component}Config" in runtime["spec"]:
            spec[component] = {"minReplicas": 1}
    isvc = {
        "apiVersion": "ome.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {"name": f"isvc-{name}", "namespace": "default", "uid": str(uuid.uuid5(uuid.NAMESPACE_DNS, name))},
        "spec": spec,
    }
    return render_input(isvc, runtime, model, {}, entry.get("acceleratorConfig"))


def catalog_inputs() -> list[tuple[str, RenderInput]]:
    """(runtime name, input) for every ClusterServingRuntime in the catalog."""
    return [(runtime["metadata"]["name"], catalog_input(runtime)) for runtime in catalog_runtimes()]

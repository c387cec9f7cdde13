"""What OME copies from the base model into a component's objects (components/base.go), and the
node label where the model agent reports it ready (constants.GetClusterBaseModelLabel,
GetBaseModelLabel)."""

from __future__ import annotations

import hashlib
from typing import Any

from policyd.clients.renderer.names import model_node_label
from policyd.clients.renderer.render import render

from .builders import make_isvc, make_model, make_runtime, only, render_input, runner


def _deployment(model: dict[str, Any], **isvc_model: Any) -> dict[str, Any]:
    isvc = make_isvc(engine={})
    isvc["spec"]["model"] = {"name": model["metadata"]["name"], **isvc_model}
    return only(render(render_input(isvc, make_runtime(engineConfig={"runner": runner()}), model)))


def test_vendor_format_category_and_decryption_annotations_come_from_the_model() -> None:
    model = make_model()
    model["metadata"]["annotations"] = {
        "models.ome.io/category": "LARGE",
        "ome.io/base-model-decryption-key-name": "key",
        "ome.io/base-model-decryption-secret-name": "secret",
        "unrelated": "x",
    }
    model["spec"].update(vendor="meta", modelFormat={"name": "safetensors", "version": "1.0.0"})
    metadata = _deployment(model)["metadata"]
    assert metadata["labels"]["base-model-size"] == "LARGE"
    assert metadata["labels"]["base-model-vendor"] == "meta"
    assert metadata["annotations"] == {
        "ome.io/base-model-decryption-key-name": "key",
        "ome.io/base-model-decryption-secret-name": "secret",
        "ome.io/base-model-name": "llama",
        "ome.io/base-model-vendor": "meta",
        "ome.io/base-model-format": "safetensors",
        "ome.io/base-model-format-version": "1.0.0",
        "ome.io/serving-runtime": "rt",
    }


def test_a_namespaced_base_model_is_looked_for_by_its_namespaced_node_label() -> None:
    model = {**make_model(), "kind": "BaseModel"}
    model["metadata"] = {"name": "llama", "namespace": "demo"}
    pod = _deployment(model, kind="BaseModel")["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"models.ome.io/demo.basemodel.llama": "Ready"}


def _hashed(name: str, length: int) -> str:
    return f"{hashlib.sha256(name.encode()).hexdigest()[:8]}-{name[-(length - 9) :]}"


def test_long_model_names_and_namespaces_are_shortened_in_the_node_label_as_ome_does() -> None:
    long_model = "meta-llama-3-3-70b-instruct-with-a-long-suffix"
    assert model_node_label(long_model, None) == f"models.ome.io/clusterbasemodel.{_hashed(long_model, 32)}"
    namespace = "a-rather-long-namespace"
    # 38 characters for both: the namespace gets 8, only its hash; the model the other 30
    namespace_hash = hashlib.sha256(namespace.encode()).hexdigest()[:8]
    assert model_node_label(long_model, namespace) == (
        f"models.ome.io/{namespace_hash}.basemodel.{_hashed(long_model, 30)}"
    )
    assert model_node_label("llama", "short") == "models.ome.io/short.basemodel.llama"

"""InspectModel: the BaseModel spec fields OME records from a model_index.json or a config.json."""

from __future__ import annotations

import json
from typing import Any

from testkit.diffusion import sd15_model_index
from testkit.shared import HF_CONFIGS

from policyd.contract import policy_pb2 as pb
from policyd.contract import resources_pb2 as rpb

from .support import Harness, assert_invalid, manifest_object, struct

# a boolean key, as real model indexes have, is ignored
MODEL_INDEX: dict[str, Any] = {**sd15_model_index(), "requires_safety_checker": True}
CONFIG: dict[str, Any] = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "torch_dtype": "bfloat16",
    "transformers_version": "4.45.0.dev0",
}
STORAGE_URI = "hf://stable-diffusion-v1-5/stable-diffusion-v1-5"


def _spec(reply: pb.InspectModelResponse) -> dict[str, Any]:
    spec: dict[str, Any] = json.loads(reply.spec_json)
    return spec


def test_model_index_records_the_pipeline_with_unet_as_transformer(harness: Harness) -> None:
    spec = _spec(harness.ok("InspectModel", pb.InspectModelRequest(model_index=struct(MODEL_INDEX))))
    pipeline = spec["diffusionPipeline"]
    assert pipeline["className"] == "StableDiffusionPipeline"
    assert pipeline["transformer"] == {"library": "diffusers", "type": "UNet2DConditionModel"}
    assert "unet" not in pipeline
    assert pipeline["textEncoder"] == {"library": "transformers", "type": "CLIPTextModel"}
    assert pipeline["additionalComponents"] == {
        "safety_checker": {"library": "diffusers", "type": "StableDiffusionSafetyChecker"}
    }
    assert spec["modelArchitecture"] == "StableDiffusionPipeline"
    assert spec["modelFormat"] == {"name": "diffusers", "version": "0.24.0"}
    assert spec["modelFramework"] == {"name": "diffusers", "version": "0.24.0"}


def test_config_records_the_transformers_fields(harness: Harness) -> None:
    spec = _spec(harness.ok("InspectModel", pb.InspectModelRequest(config=struct(CONFIG))))
    assert spec["modelArchitecture"] == "LlamaForCausalLM"
    assert spec["modelFormat"] == {"name": "safetensors", "version": "1.0.0"}
    assert spec["modelFramework"] == {"name": "transformers", "version": "4.45.0.dev0"}
    assert "diffusionPipeline" not in spec


def test_a_real_config_sent_as_a_struct_still_yields_the_parameter_size(harness: Harness) -> None:
    # Structs carry numbers as doubles; the layer and head counts must still count as integers.
    config = json.loads((HF_CONFIGS / "llama3_2_1b.json").read_text())
    spec = _spec(harness.ok("InspectModel", pb.InspectModelRequest(config=struct(config))))
    assert spec["modelParameterSize"] == "1.24B"


def test_typed_and_manifest_base_models_keep_the_fields_set_by_hand(harness: Harness) -> None:
    typed = rpb.BaseModel(
        kind="ClusterBaseModel",
        metadata=rpb.ObjectMeta(name="sd15"),
        spec=rpb.BaseModelSpec(
            diffusion_pipeline=rpb.DiffusionPipeline(class_name="StableDiffusionPipeline"),
            storage=rpb.Storage(storage_uri=STORAGE_URI),
        ),
    )
    manifest = {
        "apiVersion": "ome.io/v1beta1",
        "kind": "ClusterBaseModel",
        "metadata": {"name": "sd15"},
        "spec": {"diffusionPipeline": {"className": "StableDiffusionPipeline"}, "storage": {"storageUri": STORAGE_URI}},
    }
    index = struct(MODEL_INDEX)
    by_type = harness.ok("InspectModel", pb.InspectModelRequest(model_index=index, base_model=rpb.Object(model=typed)))
    by_text = harness.ok(
        "InspectModel", pb.InspectModelRequest(model_index=index, base_model=manifest_object(manifest))
    )
    assert by_type == by_text
    spec = _spec(by_type)
    assert spec["diffusionPipeline"] == {"className": "StableDiffusionPipeline"}  # set by hand: kept as written
    assert spec["modelArchitecture"] == "StableDiffusionPipeline"  # empty: filled in
    assert spec["modelFormat"] == {"name": "diffusers", "version": "0.24.0"}


def test_empty_request_names_the_file(harness: Harness) -> None:
    assert_invalid(harness.call("InspectModel", pb.InspectModelRequest()), "file")


def test_base_model_that_is_not_valid_yaml(harness: Harness) -> None:
    request = pb.InspectModelRequest(model_index=struct(MODEL_INDEX), base_model=rpb.Object(manifest="spec: ["))
    assert_invalid(harness.call("InspectModel", request), "base_model.manifest")


def test_empty_base_model(harness: Harness) -> None:
    request = pb.InspectModelRequest(model_index=struct(MODEL_INDEX), base_model=rpb.Object())
    assert_invalid(harness.call("InspectModel", request), "base_model")


def test_model_index_without_class_name_names_the_request_field(harness: Harness) -> None:
    index = {k: v for k, v in MODEL_INDEX.items() if k != "_class_name"}
    result = harness.call("InspectModel", pb.InspectModelRequest(model_index=struct(index)))
    # The key is a field of InspectModelRequest.model_index; the daemon leaves the request field out.
    assert_invalid(result, "model_index._class_name")


def test_base_model_with_a_bad_spec_names_the_request_field(harness: Harness) -> None:
    request = pb.InspectModelRequest(
        config=struct(CONFIG), base_model=rpb.Object(manifest="kind: ClusterBaseModel\nspec: 5")
    )
    # The request field is base_model; the daemon says "baseModel.spec" (the conformance case key).
    assert_invalid(harness.call("InspectModel", request), "base_model.spec", "base_model.manifest.spec")

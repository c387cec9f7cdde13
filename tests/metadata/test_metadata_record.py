"""What OME records on a model (spec: "What OME records for the model", "Models without a
recorded pipeline"), and the inspect conformance cases checked against the functions."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from testkit.shared import SHARED

from policyd.errors import InvalidInput
from policyd.metadata import inspect_config, inspect_model_index, inspect_path

INSPECT_CASES = sorted((SHARED / "conformance" / "cases" / "inspect").glob("*.yaml"))

INDEX = {
    "_class_name": "QwenImagePipeline",
    "_diffusers_version": "0.34.0.dev0",
    "scheduler": ["diffusers", "FlowMatchEulerDiscreteScheduler"],
    "text_encoder": ["transformers", "Qwen2_5_VLForConditionalGeneration"],
    "tokenizer": ["transformers", "Qwen2Tokenizer"],
    "transformer": ["diffusers", "QwenImageTransformer2DModel"],
    "vae": ["diffusers", "AutoencoderKLQwenImage"],
}
CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "transformers_version": "4.45.0.dev0",
    "hidden_size": 2048,
    "intermediate_size": 8192,
    "num_attention_heads": 32,
    "num_hidden_layers": 16,
    "num_key_value_heads": 8,
    "vocab_size": 128256,
    "tie_word_embeddings": True,
}


def model(uri: str = "hf://Qwen/Qwen-Image", annotations: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": "m"}
    if annotations is not None:
        metadata["annotations"] = annotations
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": "ClusterBaseModel",
        "metadata": metadata,
        "spec": {"storage": {"storageUri": uri}, **spec},
    }


# -- the conformance cases -----------------------------------------------------------------


def lookup(root: Any, path: str) -> tuple[bool, Any]:
    """(found, value) at a dotted path."""
    for key in path.split("."):
        if not isinstance(root, dict) or key not in root:
            return False, None
        root = root[key]
    return True, root


@pytest.mark.parametrize("case_file", INSPECT_CASES, ids=lambda p: p.stem)
def test_inspect_conformance_case(case_file: Path) -> None:
    case = yaml.safe_load(case_file.read_text())
    request = case["request"]
    assert request["action"] == "inspect-model"
    if "modelIndex" in request:
        spec = inspect_model_index(request["modelIndex"], request.get("baseModel"))
    else:
        spec = inspect_config(request["config"], request.get("baseModel"))
    for assertion in case["expect"]["assertions"]:
        found, value = lookup(spec, assertion["path"])
        if assertion.get("absent") or ("equals" in assertion and assertion["equals"] is None):
            assert not found, assertion
        elif "equals" in assertion:
            assert found and value == assertion["equals"], assertion
        else:
            pytest.fail(f"assertion kind not checked here: {assertion}")


def test_both_inspect_conformance_cases_are_present() -> None:
    assert {p.stem for p in INSPECT_CASES} >= {"fills-only-empty-fields", "model-index-records-pipeline"}


# -- OME fills in only empty fields ---------------------------------------------------------


def test_a_diffusion_pipeline_that_you_set_stays_as_written_even_one_listing_only_some_components() -> None:
    hand_set = {"className": "QwenImagePipeline", "transformer": {"library": "diffusers"}}
    spec = inspect_model_index(INDEX, model(diffusionPipeline=hand_set))
    assert spec["diffusionPipeline"] == hand_set
    assert spec["modelArchitecture"] == "QwenImagePipeline"


def test_fields_already_set_stay_and_only_empty_ones_are_filled() -> None:
    spec = inspect_model_index(
        INDEX,
        model(
            modelArchitecture="MyPipeline", modelFormat={"name": "diffusers", "version": "0.33.0"}, modelFramework={}
        ),
    )
    assert spec["modelArchitecture"] == "MyPipeline"
    assert spec["modelFormat"] == {"name": "diffusers", "version": "0.33.0"}
    assert spec["modelFramework"] == {"name": "diffusers", "version": "0.34.0.dev0"}
    assert spec["diffusionPipeline"]["className"] == "QwenImagePipeline"


@pytest.mark.parametrize("empty", [None, "", {}])
def test_a_null_or_empty_field_counts_as_empty(empty: Any) -> None:
    assert inspect_model_index(INDEX, model(modelArchitecture=empty))["modelArchitecture"] == "QwenImagePipeline"


def test_a_set_quantization_and_parameter_size_stay_as_written() -> None:
    spec = inspect_config(
        {**CONFIG, "quantization_config": {"quant_method": "fp8"}},
        model("hf://meta-llama/Llama-3.2-1B", quantization="int4", modelParameterSize="1B"),
    )
    assert (spec["quantization"], spec["modelParameterSize"]) == ("int4", "1B")
    assert spec["modelArchitecture"] == "LlamaForCausalLM"


def test_the_rest_of_the_spec_is_kept_and_the_manifest_is_not_changed() -> None:
    manifest = model(displayName="Qwen Image", modelCapabilities=["image-generation"])
    before = copy.deepcopy(manifest)
    spec = inspect_model_index(INDEX, manifest)
    assert manifest == before
    assert spec["displayName"] == "Qwen Image"
    assert spec["storage"] == {"storageUri": "hf://Qwen/Qwen-Image"}
    assert spec["modelCapabilities"] == ["image-generation"]


def test_without_a_manifest_every_field_is_recorded() -> None:
    spec = inspect_config(CONFIG)
    assert spec == {
        "modelArchitecture": "LlamaForCausalLM",
        "modelFormat": {"name": "safetensors", "version": "1.0.0"},
        "modelFramework": {"name": "transformers", "version": "4.45.0.dev0"},
        "modelParameterSize": "1.24B",
    }


# -- models without a recorded pipeline -----------------------------------------------------


def test_a_pvc_model_gets_architecture_format_and_framework_but_no_diffusion_pipeline() -> None:
    spec = inspect_model_index(INDEX, model("pvc://models/qwen-image"))
    assert "diffusionPipeline" not in spec
    assert spec["modelArchitecture"] == "QwenImagePipeline"
    assert spec["modelFormat"] == {"name": "diffusers", "version": "0.34.0.dev0"}
    assert spec["modelFramework"] == {"name": "diffusers", "version": "0.34.0.dev0"}


def test_a_pipeline_set_by_hand_on_a_pvc_model_stays() -> None:
    hand_set = {"className": "QwenImagePipeline", "transformer": {"library": "diffusers"}}
    spec = inspect_model_index(INDEX, model("pvc://models/qwen-image", diffusionPipeline=hand_set))
    assert spec["diffusionPipeline"] == hand_set


def test_a_vendor_model_gets_none_of_these_fields() -> None:
    manifest = model("vendor://oracle/some-model")
    assert inspect_model_index(INDEX, manifest) == manifest["spec"]
    assert inspect_config(CONFIG, manifest) == manifest["spec"]


def test_a_model_annotated_skip_config_parsing_gets_none_of_these_fields() -> None:
    manifest = model(annotations={"ome.oracle.com/skip-config-parsing": "true"})
    assert inspect_model_index(INDEX, manifest) == manifest["spec"]
    assert inspect_config(CONFIG, manifest) == manifest["spec"]


def test_skipped_models_files_are_not_read(tmp_path: Path) -> None:
    manifest = model("vendor://oracle/some-model")
    assert inspect_path(tmp_path / "missing", manifest) == manifest["spec"]
    assert inspect_config({"not": "a config"}, manifest) == manifest["spec"]


def test_a_skip_config_parsing_annotation_other_than_true_does_not_skip() -> None:
    manifest = model(annotations={"ome.oracle.com/skip-config-parsing": "false"})
    assert inspect_model_index(INDEX, manifest)["modelArchitecture"] == "QwenImagePipeline"


@pytest.mark.parametrize(
    ("manifest", "field"),
    [
        ("not a manifest", "baseModel"),
        ({"spec": []}, "baseModel.spec"),
        ({"spec": {"storage": "hf://x"}}, "baseModel.spec.storage"),
        ({"spec": {"storage": {"storageUri": 3}}}, "baseModel.spec.storage.storageUri"),
        ({"metadata": {"annotations": ["x"]}}, "baseModel.metadata.annotations"),
    ],
)
def test_a_malformed_manifest_is_invalid_input_naming_the_field(manifest: Any, field: str) -> None:
    with pytest.raises(InvalidInput) as error:
        inspect_model_index(INDEX, manifest)
    assert error.value.field == field


# -- reading files as the model agent does ---------------------------------------------------


def write(path: Path, content: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


def test_the_agent_reads_model_index_json_instead_of_config_json(tmp_path: Path) -> None:
    write(tmp_path / "model_index.json", INDEX)
    write(tmp_path / "config.json", CONFIG)
    assert inspect_path(tmp_path)["modelArchitecture"] == "QwenImagePipeline"
    assert inspect_path(str(tmp_path / "config.json"))["modelArchitecture"] == "LlamaForCausalLM"


def test_a_directory_with_only_config_json_is_read_as_a_transformers_model(tmp_path: Path) -> None:
    write(tmp_path / "config.json", CONFIG)
    assert inspect_path(tmp_path)["modelFramework"] == {"name": "transformers", "version": "4.45.0.dev0"}


def test_a_file_is_a_model_index_by_its_content(tmp_path: Path) -> None:
    spec = inspect_path(write(tmp_path / "pipeline.json", INDEX))
    assert spec["diffusionPipeline"]["transformer"] == {"library": "diffusers", "type": "QwenImageTransformer2DModel"}


def test_a_directory_without_metadata_files_is_invalid_input_naming_it(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput) as error:
        inspect_path(tmp_path)
    assert error.value.field == str(tmp_path)
    assert "model_index.json" in error.value.message and "config.json" in error.value.message


def test_a_missing_path_is_invalid_input_naming_it(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput) as error:
        inspect_path(tmp_path / "nowhere" / "config.json")
    assert error.value.field == str(tmp_path / "nowhere" / "config.json")


@pytest.mark.parametrize(
    ("content", "says"),
    [("{not json", "not JSON"), (b"\xff\xfe\x00", "not JSON"), ("[1, 2]", "JSON object, got list")],
)
def test_a_file_that_is_not_a_json_object_is_invalid_input_naming_it(tmp_path: Path, content: Any, says: str) -> None:
    file = tmp_path / "config.json"
    file.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(InvalidInput) as error:
        inspect_path(file)
    assert error.value.field == str(file)
    assert says in error.value.message


def test_a_model_index_missing_its_class_is_invalid_input_naming_the_file_and_key(tmp_path: Path) -> None:
    file = write(tmp_path / "model_index.json", {"_diffusers_version": "0.34.0"})
    with pytest.raises(InvalidInput) as error:
        inspect_path(tmp_path)
    assert error.value.field == str(file)
    assert error.value.message.startswith("_class_name: model_type or _class_name field is missing or empty")


def test_a_config_missing_a_key_is_invalid_input_naming_the_file_and_key(tmp_path: Path) -> None:
    file = write(tmp_path / "config.json", {k: v for k, v in CONFIG.items() if k != "architectures"})
    with pytest.raises(InvalidInput) as error:
        inspect_path(file)
    assert error.value.field == str(file)
    assert error.value.message.startswith("architectures: missing")

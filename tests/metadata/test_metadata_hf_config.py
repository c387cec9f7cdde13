"""What OME records from a transformers config.json, over synthetic and every real config."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from testkit.shared import SHARED

from policyd.errors import InvalidInput
from policyd.metadata import inspect_config, inspect_path
from policyd.metadata.hf_config import quantization

HF_CONFIGS = sorted((SHARED / "data" / "hf-configs").glob("*.json"))

# The real configs that cannot be recorded, and the start of what the error says is missing.
ERRORS = {
    "command_r_35b.json": "transformers_version: missing",
    "dbrx_132b.json": "transformers_version: missing",
    "config_sentence_transformers.json": "architectures: missing: this is a sentence-transformers config",
    "deepseek_vl2_tiny.json": "architectures: missing at the top level; language_config.architectures names",
    "janus_1.3b.json": "architectures: missing",
}

MINIMAL = {"architectures": ["MyModelForCausalLM", "Other"], "transformers_version": "4.46.0"}


def test_the_architecture_is_the_first_class_in_architectures() -> None:
    assert inspect_config(MINIMAL)["modelArchitecture"] == "MyModelForCausalLM"


def test_the_format_is_safetensors_and_the_framework_transformers_at_transformers_version() -> None:
    spec = inspect_config(MINIMAL)
    assert spec["modelFormat"] == {"name": "safetensors", "version": "1.0.0"}
    assert spec["modelFramework"] == {"name": "transformers", "version": "4.46.0"}


def test_an_uncovered_family_records_no_parameter_size() -> None:
    assert "modelParameterSize" not in inspect_config(MINIMAL)


@pytest.mark.parametrize("method", ["fp8", "awq", "gptq", "compressed-tensors", "bitsandbytes", "mxfp4"])
def test_a_quantized_model_records_its_quant_method(method: str) -> None:
    spec = inspect_config({**MINIMAL, "quantization_config": {"quant_method": method, "bits": 4}})
    assert spec["quantization"] == method


def test_a_model_that_declares_no_quantization_records_none() -> None:
    assert "quantization" not in inspect_config(MINIMAL)
    assert quantization({**MINIMAL, "quantization_config": None}) is None


def test_the_quantization_of_a_multimodal_model_may_sit_in_its_text_config() -> None:
    config = {**MINIMAL, "text_config": {"quantization_config": {"quant_method": "awq"}}}
    assert quantization(config) == "awq"


@pytest.mark.parametrize("declared", [{"bits": 4}, "fp8", {"quant_method": ""}])
def test_a_quantization_config_without_a_quant_method_is_invalid(declared: Any) -> None:
    with pytest.raises(InvalidInput) as error:
        inspect_config({**MINIMAL, "quantization_config": declared})
    assert error.value.field == "quantization_config.quant_method"


def test_the_framework_version_of_a_multimodal_model_may_sit_in_its_language_config() -> None:
    config = {"architectures": ["VLForCausalLM"], "language_config": {"transformers_version": "4.38.2"}}
    assert inspect_config(config)["modelFramework"]["version"] == "4.38.2"


def test_a_language_sub_config_architecture_is_not_the_models_architecture() -> None:
    config = {"transformers_version": "4.38.2", "text_config": {"architectures": ["LlamaForCausalLM"]}}
    with pytest.raises(InvalidInput) as error:
        inspect_config(config)
    assert error.value.field == "architectures"
    assert "text_config.architectures names LlamaForCausalLM" in error.value.message


@pytest.mark.parametrize("classes", [[], "LlamaForCausalLM", [None], [""]])
def test_architectures_must_be_a_non_empty_list_of_class_names(classes: Any) -> None:
    with pytest.raises(InvalidInput) as error:
        inspect_config({**MINIMAL, "architectures": classes})
    assert error.value.field == "architectures"


@pytest.mark.parametrize("version", [4.46, "", ["4.46.0"]])
def test_transformers_version_must_be_a_version_string(version: Any) -> None:
    with pytest.raises(InvalidInput) as error:
        inspect_config({**MINIMAL, "transformers_version": version})
    assert error.value.field == "transformers_version"


def test_a_config_that_is_not_an_object_is_invalid() -> None:
    with pytest.raises(InvalidInput) as error:
        inspect_config(["LlamaForCausalLM"])  # type: ignore[arg-type]
    assert error.value.field == "config.json"


# -- every real config -------------------------------------------------------------------


def test_the_expected_errors_name_real_configs() -> None:
    assert set(ERRORS) <= {path.name for path in HF_CONFIGS}
    assert len(HF_CONFIGS) >= 60


@pytest.mark.parametrize("path", HF_CONFIGS, ids=lambda p: p.name)
def test_every_real_config_yields_an_architecture_and_framework_version_or_an_error_naming_the_file(
    path: Path,
) -> None:
    if path.name in ERRORS:
        with pytest.raises(InvalidInput) as error:
            inspect_path(path)
        assert error.value.field == str(path)
        assert error.value.message.startswith(ERRORS[path.name])
        return
    config = json.loads(path.read_text())
    spec = inspect_path(path)
    assert spec["modelArchitecture"] == config["architectures"][0]
    assert spec["modelFramework"] == {"name": "transformers", "version": config["transformers_version"]}
    assert spec["modelFormat"] == {"name": "safetensors", "version": "1.0.0"}


@pytest.mark.parametrize(
    ("name", "method"),
    [
        ("qwen3_8b_fp8.json", "fp8"),
        ("kimi_k2_instruct.json", "fp8"),
        ("llama3_1_405b.json", "fbgemm_fp8"),
        ("llama4.json", "compressed-tensors"),
        ("gpt_oss_20b.json", "mxfp4"),
        ("qwen3_4b.json", None),
    ],
)
def test_real_configs_record_their_declared_quantization(name: str, method: str | None) -> None:
    assert inspect_path(SHARED / "data" / "hf-configs" / name).get("quantization") == method

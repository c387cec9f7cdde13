"""The model_index.json key mapping (spec: "What OME records for the model")."""

from __future__ import annotations

from typing import Any

import pytest
from testkit.diffusion import sd15_model_index

from policyd.errors import InvalidInput
from policyd.metadata import inspect_model_index
from policyd.metadata.model_index import model_index_fields, pipeline

BASE = {"_class_name": "QwenImagePipeline", "_diffusers_version": "0.34.0.dev0"}


def index(**components: Any) -> dict[str, Any]:
    return {**BASE, **components}


def test_class_name_becomes_class_name() -> None:
    assert pipeline(BASE) == {"className": "QwenImagePipeline"}


def test_text_encoder_becomes_text_encoder() -> None:
    recorded = pipeline(index(text_encoder=["transformers", "Qwen2_5_VLForConditionalGeneration"]))
    assert recorded["textEncoder"] == {"library": "transformers", "type": "Qwen2_5_VLForConditionalGeneration"}
    assert "text_encoder" not in recorded


def test_transformer_becomes_transformer() -> None:
    recorded = pipeline(index(transformer=["diffusers", "QwenImageTransformer2DModel"]))
    assert recorded["transformer"] == {"library": "diffusers", "type": "QwenImageTransformer2DModel"}


def test_unet_becomes_transformer() -> None:
    recorded = pipeline(index(unet=["diffusers", "UNet2DConditionModel"]))
    assert recorded["transformer"] == {"library": "diffusers", "type": "UNet2DConditionModel"}
    assert "unet" not in recorded and "additionalComponents" not in recorded


@pytest.mark.parametrize("key", ["scheduler", "tokenizer", "vae"])
def test_scheduler_tokenizer_and_vae_keep_the_same_name(key: str) -> None:
    recorded = pipeline(index(**{key: ["lib", "SomeType"]}))
    assert recorded[key] == {"library": "lib", "type": "SomeType"}


def test_any_other_key_whose_value_is_a_component_goes_under_additional_components() -> None:
    recorded = pipeline(
        index(
            safety_checker=["diffusers", "StableDiffusionSafetyChecker"],
            feature_extractor=["transformers", "CLIPImageProcessor"],
        )
    )
    assert recorded["additionalComponents"] == {
        "safety_checker": {"library": "diffusers", "type": "StableDiffusionSafetyChecker"},
        "feature_extractor": {"library": "transformers", "type": "CLIPImageProcessor"},
    }


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("_name_or_path", "stabilityai/stable-diffusion-2"),
        ("_ignored_private", ["diffusers", "Looks Like A Component"]),
        ("requires_safety_checker", True),
        ("force_zeros_for_empty_prompt", False),
        ("some_string", "diffusers"),
        ("a_number", 3),
        ("empty_list", []),
        ("mixed_list", ["diffusers", 5]),
        ("empty_object", {}),
    ],
)
def test_keys_whose_value_is_not_a_component_are_ignored(key: str, value: Any) -> None:
    assert pipeline(index(**{key: value})) == {"className": "QwenImagePipeline"}


@pytest.mark.parametrize(
    ("value", "recorded"),
    [
        ([None, None], {}),  # diffusers' absent optional component: OME records it, empty
        (["", "AutoencoderKL"], {"type": "AutoencoderKL"}),
        (["AutoencoderKL"], {"type": "AutoencoderKL"}),  # one item is the type
        (["diffusers", "AutoencoderKL", "extra"], {"library": "diffusers", "type": "AutoencoderKL"}),
        ({"_class_name": "AutoencoderKL", "_library": "diffusers"}, {"library": "diffusers", "type": "AutoencoderKL"}),
        ({"type": "AutoencoderKL", "library": "diffusers"}, {"library": "diffusers", "type": "AutoencoderKL"}),
        ({"className": "AutoencoderKL"}, {"type": "AutoencoderKL"}),
    ],
)
def test_component_values_are_read_as_ome_reads_them(value: Any, recorded: dict[str, str]) -> None:
    assert pipeline(index(vae=value))["vae"] == recorded


def test_keys_match_without_regard_to_case() -> None:
    recorded = pipeline(index(VAE=["diffusers", "AutoencoderKL"], Text_Encoder=["transformers", "T5"]))
    assert recorded["vae"] == {"library": "diffusers", "type": "AutoencoderKL"}
    assert recorded["textEncoder"] == {"library": "transformers", "type": "T5"}


def test_with_both_transformer_and_unet_transformer_is_kept() -> None:
    recorded = pipeline(index(unet=["diffusers", "UNet2DModel"], transformer=["diffusers", "DiTTransformer2DModel"]))
    assert recorded["transformer"] == {"library": "diffusers", "type": "DiTTransformer2DModel"}
    assert "additionalComponents" not in recorded  # OME never records unet elsewhere


def test_the_class_and_version_may_be_spelled_without_the_underscore() -> None:
    fields = model_index_fields({"class_name": "FluxPipeline", "diffusers_version": "0.30.0"})
    assert fields["modelArchitecture"] == "FluxPipeline"
    assert fields["modelFormat"] == {"name": "diffusers", "version": "0.30.0"}


def test_architecture_format_and_framework_come_from_class_name_and_diffusers_version() -> None:
    fields = model_index_fields(BASE)
    assert fields["modelArchitecture"] == "QwenImagePipeline"
    assert fields["modelFormat"] == {"name": "diffusers", "version": "0.34.0.dev0"}
    assert fields["modelFramework"] == {"name": "diffusers", "version": "0.34.0.dev0"}


def test_the_spec_example_records_the_spec_pipeline() -> None:
    recorded = inspect_model_index(sd15_model_index())
    assert recorded["diffusionPipeline"] == {
        "className": "StableDiffusionPipeline",
        "scheduler": {"library": "diffusers", "type": "EulerDiscreteScheduler"},
        "textEncoder": {"library": "transformers", "type": "CLIPTextModel"},
        "tokenizer": {"library": "transformers", "type": "CLIPTokenizer"},
        "transformer": {"library": "diffusers", "type": "UNet2DConditionModel"},
        "vae": {"library": "diffusers", "type": "AutoencoderKL"},
        "additionalComponents": {"safety_checker": {"library": "diffusers", "type": "StableDiffusionSafetyChecker"}},
    }


def test_a_model_index_without_a_class_name_is_refused_in_ome_s_words() -> None:
    with pytest.raises(InvalidInput) as error:
        inspect_model_index({"_diffusers_version": "0.34.0"})
    assert error.value.field == "_class_name"
    assert (
        error.value.message == "model_type or _class_name field is missing or empty in config file 'model_index.json'"
    )


@pytest.mark.parametrize("version", [None, 0.3])
def test_without_a_string_diffusers_version_ome_records_an_empty_version(version: Any) -> None:
    fields = inspect_model_index({"_class_name": "QwenImagePipeline", "_diffusers_version": version})
    assert fields["modelFormat"] == {"name": "diffusers", "version": ""}
    assert fields["modelFramework"] == {"name": "diffusers", "version": ""}


def test_a_model_index_that_is_not_an_object_is_invalid() -> None:
    with pytest.raises(InvalidInput) as error:
        inspect_model_index([["diffusers", "AutoencoderKL"]])  # type: ignore[arg-type]
    assert error.value.field == "model_index.json"

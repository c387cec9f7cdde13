"""Parameter counts from config fields, against the published sizes of real models."""

from __future__ import annotations

import json
from typing import Any

import pytest
from testkit.shared import HF_CONFIGS

from policyd.metadata import inspect_config
from policyd.metadata.parameters import parameter_count

# Published sizes (model cards / Hugging Face's parameter counts) of the real configs.
PUBLISHED = {
    "llama3.json": 70.55e9,  # Llama 3 70B
    "llama3_1_405b.json": 405.85e9,
    "llama3_2_1b.json": 1.24e9,
    "llama3_2_3b.json": 3.21e9,
    "smollm_1.7b.json": 1.71e9,
    "skywork_reward_llama.json": 7.5e9,  # Llama 3.1 8B with a one-label score head
    "mistral_7b_instruct.json": 7.24e9,
    "e5_mistral_7b.json": 7.11e9,  # MistralModel: no lm_head
    "mixtral.json": 46.7e9,
    "qwen2.5_0.5b.json": 0.494e9,
    "qwen2.5_7b.json": 7.62e9,
    "qwen2.5_72b.json": 72.7e9,
    "qwen3_4b.json": 4.02e9,
    "qwen3_30b.json": 30.5e9,
    "gemma_7b.json": 8.54e9,
    "gemma_2_2b.json": 2.61e9,
    "gemma_2_9b.json": 9.24e9,
    "gemma3_text.json": 1.0e9,
    "phi3.json": 3.82e9,
    "phimoe.json": 41.9e9,
    "internlm2_7b.json": 7.74e9,
    "baichuan2_7b.json": 7.51e9,
    "exaone_7.8b.json": 7.82e9,
    "stablelm_3b.json": 2.8e9,
    "minicpm3_4b.json": 4.07e9,
    "chatglm3_6b.json": 6.24e9,
    "glm4_9b.json": 9.4e9,
    "qwen_7b.json": 7.72e9,
    "gpt_oss_20b.json": 20.9e9,
    "gpt_oss_120b.json": 116.8e9,
    "deepseek_v3.json": 671e9,
    "kimi_k2_instruct.json": 1.04e12,
    "bge_large.json": 335e6,
}

# Families covered by the code but without a real config here, from their published configs.
LLAMA_3_8B = {
    "model_type": "llama",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_attention_heads": 32,
    "num_hidden_layers": 32,
    "num_key_value_heads": 8,
    "vocab_size": 128256,
    "tie_word_embeddings": False,
}
QWEN15_MOE_A27B = {
    "model_type": "qwen2_moe",
    "hidden_size": 2048,
    "intermediate_size": 5632,
    "moe_intermediate_size": 1408,
    "shared_expert_intermediate_size": 5632,
    "num_experts": 60,
    "num_attention_heads": 16,
    "num_hidden_layers": 24,
    "num_key_value_heads": 16,
    "vocab_size": 151936,
    "tie_word_embeddings": False,
}
DEEPSEEK_V2_LITE = {
    "model_type": "deepseek_v2",
    "hidden_size": 2048,
    "intermediate_size": 10944,
    "moe_intermediate_size": 1408,
    "n_routed_experts": 64,
    "n_shared_experts": 2,
    "first_k_dense_replace": 1,
    "kv_lora_rank": 512,
    "q_lora_rank": None,
    "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64,
    "v_head_dim": 128,
    "num_attention_heads": 16,
    "num_hidden_layers": 27,
    "num_key_value_heads": 16,
    "vocab_size": 102400,
    "topk_method": "greedy",
    "tie_word_embeddings": False,
}
BGE_M3 = {
    "model_type": "xlm-roberta",
    "hidden_size": 1024,
    "intermediate_size": 4096,
    "num_attention_heads": 16,
    "num_hidden_layers": 24,
    "vocab_size": 250002,
    "max_position_embeddings": 8194,
    "type_vocab_size": 1,
}


def real(name: str) -> dict[str, Any]:
    config: dict[str, Any] = json.loads((HF_CONFIGS / name).read_text())
    return config


@pytest.mark.parametrize(("name", "published"), PUBLISHED.items(), ids=list(PUBLISHED))
def test_the_count_is_within_two_percent_of_the_published_size(name: str, published: float) -> None:
    config = real(name)
    count = parameter_count(config, config["architectures"][0])
    assert count is not None
    assert abs(count - published) / published < 0.02


@pytest.mark.parametrize(
    ("config", "architecture", "published"),
    [
        (QWEN15_MOE_A27B, "Qwen2MoeForCausalLM", 14.3e9),
        (DEEPSEEK_V2_LITE, "DeepseekV2ForCausalLM", 15.7e9),
        (BGE_M3, "XLMRobertaModel", 568e6),
    ],
    ids=["qwen1.5-moe-a2.7b", "deepseek-v2-lite", "bge-m3"],
)
def test_covered_families_without_a_real_config_match_their_published_size(
    config: dict[str, Any], architecture: str, published: float
) -> None:
    count = parameter_count(config, architecture)
    assert count is not None
    assert abs(count - published) / published < 0.02


def test_a_llama_3_8b_config_records_8_03b() -> None:
    spec = inspect_config({**LLAMA_3_8B, "architectures": ["LlamaForCausalLM"], "transformers_version": "4.40.0"})
    assert spec["modelParameterSize"] == "8.03B"


def test_tied_word_embeddings_count_the_embedding_matrix_once() -> None:
    untied = parameter_count(LLAMA_3_8B, "LlamaForCausalLM")
    tied = parameter_count({**LLAMA_3_8B, "tie_word_embeddings": True}, "LlamaForCausalLM")
    assert untied is not None and tied is not None
    assert untied - tied == 128256 * 4096


def test_a_base_model_class_has_no_lm_head() -> None:
    with_head = parameter_count(LLAMA_3_8B, "LlamaForCausalLM")
    base = parameter_count(LLAMA_3_8B, "LlamaModel")
    assert with_head is not None and base is not None
    assert with_head - base == 128256 * 4096


@pytest.mark.parametrize(
    "name",
    ["llava_1.5_7b_hf.json", "qwen2_vl_7b.json", "gemma3.json", "llama3_2_11b_vision.json", "llama4.json"],
)
def test_multimodal_models_have_unknown_size(name: str) -> None:
    config = real(name)
    assert parameter_count(config, config["architectures"][0]) is None


def test_a_head_that_is_not_modelled_gives_unknown_size() -> None:
    config = real("internlm2_reward.json")
    assert parameter_count(config, "InternLM2ForRewardModel") is None


def test_a_config_missing_a_needed_value_gives_unknown_size() -> None:
    incomplete = {k: v for k, v in LLAMA_3_8B.items() if k != "intermediate_size"}
    assert parameter_count(incomplete, "LlamaForCausalLM") is None


def test_a_family_option_that_is_not_modelled_gives_unknown_size() -> None:
    config = {**real("stablelm_3b.json"), "qk_layernorm": True}
    assert parameter_count(config, "StableLmForCausalLM") is None

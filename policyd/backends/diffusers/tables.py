"""vLLM-Omni's diffusers backend, as its source declares it (../shared/reference/vllm-omni):
the tables it consults and how it reads a model. Data, and lookups over it; nothing here
judges — the rule files do (rules/30-diffusers-backend.yaml).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

ADAPTER_CLASS = "DiffusersAdapterPipeline"

# vllm_omni/diffusion/registry.py _DIFFUSION_MODELS: the pipelines vLLM-Omni implements
# natively, keyed by model_index.json _class_name (the adapter itself left out).
NATIVE_PIPELINES = frozenset(
    {
        "AudioXPipeline", "BagelPipeline", "BooguImagePipeline", "Cosmos3OmniDiffusersPipeline",
        "Cosmos3OmniPipeline", "DreamIDOmniPipeline", "DreamZeroPipeline", "ErnieImagePipeline",
        "Flux2KleinPipeline", "Flux2Pipeline", "FluxDMD2Pipeline", "FluxKontextPipeline", "FluxPipeline",
        "GlmImagePipeline", "Gr00tN1d7Pipeline", "HeliosPipeline", "HeliosPyramidPipeline",
        "HiDreamImagePipeline", "HiDreamO1ImagePipeline", "HunyuanImage3ForCausalMM",
        "HunyuanVideo15ImageToVideoPipeline", "HunyuanVideo15Pipeline", "InternVLAA1Pipeline", "Krea2Pipeline",
        "LTX2DistilledOneStagePipeline", "LTX2DistilledPipeline", "LTX2DistilledTwoStagePipeline",
        "LTX2I2VDMD2Pipeline", "LTX2Pipeline", "LTX2T2VDMD2Pipeline", "LTX2TwoStagePipeline", "LancePipeline",
        "LingBotVideoPipeline", "LingBotWorldCausalDMDPipeline", "LongCatImageEditPipeline",
        "LongCatImagePipeline", "LongCatVideoAvatarPipeline", "MagiHumanPipeline", "MingImagePipeline",
        "MiniMaxH3ModularPipeline", "MiniMaxH3Pipeline", "NextStep11Pipeline", "OmniGen2Pipeline", "OmniVoice",
        "OmniVoicePipeline", "OvisImagePipeline", "Pi0Pipeline", "QwenImageDMD2Pipeline",
        "QwenImageEditPipeline", "QwenImageEditPlusPipeline", "QwenImageLayeredPipeline", "QwenImagePipeline",
        "SanaWmPipeline", "SenseNovaU1Pipeline", "SoulXSingerPipeline", "SoulXSingerSVCPipeline",
        "StableAudioPipeline", "StableDiffusion3Pipeline", "StableDiffusionXLPipeline", "WanI2VDMD2Pipeline",
        "WanImageToVideoPipeline", "WanPipeline", "WanS2VPipeline", "WanT2VDMD2Pipeline", "WanVACEPipeline",
        "ZImagePipeline",
    }
)  # fmt: skip

# diffusers_adapter/pipeline_utils.py PIPELINE_UTILS_REGISTRY: the pipelines whose
# boundary_ratio is injected into from_pretrained and whose flow_shift is applied to the scheduler.
WAN_PIPELINES = (
    "WanPipeline",
    "WanImageToVideoPipeline",
    "WanVACEPipeline",
    "WanVideoToVideoPipeline",
    "WanAnimatePipeline",
)

# spec 003, Model Support: the models whose outputs are verified against plain diffusers.
VERIFIED_MODELS = ("Qwen/Qwen-Image", "Tongyi-MAI/Z-Image-Turbo", "Wan2.2-I2V-A14B-Diffusers")

# quantization_utils.py _QUANTIZATION_CONFIG_SPECS: the methods the shortcut translates, and to what.
TORCHAO_CONFIGS = {
    "fp8": "Float8DynamicActivationFloat8WeightConfig",
    "int8": "Int8DynamicActivationInt8WeightConfig",
}
TRANSFORMER_COMPONENTS = ("transformer", "transformer_2")

# pipeline_diffusers_adapter.py _set_attention_backend: vLLM-Omni backend name → the diffusers
# backends tried in order (None: no backend configured). Anything else falls back to SDPA.
SDPA = "native"
CUDA_FLASH_ATTEMPTS = (
    "_flash_3_hub",
    "_flash_3_varlen_hub",
    "_flash_3",
    "_flash_varlen_3",
    "flash_hub",
    "flash_varlen_hub",
    "flash",
    "flash_varlen",
    "_native_flash",
)
_FLASH_BY_PLATFORM = {"rocm": ("aiter",), "xpu": ("_native_xla",), "musa": (SDPA,), "cuda": CUDA_FLASH_ATTEMPTS}
ATTENTION_ATTEMPTS: Mapping[str, tuple[str, ...]] = {
    "SAGE_ATTN": ("sage_hub", "sage", "sage", "sage_varlen"),  # "sage" twice, as the adapter lists it
    "ASCEND": ("_native_npu",),
    "TORCH_SDPA": (SDPA,),
}
FLASH_ATTN = "FLASH_ATTN"
# runner resource names → the platform the adapter's FLASH_ATTN branch sees
_PLATFORM_RESOURCES = (
    ("amd.com/gpu", "rocm"),
    ("gpu.intel.com/i915", "xpu"),
    ("gpu.intel.com/xe", "xpu"),
    ("mthreads.com/gpu", "musa"),
)

# data.py OmniDiffusionConfig.__post_init__: --dtype text → torch dtype (anything else: bfloat16)
DTYPES = {
    "auto": "bfloat16",
    "bfloat16": "bfloat16",
    "bf16": "bfloat16",
    "float16": "float16",
    "fp16": "float16",
    "half": "float16",
    "float32": "float32",
    "fp32": "float32",
    "float": "float32",
}

# vllm_omni/inputs/data.py OmniDiffusionSamplingParams: fields with a non-None default are
# passed to the pipeline on every request; None-default fields only when the request sets them.
SAMPLING_ALWAYS = frozenset(
    {
        "do_classifier_free_guidance", "num_outputs_per_prompt", "layers", "cfg_normalize", "use_en_prompt",
        "resolution", "is_prompt_processed", "num_frames", "num_frames_round_down", "height_not_provided",
        "width_not_provided", "enable_frame_interpolation", "frame_interpolation_exp",
        "frame_interpolation_scale", "guidance_scale_provided", "guidance_scale_2_provided", "guidance_rescale",
        "eta", "extra_step_kwargs", "need_kv_receive", "modules", "return_trajectory_latents",
        "return_trajectory_decoded", "extra_args", "save_output", "return_frames", "lora_scale",
        "is_cfg_negative", "VSA_sparsity", "profile", "num_profiled_timesteps", "debug",
    }
)  # fmt: skip
SAMPLING_WHEN_SET = frozenset(
    {
        "max_sequence_length", "prompt_template", "quality", "seed", "generator_device", "latents",
        "audio_latents", "raw_latent_shape", "noise_pred", "image_latent", "height_latents", "width_latents",
        "height", "width", "fps", "frame_rate", "frame_interpolation_model_path", "timesteps", "timestep",
        "step_index", "boundary_ratio", "num_inference_steps", "guidance_scale", "guidance_scale_2",
        "strength", "decode_timestep", "decode_noise_scale", "sigmas", "true_cfg_scale", "n_tokens",
        "past_key_values", "kv_metadata", "cfg_text_past_key_values", "cfg_img_past_key_values",
        "cfg_text_kv_metadata", "cfg_img_kv_metadata", "cfg_kv_request_ids", "cfg_active_branch",
        "cfg_branch_roles", "cfg_branch_past_key_values", "cfg_branch_kv_metadata", "trajectory_timesteps",
        "trajectory_latents", "lora_request", "STA_param", "mask_search_final_result_pos",
        "mask_search_final_result_neg", "output",
    }
)  # fmt: skip
# _build_call_kwargs: output_type (which always has the server's default), num_*_per_prompt and
# generator are set after everything else
PER_PROMPT = re.compile(r"num_[a-z]+_per_prompt")
# _extract_input: the prompt always comes from the request; a request's negative prompt wins
PROMPT_ALWAYS = ("prompt",)
PROMPT_WHEN_SET = ("negative_prompt",)


ALWAYS, WHEN_SET, NEVER = "always", "when the request sets it", "never"


def call_kwarg_shadow(key: str, default_sampling_keys: frozenset[str] = frozenset()) -> tuple[str, str]:
    """Whether request-time values override a diffusers_call_kwargs key (always, when the
    request sets it, never), and what overrides it."""
    if key in PROMPT_ALWAYS:
        return ALWAYS, "the request's prompt"
    if key == "output_type":
        return ALWAYS, "the request's output_type, else the server's"
    if key == "generator":
        return ALWAYS, "a generator seeded from the request"
    if PER_PROMPT.match(key):
        return ALWAYS, "the request's num_outputs_per_prompt"
    if key in default_sampling_keys:
        return ALWAYS, "--default-sampling-params"
    if key in SAMPLING_ALWAYS:
        return ALWAYS, f"the request's {key} (it has a default)"
    if key in PROMPT_WHEN_SET or key in SAMPLING_WHEN_SET:
        return WHEN_SET, f"the request's {key}"
    return NEVER, ""


def platform(resources: frozenset[str]) -> str:
    """The platform a runner's accelerator resources point to (CUDA unless they name another)."""
    return next((name for resource, name in _PLATFORM_RESOURCES if resource in resources), "cuda")


def attention_attempts(backend: str | None, on: str) -> tuple[str, ...]:
    """The diffusers attention backends the adapter tries, in order, before falling back to SDPA."""
    if backend is None or backend == FLASH_ATTN:
        return _FLASH_BY_PLATFORM.get(on, CUDA_FLASH_ATTEMPTS)
    return ATTENTION_ATTEMPTS.get(backend, (SDPA,))


def attention_mapped(backend: str | None) -> bool:
    """Whether the adapter knows the backend name (it compares names case-sensitively)."""
    return backend is None or backend == FLASH_ATTN or backend in ATTENTION_ATTEMPTS


def verified(repo: str) -> bool:
    """Whether the backend's page lists the repository (an entry without an owner matches by name)."""
    name = repo.rsplit("/", 1)[-1]
    return any(repo == v if "/" in v else name == v for v in VERIFIED_MODELS)

"""Effective for a diffusers-backend engine: the final from_pretrained kwargs with where each came
from (--dtype, load kwargs, Wan injection, the quantization shortcut), the call-kwargs merge order
and the keys request-time values shadow, the quantization path, the attention backends tried."""

from __future__ import annotations

from typing import Any

from testkit import diffusers_backend as kit
from testkit.deciding import effective as decide_effective
from testkit.shared import RULES

from policyd.backends.diffusers.effective import DiffusersEffective
from policyd.backends.diffusers.tables import CUDA_FLASH_ATTEMPTS
from policyd.catalog.snapshot import Catalog
from policyd.decision.answers import BackendEffect
from policyd.policy.revision import build_revision
from policyd.resources.manifests import parse_inference_service, parse_object

REVISION = build_revision(RULES)


def judged(*flags: str, model: dict[str, Any] | None = None, **runtime: Any) -> BackendEffect[Any]:
    """What takes effect, with the rules' refusal and advisories."""
    catalog = Catalog.of([parse_object(model or kit.model()), parse_object(kit.runtime("rt", *flags, **runtime))])
    isvc = parse_inference_service(kit.isvc(runtime="rt"))
    (out,) = decide_effective(catalog, isvc, REVISION).backends
    return out


def effective(*flags: str, model: dict[str, Any] | None = None, **runtime: Any) -> DiffusersEffective:
    out = judged(*flags, model=model, **runtime).effect
    assert isinstance(out, DiffusersEffective)
    return out


def kwargs(e: DiffusersEffective) -> list[tuple[str, str, str]]:
    return [(k.key, k.value, k.source) for k in e.from_pretrained]


def test_torch_dtype_comes_from_dtype_and_the_load_kwargs_win() -> None:
    assert kwargs(effective()) == [("torch_dtype", "torch.bfloat16", "default (--dtype auto)")]
    assert kwargs(effective("--dtype", "half"))[0] == ("torch_dtype", "torch.float16", "--dtype")
    e = effective("--dtype", "float32", "--diffusers-load-kwargs", '{"torch_dtype": "float16", "variant": "fp16"}')
    assert kwargs(e) == [
        ("torch_dtype", '"float16"', "diffusers_load_kwargs"),
        ("variant", '"fp16"', "diffusers_load_kwargs"),
    ]
    assert e.from_pretrained[0].overrides == "torch.float32 from --dtype"


def test_wan_pipelines_get_boundary_ratio_injected_after_the_load_kwargs() -> None:
    wan = kit.model(pipeline_class="WanPipeline")
    e = effective(
        "--boundary-ratio",
        "0.875",
        "--flow-shift",
        "3",
        "--diffusers-load-kwargs",
        '{"boundary_ratio": 0.5}',
        model=wan,
        entries=[kit.entry("WanPipeline")],
    )
    assert kwargs(e)[-1] == ("boundary_ratio", "0.875", "--boundary-ratio (WanPipeline routines)")
    assert e.from_pretrained[-1].overrides == "0.5 from diffusers_load_kwargs"
    assert e.post_load[0] == "scheduler = UniPCMultistepScheduler.from_config(scheduler.config, flow_shift=3.0)"
    assert not [k for k in kwargs(effective("--boundary-ratio", "0.875")) if k[0] == "boundary_ratio"]


def test_the_quantization_shortcut_translates_fp8_for_the_transformer() -> None:
    e = effective("--quantization-config", '{"method": "fp8"}')
    q = e.quantization
    assert (q.path, q.flag, q.method, q.config, q.components) == (
        "translated",
        "--quantization-config",
        "fp8",
        "Float8DynamicActivationFloat8WeightConfig",
        ("transformer",),
    )
    assert kwargs(e)[-1] == (
        "quantization_config",
        "PipelineQuantizationConfig(quant_mapping={'transformer': TorchAoConfig("
        "quant_type=Float8DynamicActivationFloat8WeightConfig())})",
        "--quantization-config (the quantization shortcut)",
    )


def test_the_load_kwargs_own_quantization_config_wins() -> None:
    native = (
        '{"quantization_config": {"quant_backend": "bitsandbytes_4bit", "components_to_quantize": ["transformer"]}}'
    )
    j = judged("--quantization-config", '{"method": "gguf"}', "--diffusers-load-kwargs", native)
    e = j.effect
    assert e.quantization.path == "native" and j.refusal is None
    assert kwargs(e)[-1][0] == "quantization_config" and kwargs(e)[-1][2] == "diffusers_load_kwargs (Diffusers-native)"


def test_a_refused_quantization_carries_the_backends_message() -> None:
    j = judged("--quantization-config", '{"method": "fp8", "weight_block_size": [128, 128]}')
    e = j.effect
    assert e.quantization.path == "refused"
    assert j.refusal is not None and "weight_block_size" in e.quantization.message
    assert not [k for k in e.from_pretrained if k.key == "quantization_config"]
    assert effective().quantization.path == "none"


def test_the_call_kwargs_merge_order_and_what_request_time_values_shadow() -> None:
    call = '{"num_inference_steps": 30, "max_area": 1024, "output_type": "np", "num_images_per_prompt": 2}'
    e = effective("--diffusers-call-kwargs", call)
    assert e.call_merge_order[0].startswith("diffusers_call_kwargs")
    assert e.call_merge_order[-1] == "output_type, num_*_per_prompt, generator"
    assert [(c.key, c.shadowed) for c in e.call_kwargs] == [
        ("num_inference_steps", "when the request sets it"),
        ("max_area", "never"),
        ("output_type", "always"),
        ("num_images_per_prompt", "always"),
    ]


def test_attention_backends_tried_in_order_then_sdpa() -> None:
    a = effective().attention
    assert (a.requested, a.platform, a.attempts, a.fallback, a.applied) == (
        "",
        "cuda",
        CUDA_FLASH_ATTEMPTS,
        "native",
        True,
    )
    sage = effective("--diffusion-attention-backend", "SAGE_ATTN").attention
    assert sage.attempts == ("sage_hub", "sage", "sage", "sage_varlen")
    rocm = effective(resources={"limits": {"amd.com/gpu": "1"}}).attention
    assert (rocm.platform, rocm.attempts) == ("rocm", ("aiter",))
    assert effective("--diffusion-attention-backend", "CUDNN_ATTN").attention.attempts == ("native",)
    roles = effective("-dac", '{"per_role": {"cross": "SAGE_ATTN"}}').attention
    assert roles.ignored_roles == ("cross",)


def test_a_pipeline_without_a_transformer_gets_no_attention_backend() -> None:
    unet = kit.model(transformer_type="UNet2DConditionModel")
    assert not effective(model=unet).attention.applied


def test_the_refusal_and_advisories_of_the_runtime_are_shown() -> None:
    e = judged("--cache-backend", "tea_cache")
    assert e.refusal is not None and "Cache backend 'tea_cache'" in e.refusal.message
    assert any("natively" in a.message for a in e.advisories)


def test_no_diffusers_section_for_an_engine_without_the_backend() -> None:
    catalog = Catalog.of([parse_object(kit.model()), parse_object(kit.runtime("rt", diffusers=False))])
    isvc = parse_inference_service(kit.isvc(runtime="rt"))
    assert decide_effective(catalog, isvc, REVISION).backends == ()

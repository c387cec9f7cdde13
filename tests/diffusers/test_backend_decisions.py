"""rules/30-diffusers-backend.yaml through the decisions: a runtime the diffusers backend refuses
at start-up is not compatible in Explain (the backend's message in the reason), left out by
Select and listed among the excluded, rejected by Resolve when named; where the backend
degrades silently, an advisory says so."""

from __future__ import annotations

from functools import cache
from typing import Any

import pytest
from testkit import diffusers_backend as kit
from testkit.deciding import explain_isvc, resolve, select
from testkit.shared import RULES

from policyd.catalog.snapshot import Catalog
from policyd.decision.verdicts import RuntimeVerdict
from policyd.policy.revision import Revision, build_revision
from policyd.resources.manifests import parse_inference_service, parse_object


@cache
def revision() -> Revision:
    return build_revision(RULES)


def catalog(*objects: dict[str, Any]) -> Catalog:
    if not any(o["kind"].endswith("BaseModel") for o in objects):
        objects = (kit.model(), *objects)
    return Catalog.of([parse_object(o) for o in objects])  # type: ignore[misc]


def verdict(*objects: dict[str, Any], isvc: dict[str, Any] | None = None, name: str = "rt") -> RuntimeVerdict:
    explained = explain_isvc(catalog(*objects), parse_inference_service(isvc or kit.isvc()), revision())
    return next(e for e in explained.runtimes if e.runtime.meta.name == name)


def reason(e: RuntimeVerdict) -> str:
    return e.reason.message if e.reason else ""


def advice(e: RuntimeVerdict) -> list[str]:
    return [a.message for a in e.advisories]


REFUSALS = [
    (("--cfg-parallel-size", "2"), {}, "CFG parallel is not supported with the diffusers backend."),
    (("--usp", "2"), {}, "Sequence parallel is not supported with the diffusers backend."),
    (("--ring=2",), {}, "Sequence parallel is not supported with the diffusers backend."),
    (("--cache-backend", "mag_cache"), {}, "Cache backend 'mag_cache' is not supported with the diffusers backend."),
    ((), {"DIFFUSION_CACHE_BACKEND": "Cache_DiT"}, "Cache backend 'cache_dit' is not supported"),
    (("--enforce-eager",), {}, "Eager execution is not supported with the diffusers backend."),
    (("--use-hsdp", "--hsdp-shard-size", "2"), {}, "HSDP is not supported with the diffusers adapter load format"),
    (("--max-num-seqs", "4"), {}, "'DiffusersAdapterPipeline' does not support request-level batching."),
    (("--step-execution",), {}, "Step-wise execution is not yet supported with the diffusers backend."),
    (("--diffusion-streaming-output",), {}, "Step-wise execution is not yet supported with the diffusers backend."),
    (("--diffusers-load-kwargs", "[1]"), {}, "'list' object is not a mapping"),
    (("--diffusers-call-kwargs", '"steps"'), {}, "'str' object has no attribute 'items'"),
    (("--diffusers-call-kwargs", "{nope"), {}, "argument --diffusers-call-kwargs: invalid loads value: '{nope'"),
    (("--quantization-config", '{"method": "modelopt"}'), {}, "conversion does not support 'modelopt'."),
    (("-q", "mxfp4"), {}, "conversion does not support 'mxfp4'."),
    (
        ("--quantization-config", '{"method": "fp8", "activation_scheme": "static"}'),
        {},
        "fp8 conversion only supports activation_scheme='dynamic'. Got 'static'.",
    ),
    (
        ("--diffusion-quantization-config", '{"method": "int8", "activation_scheme": "static"}'),
        {},
        "int8 conversion only supports activation_scheme='dynamic'. Got 'static'.",
    ),
    (
        ("--quantization-config", '{"method": "fp8", "weight_block_size": [128, 128]}'),
        {},
        "does not map vLLM weight_block_size to TorchAO.",
    ),
    (
        ("--quantization-config", '{"method": "int8", "ignored_layers": ["proj_out"]}'),
        {},
        "does not map vLLM ignored_layers/modules_to_not_convert names to Diffusers module names.",
    ),
    (
        ("--quantization-config", '{"method": "fp8", "modules_to_not_convert": ["proj_out"]}'),
        {},
        "does not map vLLM ignored_layers/modules_to_not_convert names",
    ),
    (
        ("--quantization-config", '{"method": "fp8", "is_checkpoint_fp8_serialized": true}'),
        {},
        "serialized vLLM fp8 checkpoints are not mapped.",
    ),
    (
        ("--quantization-config", '{"method": "fp8"}', "--diffusers-load-kwargs", '{"dduf_file": "qwen.dduf"}'),
        {},
        "does not support diffusers_load_kwargs.dduf_file yet.",
    ),
    (
        ("--diffusion-attention-backend", "SAGE_ATTN", "--diffusion-attention-config.default.backend", "FLASH_ATTN"),
        {},
        "--diffusion-attention-backend is mutually exclusive with --diffusion-attention-config.default.backend.",
    ),
]


@pytest.mark.parametrize(("flags", "env", "message"), REFUSALS, ids=lambda v: str(v)[:40])
def test_a_setting_the_backend_refuses_makes_the_runtime_incompatible(
    flags: tuple[str, ...], env: dict[str, str], message: str
) -> None:
    e = verdict(kit.runtime("rt", *flags, env=env))
    assert (e.compatible, e.selectable) == (False, False)
    assert message in reason(e)
    assert e.verdict.when_named("block") is not None


@pytest.mark.parametrize(
    "flags",
    [
        ("--quantization-config", '{"method": "fp8"}'),
        ("--quantization-config", '{"method": "int8", "weight_block_size": [128, 128]}'),
        ("--quantization-config", '{"method": "gguf"}', "--diffusers-load-kwargs", '{"quantization_config": {}}'),
        ("--diffusers-load-kwargs", '{"dduf_file": "qwen.dduf"}'),
        ("--diffusers-call-kwargs", '{"num_inference_steps": 30}', "--diffusers-load-kwargs", "null"),
        ("--max-num-seqs", "4", "--enable-distributed-layerwise-offload", "--num-gpus", "2"),
        ("--cache-backend", "none", "--usp", "1", "--cfg-parallel-size", "1"),
    ],
    ids=lambda v: " ".join(v)[:50],
)
def test_settings_the_backend_accepts_keep_the_runtime_compatible(flags: tuple[str, ...]) -> None:
    e = verdict(kit.runtime("rt", *flags))
    assert (e.compatible, e.selectable, reason(e)) == (True, True, "")


def test_a_native_pipeline_takes_what_the_adapter_refuses() -> None:
    e = verdict(kit.runtime("rt", "--cfg-parallel-size", "2", "--cache-backend", "tea_cache", diffusers=False))
    assert e.compatible and e.selectable


def test_kwargs_without_the_diffusers_format_are_refused() -> None:
    e = verdict(kit.runtime("rt", "--diffusers-call-kwargs", '{"num_inference_steps": 30}', diffusers=False))
    assert not e.compatible
    assert "diffusers_load_kwargs and diffusers_call_kwargs are only valid together with" in reason(e)


def test_refusals_come_in_the_order_the_backend_meets_them() -> None:
    e = verdict(kit.runtime("rt", "--max-num-seqs", "2", "--step-execution"))
    assert "Step-wise" in reason(e)  # step-wise execution schedules no request batches
    assert "request-level batching" in reason(verdict(kit.runtime("rt", "--max-num-seqs", "2", "--use-hsdp")))
    assert "HSDP" in reason(verdict(kit.runtime("rt", "--use-hsdp", "--cfg-parallel-size", "2", "--enforce-eager")))
    assert "CFG parallel" in reason(verdict(kit.runtime("rt", "--cfg-parallel-size", "2", "--ring", "2")))


def test_quantization_needs_a_transformer_component_in_the_models_pipeline() -> None:
    unet = kit.model(transformer_type="UNet2DConditionModel", pipeline_class="StableDiffusionPipeline")
    runtime = kit.runtime("rt", "--quantization-config", '{"method": "fp8"}', entries=[kit.entry(None)])
    e = verdict(unet, runtime)
    assert (
        "Found pipeline components: scheduler, text_encoder, tokenizer, unet, vae. Use diffusers_load_kwargs"
        in reason(e)
    )


def test_a_refusal_comes_after_omes_runtime_checks_and_before_the_model_format() -> None:
    other_format = kit.runtime("rt", "--enforce-eager", entries=[{**kit.entry(), "modelFormat": {"name": "onnx"}}])
    assert "Eager execution" in reason(verdict(other_format))


def test_the_inference_services_args_add_flags_to_a_command_line_in_command() -> None:
    runner = {"args": ["--cfg-parallel-size", "2"]}
    e = verdict(kit.runtime("rt"), isvc=kit.isvc(runner=runner))
    assert "CFG parallel" in reason(e)


def test_the_inference_services_command_replaces_the_runtimes() -> None:
    runtime = kit.runtime("rt", "--cfg-parallel-size", "2")
    command = {"command": [*kit.SERVE, *kit.DIFFUSERS]}
    assert verdict(runtime, isvc=kit.isvc(runner=command)).compatible
    assert not verdict(runtime).compatible


def test_the_inference_services_env_reaches_the_backend() -> None:
    runner = {"env": [{"name": "DIFFUSION_CACHE_BACKEND", "value": "tea_cache"}]}
    assert "Cache backend 'tea_cache'" in reason(verdict(kit.runtime("rt"), isvc=kit.isvc(runner=runner)))


def test_select_leaves_out_a_runtime_that_cannot_start_and_lists_it_as_excluded() -> None:
    objects = (kit.runtime("broken", "--enforce-eager"), kit.runtime("works", entries=[kit.entry(priority=1)]))
    result = select(catalog(*objects), parse_inference_service(kit.isvc()), revision())
    assert [e.runtime.meta.name for e in result.ranking] == ["works"]
    alone = select(catalog(kit.runtime("broken", "--enforce-eager")), parse_inference_service(kit.isvc()), revision())
    assert alone.ranking == ()
    assert "Excluded runtimes: broken (the diffusers backend refuses to start: Eager execution" in alone.error


def test_resolve_rejects_a_named_runtime_that_cannot_start() -> None:
    result = resolve(
        catalog(kit.runtime("broken", "--cfg-parallel-size", "2")),
        parse_inference_service(kit.isvc(runtime="broken")),
        revision(),
    )
    assert result.refusal is not None
    assert result.refusal.message.startswith("runtime broken cannot serve model qwen-image: the diffusers backend")
    assert "CFG parallel is not supported with the diffusers backend." in result.refusal.message
    assert (result.refusal.field, result.refusal.kind) == ("spec.runtime.name", "StartupRefusal")


def test_resolve_keeps_omes_warning_for_a_named_runtime_that_only_does_not_declare_support() -> None:
    runtime = kit.runtime("other", entries=[kit.entry("ZImagePipeline")])
    result = resolve(catalog(runtime), parse_inference_service(kit.isvc(runtime="other")), revision())
    assert result.refusal is None and result.runtime is not None
    assert "does not declare support" in result.warning


ADVISORIES = [
    (("--boundary-ratio", "0.875"), "--boundary-ratio applies only to Wan pipelines"),
    (("--flow-shift", "3"), "--flow-shift applies only to Wan pipelines"),
    (
        ("--diffusers-call-kwargs", '{"prompt": "x", "num_images_per_prompt": 2, "eta": 0.5, "guidance_scale": 4}'),
        "request-time values always override these diffusers_call_kwargs, so they never take effect: prompt,"
        " num_images_per_prompt, eta",
    ),
    (
        (
            "--diffusers-call-kwargs",
            '{"num_inference_steps": 30}',
            "--default-sampling-params",
            '{"0": {"num_inference_steps": 50}}',
        ),
        "so they never take effect: num_inference_steps",
    ),
    (("--diffusion-attention-backend", "flash_attn"), "Invalid attention backend: flash_attn. Falling back to SDPA."),
    (("--diffusion-attention-backend", "FLASHINFER_ATTN"), "Invalid attention backend: FLASHINFER_ATTN."),
    (
        ("--diffusion-attention-config", '{"per_role": {"cross": {"backend": "SAGE_ATTN"}}}'),
        "ignores per-role attention settings: cross",
    ),
    ((), "vLLM-Omni implements QwenImagePipeline natively"),
    (
        ("--quantization-config", '{"method": "gguf"}', "--diffusers-load-kwargs", '{"quantization_config": {}}'),
        "Using the Diffusers-native quantization_config from diffusers_load_kwargs.",
    ),
]


@pytest.mark.parametrize(("flags", "message"), ADVISORIES, ids=lambda v: str(v)[:40])
def test_what_the_backend_degrades_silently_is_an_advisory(flags: tuple[str, ...], message: str) -> None:
    e = verdict(kit.runtime("rt", *flags))
    assert e.compatible and e.selectable
    assert any(message in a for a in advice(e)), advice(e)


def test_wan_flags_on_a_wan_pipeline_are_no_advisory() -> None:
    wan = kit.model(pipeline_class="WanPipeline", repo="Wan-AI/Wan2.2-T2V-A14B-Diffusers")
    e = verdict(
        wan, kit.runtime("rt", "--boundary-ratio", "0.875", "--flow-shift", "3", entries=[kit.entry("WanPipeline")])
    )
    assert not [a for a in advice(e) if "applies only to Wan pipelines" in a]


def test_a_model_outside_the_verified_list_is_an_advisory() -> None:
    sd = kit.model("sd", pipeline_class="StableDiffusion3Pipeline", repo="stabilityai/stable-diffusion-3.5-large")
    e = verdict(sd, kit.runtime("rt", entries=[kit.entry("StableDiffusion3Pipeline")]), isvc=kit.isvc(model="sd"))
    assert any("stabilityai/stable-diffusion-3.5-large is not among the models verified" in a for a in advice(e))
    verified = kit.model("wan", pipeline_class="WanImageToVideoPipeline", repo="Wan-AI/Wan2.2-I2V-A14B-Diffusers")
    e = verdict(verified, kit.runtime("rt", entries=[kit.entry("WanImageToVideoPipeline")]), isvc=kit.isvc(model="wan"))
    assert not [a for a in advice(e) if "verified" in a]


def test_the_backend_says_nothing_about_runtimes_that_do_not_run_it() -> None:
    other = kit.runtime("rt", command=["python3", "-m", "sglang.launch_server", "--cfg-parallel-size", "2"])
    e = verdict(other)
    assert e.compatible and advice(e) == []

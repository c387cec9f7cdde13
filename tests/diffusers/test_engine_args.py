"""The engine's vllm serve command line, read as vLLM-Omni's argparse reads it: both flag forms,
switches, aliases, JSON flags (whole or key by key), the env vars the backend reads, and
argparse's own words for what it refuses."""

from __future__ import annotations

from typing import Any

import pytest

from policyd.backends.diffusers.config import BackendConfig, backend_config
from policyd.backends.diffusers.serve_args import parse, serve_tokens
from policyd.semantics.runner_merge import Runner


def config(*tokens: str, env: dict[str, str | None] | None = None, resources: frozenset[str] = frozenset()) -> Any:
    runner = Runner(command=("vllm", "serve", "m", *tokens), env=env or {}, resources=resources)
    out = backend_config(runner)
    assert isinstance(out, BackendConfig)
    return out


@pytest.mark.parametrize(
    "tokens",
    [
        ("--cfg-parallel-size", "2"),
        ("--cfg-parallel-size=2",),
        ("--cfg_parallel_size", "2"),
        ("--cfg-parallel-size", "1", "--cfg-parallel-size", "2"),
    ],
)
def test_a_flag_is_read_in_either_form_and_the_last_occurrence_wins(tokens: tuple[str, ...]) -> None:
    assert config(*tokens).cfg_parallel_size == 2


@pytest.mark.parametrize(
    ("tokens", "size"),
    [
        (("--usp", "2"), 2),
        (("--ulysses-degree=2", "--ring", "2"), 4),
        (("--ring-degree", "3"), 3),
        (("--allgather-degree", "4"), 4),
        ((), 1),
    ],
)
def test_sequence_parallel_size_comes_from_the_aliases(tokens: tuple[str, ...], size: int) -> None:
    assert config(*tokens).sequence_parallel_size == size


def test_switches_take_no_value() -> None:
    on = config("--omni", "--enforce-eager", "--use-hsdp", "--step-execution")
    assert (on.args.omni, on.enforce_eager, on.use_hsdp, on.step_execution) == (True, True, True, True)
    off = config("--omni")
    assert (off.enforce_eager, off.use_hsdp, off.step_execution) == (False, False, False)


def test_streaming_output_turns_on_step_wise_execution() -> None:
    assert config("--diffusion-streaming-output").step_execution


def test_json_flags_are_objects_whole_or_key_by_key() -> None:
    whole = config("--diffusers-load-kwargs", '{"use_safetensors": true}')
    assert whole.load_kwargs == {"use_safetensors": True}
    dotted = config(
        "--diffusers-load-kwargs",
        '{"use_safetensors": true}',
        "--diffusers-load-kwargs.variant",
        "fp16",
        "--diffusers-load-kwargs.quantization_config.quant_backend=bitsandbytes_4bit",
    )
    assert dotted.load_kwargs == {
        "use_safetensors": True,
        "variant": "fp16",
        "quantization_config": {"quant_backend": "bitsandbytes_4bit"},
    }
    assert config().load_kwargs == {} and config().call_kwargs == {}


def test_a_json_null_is_no_kwargs_and_other_json_values_are_kept_as_they_are() -> None:
    assert config("--diffusers-call-kwargs", "null").call_kwargs == {}
    assert config("--diffusers-call-kwargs", "[1, 2]").call_kwargs == [1, 2]


@pytest.mark.parametrize(
    ("tokens", "error"),
    [
        (("--diffusers-load-kwargs", "{bad"), "argument --diffusers-load-kwargs: invalid loads value: '{bad'"),
        (("--cfg-parallel-size", "two"), "argument --cfg-parallel-size: invalid int value: 'two'"),
        (
            ("--diffusion-load-format", "hf"),
            "argument --diffusion-load-format: invalid choice: 'hf' (choose from 'default', 'custom_pipeline', "
            "'dummy', 'diffusers')",
        ),
        (("--cfg-parallel-size",), "argument --cfg-parallel-size: expected one argument"),
        (("--enforce-eager=yes",), "argument --enforce-eager: ignored explicit argument 'yes'"),
    ],
)
def test_argparse_refuses_what_vllm_serve_refuses_in_its_own_words(tokens: tuple[str, ...], error: str) -> None:
    assert parse(["--omni", *tokens]).error == error


def test_flags_of_other_engines_and_positionals_are_ignored() -> None:
    args = parse(["--omni", "--port", "8080", "--served-model-name", "x", "--cfg-parallel-size", "2", "model"])
    assert not args.error and args.values["cfg_parallel_size"] == 2


def test_prefixes_of_flags_are_not_expanded() -> None:
    assert config("--cfg-parallel", "2").cfg_parallel_size == 1


def test_cache_backend_falls_back_to_the_environment() -> None:
    assert (config().cache_backend, config().cache_source) == ("none", "")
    env = {"DIFFUSION_CACHE_ADAPTER": "TEA_CACHE"}
    assert (config(env=env).cache_backend, config(env=env).cache_source) == ("tea_cache", "DIFFUSION_CACHE_ADAPTER")
    both = {"DIFFUSION_CACHE_BACKEND": "cache_dit", "DIFFUSION_CACHE_ADAPTER": "tea_cache"}
    assert config(env=both).cache_backend == "cache_dit"
    assert config("--cache-backend", "none", env=both).cache_backend == "none"


def test_attention_backend_from_the_shorthand_the_config_or_the_environment() -> None:
    assert config("--diffusion-attention-backend", "SAGE_ATTN").attention.backend == "SAGE_ATTN"
    dotted = config("--diffusion-attention-config.default.backend", "TORCH_SDPA")
    assert (dotted.attention.backend, dotted.attention.source) == ("TORCH_SDPA", "--diffusion-attention-config")
    env = config(env={"DIFFUSION_ATTENTION_BACKEND": "FLASH_ATTN"}).attention
    assert (env.backend, env.source) == ("FLASH_ATTN", "DIFFUSION_ATTENTION_BACKEND")
    assert config("--diffusion-attention-backend", "auto").attention.backend is None
    conflict = config("--diffusion-attention-backend", "SAGE_ATTN", "-dac", '{"default": {"backend": "FLASH_ATTN"}}')
    assert conflict.attention.conflict


def test_per_role_attention_roles_are_flattened_as_the_config_does() -> None:
    roles = config(
        "--diffusion-attention-config",
        '{"per_role": {"cross": {"backend": "SAGE_ATTN"}, "ltx2": {"audio_to_video": "FLASH_ATTN"}, "self": "auto"}}',
    ).attention.per_role
    assert roles == ("cross", "ltx2.audio_to_video")


def test_the_quantization_config_comes_from_the_diffusion_flag_first() -> None:
    q = config("--quantization", "int8", "--quantization-config", '{"method": "FP8"}').quantization
    assert (q.flag, q.method) == ("--quantization-config", "fp8")
    q = config("--quantization-config", "fp8", "--diffusion-quantization-config", '{"quant_method": "gguf"}')
    assert (q.quantization.flag, q.quantization.method) == ("--diffusion-quantization-config", "gguf")
    assert config("-q", "fp8").quantization.method == "fp8"
    assert config().quantization is None


def test_the_quantization_options_the_shortcut_checks() -> None:
    q = config(
        "--quantization-config",
        '{"method": "fp8", "activation_scheme": "static", "weight_block_size": [128, 128],'
        ' "ignored_layers": ["proj_out"], "is_checkpoint_fp8_serialized": true}',
    ).quantization
    assert (q.activation_scheme, q.weight_block_size, q.ignored_layers, q.serialized) == ("static", True, True, True)
    plain = config("--quantization-config", '{"method": "int8"}').quantization
    assert (plain.activation_scheme, plain.weight_block_size, plain.ignored_layers, plain.serialized) == (
        "dynamic",
        False,
        False,
        False,
    )


def test_request_batching_over_replicas_with_distributed_offload() -> None:
    dlo = ("--enable-distributed-layerwise-offload", "--max-num-seqs", "4")
    assert config(*dlo, "--num-gpus", "2").dlo_dp_concurrency
    assert not config(*dlo, "--num-gpus", "2", "--dlo-no-use-allgather").dlo_dp_concurrency
    assert not config(*dlo, "--num-gpus", "2", "--cfg-parallel-size", "2").dlo_dp_concurrency
    assert not config(*dlo).dlo_dp_concurrency


def test_the_platform_comes_from_the_runners_accelerator_resources() -> None:
    assert config().platform == "cuda"
    assert config(resources=frozenset({"amd.com/gpu"})).platform == "rocm"


@pytest.mark.parametrize(
    ("command", "args", "found"),
    [
        (["vllm", "serve", "m", "--omni"], [], ["m", "--omni"]),
        (["/usr/local/bin/vllm"], ["serve", "m", "--omni"], ["m", "--omni"]),
        (["python3", "-m", "vllm.entrypoints.cli.main", "serve", "m"], [], ["m"]),
        (["python", "-m", "vllm_omni.entrypoints.cli.main"], ["serve", "m"], ["m"]),
        (
            ["sh", "-c", "exec vllm serve m --omni --cfg-parallel-size 2 && echo done"],
            [],
            ["m", "--omni", "--cfg-parallel-size", "2"],
        ),
        (["/bin/bash", "-c", "pip list; vllm serve 'm x' --omni"], [], ["m x", "--omni"]),
        ([], ["serve", "m", "--omni"], ["m", "--omni"]),
        ([], ["m", "--omni"], ["m", "--omni"]),
        (["python3", "-m", "sglang.launch_server", "--omni"], [], None),
        ([], ["m"], None),
    ],
)
def test_vllm_serve_is_found_directly_through_python_or_a_shell_or_the_image(
    command: list[str], args: list[str], found: list[str] | None
) -> None:
    assert serve_tokens(Runner(command=tuple(command), args=tuple(args))) == found


def test_kubernetes_variable_references_are_filled_in_from_literal_env_values() -> None:
    runner = Runner(
        command=("vllm", "serve", "$(MODEL_PATH)", "--cache-backend", "$(CACHE)", "--flow-shift", "$(SHIFT)"),
        args=("--boundary-ratio=$$(NOT)",),
        env={"CACHE": "tea_cache", "SHIFT": None},
    )
    assert serve_tokens(runner) == [
        "$(MODEL_PATH)",
        "--cache-backend",
        "tea_cache",
        "--flow-shift",
        "$(SHIFT)",
        "--boundary-ratio=$(NOT)",
    ]

"""What a vLLM-Omni engine is configured to do, read from its ``vllm serve`` arguments and
the environment variables the backend reads — OmniDiffusionConfig's view of the command
line (vllm_omni/diffusion/data.py), before the backend checks any of it.

Where the source does not show how the CLI reaches the config, the choices are:
flags reach it only when given (so an env variable applies when its flag is absent, as
``normalize_omni_diffusion_kwargs`` reads it); the quantization config is
``--diffusion-quantization-config``, else ``--quantization-config``, else ``--quantization``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from policyd.backends.diffusers import tables as omni
from policyd.backends.diffusers.serve_args import ServeArgs, serve_args
from policyd.semantics.runner_merge import Runner

CACHE_ENV = ("DIFFUSION_CACHE_BACKEND", "DIFFUSION_CACHE_ADAPTER")
ATTENTION_ENV = "DIFFUSION_ATTENTION_BACKEND"
_QUANT_FLAGS = (
    ("diffusion_quantization_config", "--diffusion-quantization-config"),
    ("quantization_config", "--quantization-config"),
    ("quantization", "--quantization"),
)
_SPEC_KEYS = frozenset({"backend", "skip_softmax", "quant", "block_sparse"})


def _normal_method(value: Any) -> str:
    # quantization_utils._normalize_method_name
    return str(value).lower().replace("-", "_")


@dataclass(frozen=True)
class Quantization:
    """The vLLM-Omni quantization config and what the shortcut checks in it."""

    flag: str
    config: Any  # the JSON object, or a method name
    method: str  # normalised; empty when the config names none
    activation_scheme: str
    weight_block_size: bool
    ignored_layers: bool
    serialized: bool

    @classmethod
    def read(cls, flag: str, config: Any) -> Quantization:
        if not isinstance(config, Mapping):
            return cls(flag, config, _normal_method(config), "dynamic", False, False, False)
        raw = config.get("method", config.get("quant_method"))
        method = _normal_method(raw) if raw is not None else ""
        return cls(
            flag=flag,
            config=config,
            method=method,
            activation_scheme=str(config.get("activation_scheme", "dynamic")),
            weight_block_size=config.get("weight_block_size") is not None,
            ignored_layers=bool(config.get("ignored_layers") or config.get("modules_to_not_convert")),
            serialized=bool(config.get(f"is_checkpoint_{method}_serialized")),
        )


@dataclass(frozen=True)
class Attention:
    """The attention backend settings: the default backend and the per-role ones."""

    backend: str | None  # None: the platform default
    source: str  # the flag or variable that set it, empty for none
    per_role: tuple[str, ...] = ()
    conflict: bool = False  # both the shorthand and the config's default name one


def _spec_backend(spec: Any) -> str | None:
    """An attention spec's backend, None for ``auto`` (AttentionConfig drops those)."""
    backend = spec.get("backend") if isinstance(spec, Mapping) else spec
    if backend is None or str(backend).lower() == "auto":
        return None
    return str(backend)


def _roles(node: Any, path: tuple[str, ...], out: list[str]) -> None:
    # AttentionConfig._flatten_per_role_entry: nested role keys join with dots down to a spec
    if isinstance(node, Mapping) and node and not set(node) & _SPEC_KEYS:
        for key, child in node.items():
            _roles(child, (*path, str(key)), out)
    elif _spec_backend(node) is not None:
        out.append(".".join(path))


def _attention(args: ServeArgs, env: Mapping[str, str | None]) -> Attention:
    config = args.get("diffusion_attention_config")
    config = config if isinstance(config, Mapping) else {}
    default = _spec_backend(config.get("default"))
    roles: list[str] = []
    per_role = config.get("per_role")
    if isinstance(per_role, Mapping):
        for key, child in per_role.items():
            _roles(child, (str(key),), roles)
    shorthand = args.get("diffusion_attention_backend")
    source = "--diffusion-attention-config" if default is not None else ""
    if shorthand is not None and default is not None:
        return Attention(default, source, tuple(roles), conflict=True)
    if shorthand is not None and str(shorthand).lower() != "auto":
        default, source = str(shorthand), "--diffusion-attention-backend"
    if default is None:
        variable = env.get(ATTENTION_ENV)
        if variable and variable.lower() != "auto":
            default, source = variable, ATTENTION_ENV
    return Attention(default, source, tuple(roles))


def _cache_backend(args: ServeArgs, env: Mapping[str, str | None]) -> tuple[str, str]:
    if args.given("cache_backend"):
        return str(args.get("cache_backend")), "--cache-backend"
    for name in CACHE_ENV:
        if value := env.get(name):
            return value.lower(), name
    return "none", ""


def _kwargs(value: Any) -> Any:
    # normalize_omni_diffusion_kwargs: a null becomes an empty object
    return {} if value is None else value


def _sampling_keys(text: Any) -> frozenset[str]:
    """Keys the --default-sampling-params stages set (every request gets them)."""
    try:
        stages = json.loads(text) if isinstance(text, str) else {}
    except json.JSONDecodeError:
        return frozenset()
    if not isinstance(stages, Mapping):
        return frozenset()
    return frozenset(
        str(k) for params in stages.values() if isinstance(params, Mapping) for k, v in params.items() if v is not None
    )


@dataclass(frozen=True)
class BackendConfig:
    """A vllm serve engine as vLLM-Omni will configure it."""

    args: ServeArgs
    platform: str
    load_format: str
    model_class_name: str
    load_kwargs: Any
    call_kwargs: Any
    cfg_parallel_size: int
    sequence_parallel_size: int
    cache_backend: str
    cache_source: str
    enforce_eager: bool
    use_hsdp: bool
    max_num_seqs: int
    dlo_dp_concurrency: bool
    step_execution: bool
    dtype: str
    quantization: Quantization | None
    boundary_ratio: float | None
    flow_shift: float | None
    attention: Attention
    default_sampling_keys: frozenset[str] = field(default_factory=frozenset)

    @property
    def omni(self) -> bool:
        return self.args.omni

    @property
    def diffusers(self) -> bool:
        """The engine runs vLLM-Omni's diffusers backend."""
        return self.args.omni and self.load_format == "diffusers"

    @property
    def native_quantization(self) -> bool:
        """The load kwargs carry their own quantization_config, which wins over the shortcut."""
        return isinstance(self.load_kwargs, Mapping) and "quantization_config" in self.load_kwargs


def _int(args: ServeArgs, dest: str, default: int) -> int:
    value = args.get(dest, default)
    return int(value)


def read(args: ServeArgs, runner: Runner) -> BackendConfig:
    ulysses, ring, allgather = (
        _int(args, "ulysses_degree", 1),
        _int(args, "ring_degree", 1),
        _int(args, "allgather_degree", 1),
    )
    sp = allgather if allgather > 1 else ulysses * ring
    cfg = _int(args, "cfg_parallel_size", 1)
    tp = _int(args, "tensor_parallel_size", 1)
    gpus = args.get("num_gpus")
    # DiffusionParallelConfig.resolve_data_parallel_size: replicas are what the GPUs leave over
    dp = int(gpus) // (tp * sp * cfg) if gpus is not None and tp * sp * cfg > 0 else 1
    quantization = next(
        (Quantization.read(flag, args.get(dest)) for dest, flag in _QUANT_FLAGS if args.given(dest)), None
    )
    cache_backend, cache_source = _cache_backend(args, runner.env)
    step = bool(args.get("step_execution")) or bool(args.get("diffusion_streaming_output"))
    dlo = bool(args.get("enable_distributed_layerwise_offload")) and args.get("dlo_use_allgather", True) is not False
    return BackendConfig(
        args=args,
        platform=omni.platform(runner.resources),
        load_format=str(args.get("diffusion_load_format", "default")),
        model_class_name=str(args.get("model_class_name", omni.ADAPTER_CLASS)),
        load_kwargs=_kwargs(args.get("diffusers_load_kwargs")),
        call_kwargs=_kwargs(args.get("diffusers_call_kwargs")),
        cfg_parallel_size=cfg,
        sequence_parallel_size=sp,
        cache_backend=cache_backend,
        cache_source=cache_source,
        enforce_eager=bool(args.get("enforce_eager")),
        use_hsdp=bool(args.get("use_hsdp")),
        max_num_seqs=max(1, _int(args, "max_num_seqs", 1)),
        dlo_dp_concurrency=dp > 1 and dlo,
        step_execution=step,
        dtype=str(args.get("dtype", "auto")),
        quantization=quantization,
        boundary_ratio=args.get("boundary_ratio"),
        flow_shift=args.get("flow_shift"),
        attention=_attention(args, runner.env),
        default_sampling_keys=_sampling_keys(args.get("default_sampling_params")),
    )


def backend_config(runner: Runner | None) -> BackendConfig | None:
    """The configuration of an engine that runs vllm serve, or None when it does not."""
    args = serve_args(runner)
    if args is None or runner is None:
        return None
    return read(args, runner)

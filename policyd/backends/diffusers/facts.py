"""Facts about vLLM-Omni's diffusers backend: what the engine's merged command line sets
(the runtime's runner with the InferenceService's on top), and how the backend sees the
model. Derivation only describes; rules/30-diffusers-backend.yaml judges. Their fields are
declared in fields.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from policyd.backends import engine
from policyd.backends.diffusers import tables as omni
from policyd.backends.diffusers.config import BackendConfig, backend_config, read
from policyd.backends.diffusers.serve_args import ServeArgs
from policyd.records import Record
from policyd.resources.objects import BaseModel, InferenceService, ServingRuntime
from policyd.semantics.diffusion_model import component_names, hf_repo, pipeline_class
from policyd.semantics.runner_merge import Runner


def _json_type(value: Any) -> str:
    """The Python type name the backend would see for a JSON value."""
    return type(value).__name__


def _shadowed(config: BackendConfig) -> list[str]:
    """Call-kwargs keys that request-time values always override."""
    kwargs = config.call_kwargs
    if not isinstance(kwargs, Mapping):
        return []
    return [k for k in kwargs if omni.call_kwarg_shadow(str(k), config.default_sampling_keys)[0] == omni.ALWAYS]


def _config_facts(config: BackendConfig) -> Record:
    args = config.args
    quant = config.quantization
    load = config.load_kwargs
    attention = config.attention
    return {
        "diffusers_engine_vllm_omni": config.omni,
        "diffusers_engine_args_error": args.error,
        "diffusers_load_format": config.load_format,
        "diffusers_backend": config.diffusers,
        "diffusers_model_class_name": config.model_class_name,
        "diffusers_load_kwargs_given": bool(load),
        "diffusers_call_kwargs_given": bool(config.call_kwargs),
        "diffusers_load_kwargs_type": _json_type(load),
        "diffusers_call_kwargs_type": _json_type(config.call_kwargs),
        "diffusers_cfg_parallel_size": config.cfg_parallel_size,
        "diffusers_sequence_parallel_size": config.sequence_parallel_size,
        "diffusers_cache_backend": config.cache_backend,
        "diffusers_enforce_eager": config.enforce_eager,
        "diffusers_use_hsdp": config.use_hsdp,
        "diffusers_max_num_seqs": config.max_num_seqs,
        "diffusers_dlo_dp_concurrency": config.dlo_dp_concurrency,
        "diffusers_step_execution": config.step_execution,
        "diffusers_quantization_set": quant is not None,
        "diffusers_quantization_flag": quant.flag if quant else "",
        "diffusers_native_quantization": config.native_quantization,
        "diffusers_quant_method": quant.method if quant else "",
        "diffusers_quant_torchao": omni.TORCHAO_CONFIGS.get(quant.method, "") if quant else "",
        "diffusers_quant_serialized": quant.serialized if quant else False,
        "diffusers_quant_activation_scheme": quant.activation_scheme if quant else "",
        "diffusers_quant_weight_block_size": quant.weight_block_size if quant else False,
        "diffusers_quant_ignored_layers": quant.ignored_layers if quant else False,
        "diffusers_dduf_file": isinstance(load, Mapping) and bool(load.get("dduf_file")),
        "diffusers_boundary_ratio_set": config.boundary_ratio is not None,
        "diffusers_flow_shift_set": config.flow_shift is not None,
        "diffusers_call_kwargs_shadowed": ", ".join(_shadowed(config)),
        "diffusers_attention_backend": attention.backend or "",
        "diffusers_attention_mapped": omni.attention_mapped(attention.backend),
        "diffusers_attention_per_role": ", ".join(attention.per_role),
        "diffusers_attention_conflict": attention.conflict,
    }


# an engine that does not run vllm serve: as vllm serve without a flag
NO_ENGINE: Record = _config_facts(read(ServeArgs(omni=False), Runner()))


def model_facts(model: BaseModel) -> Record:
    """How the backend sees the model, beyond what every diffusion backend does (the core's
    model_pipeline_* and model_hf_repo facts)."""
    cls = pipeline_class(model)
    repo = hf_repo(model)
    return {
        "diffusers_model_pipeline_native": cls in omni.NATIVE_PIPELINES,
        "diffusers_model_pipeline_wan": cls in omni.WAN_PIPELINES,
        "diffusers_model_has_transformer": any(n in omni.TRANSFORMER_COMPONENTS for n in component_names(model)),
        "diffusers_model_verified": omni.verified(repo) if repo else False,
    }


def config_for(runtime: ServingRuntime, isvc: InferenceService | None) -> BackendConfig | None:
    """The backend configuration of the runtime's engine as the InferenceService runs it."""
    return backend_config(engine.runner(runtime, isvc))


def engine_facts(runtime: ServingRuntime, isvc: InferenceService | None) -> Record:
    """Facts of the runtime's engine command line as the InferenceService runs it."""
    config = config_for(runtime, isvc)
    return NO_ENGINE if config is None else _config_facts(config)

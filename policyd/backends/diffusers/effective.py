"""What takes effect in a diffusers-backend engine: the final ``from_pretrained`` kwargs and
where each came from, the call-kwargs merge order and the keys request-time values shadow,
the quantization path, and the attention backends the adapter will try — computed as the
adapter does (pipeline_diffusers_adapter.py load_weights, _build_call_kwargs,
_set_attention_backend). Pure; the rules' refusal of the runtime says whether the quantization
shortcut is refused (the decision layer attaches the refusal and the advisories themselves).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from policyd.backends.diffusers import tables as omni
from policyd.backends.diffusers.config import BackendConfig
from policyd.backends.interface import Judged
from policyd.resources.objects import BaseModel
from policyd.semantics.diffusion_model import component_names, pipeline_class

QUANTIZATION_COMPONENT = "quantization_config"  # the rules' component for every quantization refusal
CALL_MERGE_ORDER = (
    "diffusers_call_kwargs (--diffusers-call-kwargs), keys the pipeline's __call__ accepts",
    "the request's inputs: prompt, negative_prompt, multi-modal data",
    "the request's sampling parameters that are set (not null)",
    "output_type, num_*_per_prompt, generator",
)


@dataclass(frozen=True)
class Kwarg:
    key: str
    value: str  # JSON text, or a Python name for what the adapter builds
    source: str
    overrides: str = ""  # the value and source it replaced


@dataclass(frozen=True)
class CallKwarg:
    key: str
    value: str
    shadowed: str  # always | when the request sets it | never
    shadowed_by: str


@dataclass(frozen=True)
class QuantizationPath:
    path: str  # none | native | translated | refused | unknown
    flag: str = ""
    method: str = ""
    config: str = ""
    components: tuple[str, ...] = ()
    message: str = ""


@dataclass(frozen=True)
class AttentionPlan:
    requested: str
    source: str
    platform: str
    attempts: tuple[str, ...]
    fallback: str
    ignored_roles: tuple[str, ...]
    applied: bool  # False: the pipeline has no transformer, so the adapter sets no backend


@dataclass(frozen=True)
class DiffusersEffective:
    pipeline_class: str
    from_pretrained: tuple[Kwarg, ...]
    call_kwargs: tuple[CallKwarg, ...]
    quantization: QuantizationPath
    attention: AttentionPlan
    post_load: tuple[str, ...]
    call_merge_order: tuple[str, ...] = CALL_MERGE_ORDER


def _text(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _from_pretrained(config: BackendConfig, model: BaseModel | None, quant: QuantizationPath) -> tuple[Kwarg, ...]:
    dtype = omni.DTYPES.get(config.dtype.lower(), "bfloat16")
    given = config.args.given("dtype")
    kwargs = {"torch_dtype": Kwarg("torch_dtype", f"torch.{dtype}", "--dtype" if given else "default (--dtype auto)")}

    def put(kwarg: Kwarg) -> None:
        before = kwargs.get(kwarg.key)
        replaced = f"{before.value} from {before.source}" if before else ""
        kwargs[kwarg.key] = Kwarg(kwarg.key, kwarg.value, kwarg.source, replaced)

    load = config.load_kwargs if isinstance(config.load_kwargs, Mapping) else {}
    for key, value in load.items():
        if key == "quantization_config" and isinstance(value, Mapping):
            put(Kwarg(key, f"PipelineQuantizationConfig(**{_text(value)})", "diffusers_load_kwargs (Diffusers-native)"))
        else:
            put(Kwarg(str(key), _text(value), "diffusers_load_kwargs"))
    pipeline = pipeline_class(model) if model else ""
    if pipeline in omni.WAN_PIPELINES and config.boundary_ratio is not None:
        put(Kwarg("boundary_ratio", _text(config.boundary_ratio), f"--boundary-ratio ({pipeline} routines)"))
    if quant.path == "translated":
        mapping = ", ".join(f"{c!r}: TorchAoConfig(quant_type={quant.config}())" for c in quant.components)
        source = f"{quant.flag} (the quantization shortcut)"
        put(Kwarg("quantization_config", f"PipelineQuantizationConfig(quant_mapping={{{mapping}}})", source))
    return tuple(kwargs.values())


def _call_kwargs(config: BackendConfig) -> tuple[CallKwarg, ...]:
    kwargs = config.call_kwargs if isinstance(config.call_kwargs, Mapping) else {}
    out = []
    for key, value in kwargs.items():
        shadowed, by = omni.call_kwarg_shadow(str(key), config.default_sampling_keys)
        out.append(CallKwarg(str(key), _text(value), shadowed, by))
    return tuple(out)


def _quantization(config: BackendConfig, model: BaseModel | None, refusal: Judged | None) -> QuantizationPath:
    quant = config.quantization
    if config.native_quantization:
        return QuantizationPath(
            "native",
            flag=quant.flag if quant else "",
            method=quant.method if quant else "",
            config="PipelineQuantizationConfig from diffusers_load_kwargs.quantization_config",
        )
    if quant is None:
        return QuantizationPath("none")
    if refusal is not None and refusal.component == QUANTIZATION_COMPONENT:
        return QuantizationPath("refused", quant.flag, quant.method, message=refusal.message)
    torchao = omni.TORCHAO_CONFIGS.get(quant.method, "")
    if not quant.method:
        return QuantizationPath("unknown", quant.flag)
    if not torchao:
        return QuantizationPath("refused", quant.flag, quant.method)
    names = component_names(model) if model else ()
    components = tuple(n for n in names if n in omni.TRANSFORMER_COMPONENTS)
    return QuantizationPath("translated", quant.flag, quant.method, torchao, components)


def _attention(config: BackendConfig, model: BaseModel | None) -> AttentionPlan:
    attention = config.attention
    names = component_names(model) if model and model.pipeline is not None else None
    return AttentionPlan(
        requested=attention.backend or "",
        source=attention.source,
        platform=config.platform,
        attempts=omni.attention_attempts(attention.backend, config.platform),
        fallback=omni.SDPA,
        ignored_roles=attention.per_role,
        applied=names is None or "transformer" in names,
    )


def _post_load(config: BackendConfig, pipeline: str) -> tuple[str, ...]:
    if pipeline not in omni.WAN_PIPELINES:
        return ()
    out = []
    if config.flow_shift is not None:
        out.append(f"scheduler = UniPCMultistepScheduler.from_config(scheduler.config, flow_shift={config.flow_shift})")
    out.append("requests that set boundary_ratio or flow_shift are refused (they are load-time settings)")
    return tuple(out)


def backend_effective(config: BackendConfig, model: BaseModel | None, refusal: Judged | None) -> DiffusersEffective:
    """``refusal``: why the backend would not start (the runtime's first check that refuses it when named)."""
    quant = _quantization(config, model, refusal)
    pipeline = pipeline_class(model) if model else ""
    return DiffusersEffective(
        pipeline_class=pipeline,
        from_pretrained=_from_pretrained(config, model, quant),
        call_kwargs=_call_kwargs(config),
        quantization=quant,
        attention=_attention(config, model),
        post_load=_post_load(config, pipeline),
    )

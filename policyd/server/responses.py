"""Domain results into contract messages."""

from __future__ import annotations

from policyd.contract import policy_pb2 as pb
from policyd.decision.admission import Rejection
from policyd.decision.diffusers_effective import DiffusersEffective
from policyd.decision.evaluation import Reason, RuntimeEvaluation
from policyd.resources.proto import manifest_to_message


def reason(value: Reason | None) -> pb.Reason | None:
    if value is None:
        return None
    return pb.Reason(
        rule_id=value.rule_id,
        effect=value.effect,
        component=value.component,
        model_value=value.model_value,
        runtime_value=value.runtime_value,
        message=value.message,
        entry_index=value.entry_index,
    )


def verdict(e: RuntimeEvaluation) -> pb.RuntimeVerdict:
    return pb.RuntimeVerdict(
        name=e.runtime.meta.name,
        kind=e.runtime.kind,
        namespace=e.runtime.meta.namespace,
        selectable=e.selectable,
        compatible=e.compatible,
        score=e.score,
        reason=reason(e.reason),
        entry_index=e.entry_index,
        advisories=[r for a in e.advisories if (r := reason(a)) is not None],
    )


def ranked(e: RuntimeEvaluation) -> pb.RankedRuntime:
    out = pb.RankedRuntime(
        name=e.runtime.meta.name,
        kind=e.runtime.kind,
        namespace=e.runtime.meta.namespace,
        score=e.score,
        entry_index=e.entry_index,
    )
    formats = (e.runtime.raw.get("spec") or {}).get("supportedModelFormats") or []
    if 0 <= e.entry_index < len(formats) and isinstance(formats[e.entry_index], dict):
        manifest_to_message(formats[e.entry_index], out.entry)
    return out


def rejection(value: Rejection | None) -> pb.Rejection | None:
    if value is None:
        return None
    return pb.Rejection(
        message=value.message,
        field=value.field,
        condition_reason=value.condition_reason,
        condition_message=value.condition_message,
        component=value.component,
    )


def diffusers_backend(value: DiffusersEffective | None) -> pb.DiffusersBackend | None:
    if value is None:
        return None
    quant, attention = value.quantization, value.attention
    return pb.DiffusersBackend(
        pipeline_class=value.pipeline_class,
        from_pretrained=[
            pb.BackendKwarg(key=k.key, value=k.value, source=k.source, overrides=k.overrides)
            for k in value.from_pretrained
        ],
        call_merge_order=list(value.call_merge_order),
        call_kwargs=[
            pb.CallKwarg(key=c.key, value=c.value, shadowed=c.shadowed, shadowed_by=c.shadowed_by)
            for c in value.call_kwargs
        ],
        quantization=pb.DiffusersQuantization(
            path=quant.path,
            flag=quant.flag,
            method=quant.method,
            config=quant.config,
            components=list(quant.components),
            message=quant.message,
        ),
        attention=pb.DiffusersAttention(
            requested=attention.requested,
            source=attention.source,
            platform=attention.platform,
            attempts=list(attention.attempts),
            fallback=attention.fallback,
            ignored_roles=list(attention.ignored_roles),
            applied=attention.applied,
        ),
        post_load=list(value.post_load),
        refusal=reason(value.refusal),
        advisories=[r for a in value.advisories if (r := reason(a)) is not None],
    )

"""What takes effect in a diffusers-backend engine, as the contract's DiffusersBackend carries it."""

from __future__ import annotations

from collections.abc import Sequence

from policyd.backends.diffusers.effective import DiffusersEffective
from policyd.contract import policy_pb2 as pb


def message(
    value: DiffusersEffective, refusal: pb.Reason | None, advisories: Sequence[pb.Reason]
) -> pb.DiffusersBackend:
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
        refusal=refusal,
        advisories=advisories,
    )

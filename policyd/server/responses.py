"""Domain results into contract messages."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from google.protobuf.message import Message

from policyd.contract import policy_pb2 as pb
from policyd.contract import resources_pb2 as rpb
from policyd.decision.diffusers_effective import DiffusersEffective
from policyd.decision.verdicts import Reason, Refusal, RuntimeVerdict
from policyd.resources.objects import Entry, Pipeline, PipelineComponent, ServingRuntime, VersionedName
from policyd.resources.proto import manifest_to_message
from policyd.server import limits

M = TypeVar("M", bound=Message)


@dataclass(frozen=True)
class Encoded(Generic[M]):
    """A response as the wire carries it: the server's Gate sends the bytes as they are, so a
    large answer (and a cached one) is not decoded into a message only to be encoded again."""

    kind: type[M]
    data: bytes

    def message(self) -> M:
        return self.kind.FromString(self.data)


def encode(message: M) -> Encoded[M]:
    return Encoded(type(message), message.SerializeToString())


def encoded(
    head: M, items: str, rows: Sequence[tuple[ServingRuntime, RuntimeVerdict]], omitted: str, more: bytes = b""
) -> Encoded[M]:
    """``head`` (a response without its repeated verdicts), ``more`` of its fields already
    encoded, and the verdict ``rows`` in its field ``items``, the last of them left out and
    counted in ``omitted`` as far as it takes to keep the answer within RESPONSE_BUDGET bytes.
    Fields in any order are one message to a reader."""
    number = head.DESCRIPTOR.fields_by_name[items].number
    tag = _varint(number << 3 | 2)  # length-delimited
    room = limits.RESPONSE_BUDGET - head.ByteSize() - len(more) - 16  # the count, when set
    parts, left_out = _rows(tag, rows, room)
    if left_out:
        setattr(head, omitted, left_out)
    return Encoded(type(head), b"".join([head.SerializeToString(), more, *parts]))  # one copy of a large answer


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
        kind=value.kind,
        parts=[p for part in value.parts if (p := reason(part)) is not None],
    )


def _varint(n: int) -> bytes:
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


_LENGTHS = [_varint(n) for n in range(1 << 14)]  # the length prefixes of rows up to 16 kB


def _length(n: int) -> bytes:
    """The length prefix of a field of ``n`` bytes (``_rows`` inlines it: the loop is a large answer's cost)."""
    return _LENGTHS[n] if n < len(_LENGTHS) else _varint(n)


_IDENTITY: dict[str, bytes] = {}  # by the runtime's digest (its name, kind and namespace among its content)
_IDENTITY_LIMIT = 200_000


def _identity(runtime: ServingRuntime) -> bytes:
    key = runtime.digest
    found = _IDENTITY.get(key)
    if found is None:
        if len(_IDENTITY) >= _IDENTITY_LIMIT:
            _IDENTITY.clear()
        found = _IDENTITY[key] = pb.RuntimeVerdict(
            name=runtime.meta.name, kind=runtime.kind, namespace=runtime.meta.namespace
        ).SerializeToString()
    return found


def _judged(e: RuntimeVerdict) -> bytes:
    """The encoded fields after the runtime's identity; a shared verdict's are encoded once."""
    if e.shared is not None and e.shared.wire is not None:
        return e.shared.wire
    message = verdict(e)
    message.ClearField("name")
    message.ClearField("kind")
    message.ClearField("namespace")
    wire = message.SerializeToString()
    if e.shared is not None:
        e.shared.wire = wire
    return wire


def _rows(tag: bytes, rows: Sequence[tuple[ServingRuntime, RuntimeVerdict]], room: int) -> tuple[list[bytes], int]:
    """The encoded parts of repeated RuntimeVerdict field ``tag`` holding each runtime's
    verdict: the runtime's identity (fields 1-3), then the verdict's other fields, encoded once
    for all the runtimes a shared verdict stands for — in field order, as the message itself
    would encode; and how many of the last rows were left out to keep within ``room`` bytes."""
    identities, lengths = _IDENTITY, _LENGTHS
    parts: list[bytes] = []
    total = 0
    for n, (runtime, e) in enumerate(rows):
        ident = identities.get(runtime.digest) or _identity(runtime)
        shared = e.shared
        tail = shared.wire if shared is not None and shared.wire is not None else _judged(e)
        size = len(ident) + len(tail)
        prefix = lengths[size] if size < len(lengths) else _varint(size)
        total += len(tag) + len(prefix) + size
        if total > room:
            return parts, len(rows) - n
        parts += (tag, prefix, ident, tail)
    return parts, 0


def excluded_rows(verdicts: Sequence[RuntimeVerdict]) -> list[tuple[ServingRuntime, RuntimeVerdict]]:
    return [(e.runtime, e) for e in verdicts]


def verdict(e: RuntimeVerdict) -> pb.RuntimeVerdict:
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


def _name(value: VersionedName) -> rpb.VersionedName:
    return rpb.VersionedName(
        name=value.name,
        version=value.version,
        operator=value.operator,
        weight=value.weight if value.weight_set else None,
    )


def _component(value: PipelineComponent) -> rpb.DiffusionComponent:
    return rpb.DiffusionComponent(library=value.library or "", type=value.type or "")


def _pipeline(value: Pipeline) -> rpb.DiffusionPipeline:
    out = rpb.DiffusionPipeline(class_name=value.class_name or "")
    for name, component in value.components.items():
        getattr(out, "text_encoder" if name == "textEncoder" else name).CopyFrom(_component(component))
    for key, component in value.additional.items():
        out.additional_components[key].CopyFrom(_component(component))
    return out


def entry(value: Entry) -> rpb.SupportedModelFormat:
    out = rpb.SupportedModelFormat(
        model_format=_name(value.format),
        model_framework=_name(value.framework),
        model_architecture=value.architecture,
        quantization=value.quantization,
        auto_select=value.auto_select,
        priority=value.priority,
    )
    if value.pipeline is not None:
        out.diffusion_pipeline.CopyFrom(_pipeline(value.pipeline))
    for accelerator, config in value.accelerator_config.items():
        manifest_to_message(config, out.accelerator_config[accelerator])
    return out


_RANKING_TAG = _varint(pb.SelectResponse.DESCRIPTOR.fields_by_name["ranking"].number << 3 | 2)


def ranking(verdicts: Sequence[RuntimeVerdict]) -> bytes:
    """SelectResponse.ranking, encoded: each runtime's identity (fields 1-3, as a
    RuntimeVerdict's), then the rest of its RankedRuntime."""
    parts: list[bytes] = []
    for e in verdicts:
        row = _identity(e.runtime) + _ranked_tail(e)
        parts += (_RANKING_TAG, _length(len(row)), row)
    return b"".join(parts)


def _ranked_tail(e: RuntimeVerdict) -> bytes:
    """A ranked runtime's fields after its identity, encoded once for a shared verdict and
    each shape of runtime it stands for (verdicts that say the same are shared across shapes,
    whose entries differ)."""
    shared, runtime = e.shared, e.runtime
    if shared is not None and shared.ranked is not None:
        tail = shared.ranked.get(runtime.shape)
        if tail is not None:
            return tail
    out = pb.RankedRuntime(score=e.score, entry_index=e.entry_index)
    if 0 <= e.entry_index < len(runtime.entries):
        out.entry.CopyFrom(entry(runtime.entries[e.entry_index]))
    tail = out.SerializeToString()
    if shared is not None:
        if shared.ranked is None:
            shared.ranked = {}
        shared.ranked[runtime.shape] = tail
    return tail


def rejection(value: Refusal | None) -> pb.Rejection | None:
    if value is None:
        return None
    return pb.Rejection(
        message=value.message,
        field=value.field,
        condition_reason=value.condition_reason,
        condition_message=value.condition_message,
        kind=value.kind,
        rule_id=value.rule_id,
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

"""Domain results into contract messages, plainly: one value, one message. Answers with many
rows are encoded from these by server/wire.py."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from policyd.contract import policy_pb2 as pb
from policyd.contract import resources_pb2 as rpb
from policyd.decision.answers import BackendEffect
from policyd.decision.verdicts import RuntimeVerdict, Verdict
from policyd.policy.outcomes import Reason, Refusal
from policyd.resources.objects import Entry, Pipeline, PipelineComponent, VersionedName
from policyd.resources.proto import manifest_to_message


def reason(value: Reason | None, full: bool = True) -> pb.Reason | None:
    """``value`` as the contract has it; without the reasons a group combined unless ``full``."""
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
        parts=[p for part in value.parts if (p := reason(part)) is not None] if full else [],
    )


def verdict(e: RuntimeVerdict, full: bool = True) -> pb.RuntimeVerdict:
    """``e`` as the contract has it; its reasons without the reasons a group combined unless ``full``."""
    out = said(e.verdict, full)
    out.name, out.kind, out.namespace = e.runtime.meta.name, e.runtime.kind, e.runtime.meta.namespace
    return out


def said(v: Verdict, full: bool) -> pb.RuntimeVerdict:
    """What a verdict says, as a RuntimeVerdict without the runtime's identity."""
    return pb.RuntimeVerdict(
        selectable=v.selectable,
        compatible=v.compatible,
        score=v.score,
        reason=reason(v.reason, full),
        entry_index=v.entry_index,
        advisories=[r for a in v.advisories if (r := reason(a, full)) is not None],
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


def ranked_tail(e: RuntimeVerdict) -> pb.RankedRuntime:
    """What a RankedRuntime says beyond its runtime's identity (name, kind, namespace): read from
    the verdict and the runtime's entries alone, which every runtime of its shape has — so the
    wire keeps its encoding by the verdict and the shape (tests/server/test_wire.py holds every
    field to that)."""
    out = pb.RankedRuntime(score=e.score, entry_index=e.entry_index)
    if 0 <= e.entry_index < len(e.runtime.entries):
        out.entry.CopyFrom(entry(e.runtime.entries[e.entry_index]))
    return out


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


def put_backends(answer: pb.EffectiveResponse | pb.DecideResponse, effects: Sequence[BackendEffect[Any]]) -> None:
    """Each backend's section of an Effective or Decide answer, in the field of its EngineBackends
    the backend names."""
    for e in effects:
        advisories = [r for a in e.advisories if (r := reason(a)) is not None]
        section = e.backend.encode(e.effect, reason(e.refusal), advisories)
        getattr(answer.backends, e.backend.section).CopyFrom(section)

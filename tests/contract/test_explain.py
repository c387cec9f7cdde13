"""Explain: every runtime in scope with its verdict and first reason, for an InferenceService or a model."""

from __future__ import annotations

from policyd.contract import policy_pb2 as pb
from policyd.contract import resources_pb2 as rpb

from .support import (
    MODEL_NAME,
    NAMESPACE,
    RUNTIME_70B,
    RUNTIME_NAME,
    Harness,
    assert_invalid,
    isvc_manifest,
    isvc_text,
    isvc_typed,
    manifest_catalog,
    model_manifest,
    runtime_manifest,
    typed_catalog,
)

FORMAT = "mt:safetensors:1.0.0:LlamaForCausalLM:transformers:4.45.0.dev0"


def _model_subject(name: str = MODEL_NAME, namespace: str = NAMESPACE, kind: str = "") -> pb.ModelSubject:
    return pb.ModelSubject(model=rpb.ModelRef(name=name, kind=kind), namespace=namespace)


def test_typed_request_explains_every_runtime_in_scope(harness: Harness) -> None:
    reply = harness.ok("Explain", pb.ExplainRequest(inference_service=isvc_typed(), catalog=typed_catalog()))
    assert reply.model_name == MODEL_NAME
    assert reply.model_format == FORMAT
    verdicts = {v.name: v for v in reply.runtimes}
    assert list(verdicts) == [RUNTIME_NAME, RUNTIME_70B]  # namespace runtimes first
    ours = verdicts[RUNTIME_NAME]
    assert (ours.kind, ours.namespace, ours.selectable, ours.compatible, ours.score) == (
        "ServingRuntime",
        NAMESPACE,
        True,
        True,
        2,
    )
    assert not ours.HasField("reason")
    big = verdicts[RUNTIME_70B]
    assert (big.kind, big.selectable, big.compatible) == ("ClusterServingRuntime", False, False)
    # the formats are checked before the size range, and the group's reason carries each mismatch
    assert (big.reason.rule_id, big.reason.kind) == ("supported-formats", "Advisory")
    assert big.reason.message.endswith("framework version mismatch (model=4.45.0.dev0, runtime=4.47.0.dev0)")
    assert not big.reason.parts  # the basic view: the group's message holds them


def _explained(harness: Harness, view: pb.VerdictView.ValueType) -> pb.ExplainResponse:
    reply: pb.ExplainResponse = harness.ok(
        "Explain", pb.ExplainRequest(inference_service=isvc_typed(), catalog=typed_catalog(), view=view)
    )
    return reply


def test_the_full_view_also_carries_the_reasons_a_group_combined(harness: Harness) -> None:
    full = _explained(harness, pb.VERDICT_VIEW_FULL)
    big = full.runtimes[1]
    (part,) = big.reason.parts
    assert (part.rule_id, part.model_value, part.runtime_value) == (
        "framework-version-mismatch",
        "4.45.0.dev0",
        "4.47.0.dev0",
    )
    assert big.reason.message.endswith(part.message)
    # the basic view (the default) is the same answer without them
    for view in (pb.VERDICT_VIEW_UNSPECIFIED, pb.VERDICT_VIEW_BASIC):
        basic = _explained(harness, view)
        del big.reason.parts[:]
        assert basic == full


def test_an_unknown_view_names_the_field(harness: Harness) -> None:
    request = pb.ExplainRequest(inference_service=isvc_typed(), catalog=typed_catalog(), view=7)  # type: ignore[arg-type]
    assert_invalid(harness.call("Explain", request), "view")


def test_typed_and_manifest_requests_give_the_same_decision(harness: Harness) -> None:
    typed = harness.ok("Explain", pb.ExplainRequest(inference_service=isvc_typed(), catalog=typed_catalog()))
    text = harness.ok(
        "Explain", pb.ExplainRequest(inference_service=isvc_text(isvc_manifest()), catalog=manifest_catalog())
    )
    assert len(typed.runtimes) == 2
    assert typed == text


def test_model_subject_explains_like_kubectl_ome_runtime_explain_model(harness: Harness) -> None:
    reply = harness.ok("Explain", pb.ExplainRequest(model=_model_subject(), catalog=typed_catalog()))
    assert reply.model_name == MODEL_NAME
    assert [(v.name, v.selectable, v.compatible) for v in reply.runtimes] == [
        (RUNTIME_NAME, True, True),
        (RUNTIME_70B, False, False),
    ]
    elsewhere = harness.ok(
        "Explain", pb.ExplainRequest(model=_model_subject(namespace="default"), catalog=typed_catalog())
    )
    assert [v.name for v in elsewhere.runtimes] == [RUNTIME_70B]  # the ServingRuntime is not in scope there


def test_response_names_the_revisions(harness: Harness, revision: str) -> None:
    reply = harness.ok("Explain", pb.ExplainRequest(model=_model_subject(), catalog=manifest_catalog()))
    assert reply.revisions.rules_revision == revision
    assert reply.revisions.catalog_revision


def test_empty_request_names_the_subject(harness: Harness) -> None:
    assert_invalid(harness.call("Explain", pb.ExplainRequest()), "subject")


def test_model_subject_without_a_name(harness: Harness) -> None:
    result = harness.call("Explain", pb.ExplainRequest(model=_model_subject(name=""), catalog=manifest_catalog()))
    assert_invalid(result, "model.model.name")


def test_model_subject_of_unknown_kind(harness: Harness) -> None:
    result = harness.call("Explain", pb.ExplainRequest(model=_model_subject(kind="Foo"), catalog=manifest_catalog()))
    assert_invalid(result, "model.model.kind")


def test_model_subject_not_in_catalog_names_the_request_field(harness: Harness) -> None:
    # The request field is ExplainRequest.model (a ModelSubject) .model (a ModelRef) .name, as for the
    # two checks above; the daemon names it "model.name", which is no field of the request.
    result = harness.call("Explain", pb.ExplainRequest(model=_model_subject(name="nope"), catalog=manifest_catalog()))
    assert_invalid(result, "model.model.name")


def test_isvc_model_not_in_catalog(harness: Harness) -> None:
    doc = isvc_manifest(model={"name": "nope"})
    result = harness.call("Explain", pb.ExplainRequest(inference_service=isvc_text(doc), catalog=manifest_catalog()))
    assert_invalid(result, "spec.model.name", "inference_service.spec.model.name")


def test_a_runtime_field_ome_reads_otherwise_is_explained_with_what_ome_does_with_it(harness: Harness) -> None:
    runtime = runtime_manifest()
    runtime["spec"]["modelSizeRange"] = {"min": "2b", "max": "4B"}
    catalog = manifest_catalog(model_manifest(), runtime)
    reply = harness.ok("Explain", pb.ExplainRequest(inference_service=isvc_text(isvc_manifest()), catalog=catalog))
    (verdict,) = reply.runtimes
    assert (verdict.name, verdict.selectable) == (RUNTIME_NAME, True)  # 3B is in [0, 4B], as OME reads it
    assert [(a.rule_id, a.message) for a in verdict.advisories] == [
        ("runtime-read-as-ome-reads", "spec.modelSizeRange.min: '2b' is not a size OME reads; it counts as 0")
    ]

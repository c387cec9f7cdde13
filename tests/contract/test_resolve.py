"""Resolve: the runtime an InferenceService names, with admission warnings, advisory events and rejections."""

from __future__ import annotations

import grpc

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
    typed_catalog,
)

OURS = rpb.RuntimeRef(name=RUNTIME_NAME, kind="ServingRuntime")
BIG = rpb.RuntimeRef(name=RUNTIME_70B)


def test_typed_request_resolves_the_named_runtime(harness: Harness) -> None:
    reply = harness.ok("Resolve", pb.ResolveRequest(inference_service=isvc_typed(OURS), catalog=typed_catalog()))
    assert (reply.runtime, reply.runtime_kind, reply.runtime_namespace) == (RUNTIME_NAME, "ServingRuntime", NAMESPACE)
    assert reply.compatible is True
    assert reply.entry_index == 0
    assert reply.warning == ""
    assert reply.event == ""
    assert not reply.HasField("rejection")


def test_named_runtime_without_support_is_admitted_with_a_warning_and_an_event(harness: Harness) -> None:
    reply = harness.ok("Resolve", pb.ResolveRequest(inference_service=isvc_typed(BIG), catalog=typed_catalog()))
    assert (reply.runtime, reply.runtime_kind) == (RUNTIME_70B, "ClusterServingRuntime")
    assert reply.compatible is False
    assert reply.reason.rule_id == "supported-formats"
    assert reply.event_reason == "RuntimeCompatibilityAdvisory"
    assert reply.warning.startswith(f'runtime "{RUNTIME_70B}" does not declare support for model "{MODEL_NAME}"')
    assert reply.event.startswith(f"Runtime {RUNTIME_70B} does not declare support for model {MODEL_NAME}")
    assert not reply.HasField("rejection")


def test_typed_and_manifest_requests_give_the_same_decision(harness: Harness) -> None:
    for ref, doc_ref in ((OURS, {"name": RUNTIME_NAME, "kind": "ServingRuntime"}), (BIG, {"name": RUNTIME_70B})):
        typed = harness.ok("Resolve", pb.ResolveRequest(inference_service=isvc_typed(ref), catalog=typed_catalog()))
        text = harness.ok(
            "Resolve",
            pb.ResolveRequest(inference_service=isvc_text(isvc_manifest(runtime=doc_ref)), catalog=manifest_catalog()),
        )
        assert typed.runtime == ref.name
        assert typed == text


def test_missing_runtime_is_a_rejection_not_an_error(harness: Harness) -> None:
    ref = rpb.RuntimeRef(name="nope", kind="ServingRuntime")
    reply = harness.ok("Resolve", pb.ResolveRequest(inference_service=isvc_typed(ref), catalog=typed_catalog()))
    assert reply.runtime == ""
    assert "nope not found in namespace llama-demo" in reply.rejection.message


def test_response_names_the_revisions(harness: Harness, revision: str) -> None:
    reply = harness.ok("Resolve", pb.ResolveRequest(inference_service=isvc_typed(OURS), catalog=typed_catalog()))
    assert reply.revisions.rules_revision == revision
    assert reply.revisions.catalog_revision


def test_isvc_without_runtime_name_is_invalid(harness: Harness) -> None:
    result = harness.call("Resolve", pb.ResolveRequest(inference_service=isvc_typed(), catalog=typed_catalog()))
    assert_invalid(result, "spec.runtime.name", "inference_service.spec.runtime.name")


def test_the_webhook_rejects_a_base_model_that_does_not_exist(harness: Harness) -> None:
    doc = isvc_manifest(model={"name": "nope"}, runtime={"name": RUNTIME_70B})
    result = harness.call("Resolve", pb.ResolveRequest(inference_service=isvc_text(doc), catalog=manifest_catalog()))
    assert result.code == grpc.StatusCode.OK, result.details
    assert result.response.rejection.message == (
        'referenced model "nope" not found in namespace "llama-demo": ensure a BaseModel exists in this namespace'
        " or a ClusterBaseModel exists cluster-wide with this name"
    )
    assert result.response.rejection.field == "spec.model.name"
    assert result.response.runtime == ""


def test_unknown_lookup_is_invalid(harness: Harness) -> None:
    request = pb.ResolveRequest(inference_service=isvc_typed(OURS), catalog=typed_catalog(), lookup="v9")
    assert_invalid(harness.call("Resolve", request), "lookup")


def test_empty_request_names_inference_service_once(harness: Harness) -> None:
    assert_invalid(harness.call("Resolve", pb.ResolveRequest()), "inference_service")

"""Effective: the deployment mode each declared component runs in, and the rule that set it."""

from __future__ import annotations

from policyd.contract import policy_pb2 as pb
from policyd.contract import resources_pb2 as rpb

from .support import (
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

MODE_ANNOTATION = "ome.io/deploymentMode"


def _modes(reply: pb.EffectiveResponse) -> list[tuple[str, str, str]]:
    return [(c.component, c.mode, c.source) for c in reply.components]


def test_typed_request_gives_each_component_its_mode(harness: Harness) -> None:
    reply = harness.ok(
        "Effective",
        pb.EffectiveRequest(inference_service=isvc_typed(deployment_mode="OMENative"), catalog=typed_catalog()),
    )
    assert (reply.runtime, reply.runtime_kind) == (RUNTIME_NAME, "ServingRuntime")  # the auto-selected one
    assert _modes(reply) == [("engine", "OMENative", "InferenceService spec.deploymentMode")]
    assert not reply.errors


def test_default_mode_for_the_named_runtime(harness: Harness) -> None:
    request = pb.EffectiveRequest(
        inference_service=isvc_typed(rpb.RuntimeRef(name=RUNTIME_70B)), catalog=typed_catalog()
    )
    reply = harness.ok("Effective", request)
    assert (reply.runtime, reply.runtime_kind) == (RUNTIME_70B, "ClusterServingRuntime")
    assert _modes(reply) == [("engine", "RawDeployment", "default")]


def test_router_in_multinode_is_an_admission_error(harness: Harness) -> None:
    doc = isvc_manifest(router={"annotations": {MODE_ANNOTATION: "MultiNode"}})
    reply = harness.ok("Effective", pb.EffectiveRequest(inference_service=isvc_text(doc), catalog=manifest_catalog()))
    assert ("router", "MultiNode", f"InferenceService spec.router.annotations[{MODE_ANNOTATION}]") in _modes(reply)
    assert reply.errors
    assert any("router" in e.field or "router" in e.message for e in reply.errors)


def test_typed_and_manifest_requests_give_the_same_decision(harness: Harness) -> None:
    typed = harness.ok(
        "Effective",
        pb.EffectiveRequest(inference_service=isvc_typed(deployment_mode="OMENative"), catalog=typed_catalog()),
    )
    text = harness.ok(
        "Effective",
        pb.EffectiveRequest(
            inference_service=isvc_text(isvc_manifest(deploymentMode="OMENative")), catalog=manifest_catalog()
        ),
    )
    assert typed.components
    assert typed == text


def test_response_names_the_revisions(harness: Harness, revision: str) -> None:
    reply = harness.ok("Effective", pb.EffectiveRequest(inference_service=isvc_typed(), catalog=typed_catalog()))
    assert reply.revisions.rules_revision == revision
    assert reply.revisions.catalog_revision


def test_isvc_without_model_or_runtime_reports_the_refusal_and_no_runtime(harness: Harness) -> None:
    doc = isvc_manifest()
    del doc["spec"]["model"]
    reply = harness.ok("Effective", pb.EffectiveRequest(inference_service=isvc_text(doc), catalog=manifest_catalog()))
    assert reply.runtime == ""
    assert [e.rule_id for e in reply.errors] == ["no-model-no-runtime"]


def test_empty_request_names_inference_service_once(harness: Harness) -> None:
    assert_invalid(harness.call("Effective", pb.EffectiveRequest()), "inference_service")

"""Simulate and Lint over the contract: reads that never change the catalog, InferenceServices and
AcceleratorClasses as catalog objects, and bad input named by its field."""

from __future__ import annotations

from typing import Any

import pytest

from policyd.contract import policy_pb2 as pb
from policyd.contract import resources_pb2 as rpb

from .support import (
    MODEL_NAME,
    NAMESPACE,
    RULES,
    RUNTIME_NAME,
    Harness,
    assert_invalid,
    isvc_manifest,
    isvc_text,
    manifest_object,
    model_manifest,
    runtime_manifest,
)

RUNTIME_KEY = pb.ObjectKey(kind="ServingRuntime", namespace=NAMESPACE, name=RUNTIME_NAME)
ISVC_KEY = pb.ObjectKey(kind="InferenceService", namespace=NAMESPACE, name=MODEL_NAME)
H100: dict[str, Any] = {"apiVersion": "ome.io/v1beta1", "kind": "AcceleratorClass", "metadata": {"name": "nvidia-h100"}}


@pytest.fixture
def world() -> Harness:
    """The spec's runtime, model and InferenceService in a daemon's catalog."""
    h = Harness()
    docs = [runtime_manifest(), model_manifest(), isvc_manifest()]
    h.ok("ApplyObjects", pb.ApplyObjectsRequest(objects=[manifest_object(d) for d in docs]))
    return h


def _revision(h: Harness) -> str:
    status: pb.GetStatusResponse = h.ok("GetStatus", pb.GetStatusRequest())
    return status.revisions.catalog_revision


def test_the_catalog_keeps_inference_services_and_accelerator_classes(world: Harness) -> None:
    applied: pb.ApplyObjectsResponse = world.ok("ApplyObjects", pb.ApplyObjectsRequest(objects=[manifest_object(H100)]))
    assert (applied.inference_services, applied.accelerator_classes) == (1, 1)
    status: pb.GetStatusResponse = world.ok("GetStatus", pb.GetStatusRequest())
    assert (status.runtimes, status.models, status.inference_services, status.accelerator_classes) == (1, 1, 1, 1)
    got: pb.GetObjectsResponse = world.ok("GetObjects", pb.GetObjectsRequest(keys=[ISVC_KEY]))
    assert f'"name": "{MODEL_NAME}"' in got.objects[0].manifest
    deleted: pb.DeleteObjectsResponse = world.ok("DeleteObjects", pb.DeleteObjectsRequest(keys=[ISVC_KEY]))
    assert deleted.deleted == 1


def test_simulate_decides_the_catalogs_inference_services_and_applies_nothing(world: Harness) -> None:
    before = _revision(world)
    reply: pb.SimulateResponse = world.ok("Simulate", pb.SimulateRequest(delete=[RUNTIME_KEY]))
    assert reply.decided == 1
    (change,) = reply.changes
    assert change.inference_service == ISVC_KEY
    assert (change.before.outcome, change.before.runtime, change.before.verdict.selectable) == (
        "selected",
        RUNTIME_NAME,
        True,
    )
    assert (change.after.outcome, change.after.rejection.kind) == ("refused", "RuntimeNotFound")
    assert [(c.cause, c.runtime.name) for c in change.causes] == [("removed", RUNTIME_NAME), ("refused", "")]
    assert [(o.key.name, o.action) for o in reply.objects] == [(RUNTIME_NAME, "deleted")]
    assert reply.before.catalog_revision == before != reply.after.catalog_revision
    assert _revision(world) == before  # nothing applied
    assert world.ok("GetObjects", pb.GetObjectsRequest(keys=[RUNTIME_KEY])).objects[0].manifest


def test_simulate_with_inference_services_of_its_own(world: Harness) -> None:
    other = {**isvc_manifest(), "metadata": {"name": "other", "namespace": NAMESPACE}}
    request = pb.SimulateRequest(delete=[RUNTIME_KEY], inference_services=[isvc_text(other)])
    reply: pb.SimulateResponse = world.ok("Simulate", request)
    assert reply.decided == 2 and [c.inference_service.name for c in reply.changes] == [MODEL_NAME, "other"]


def test_simulate_with_another_rules_directory_names_its_revision(world: Harness) -> None:
    files = [pb.RuleFile(name=str(p), content=p.read_text()) for p in sorted((RULES / "examples").glob("*.yaml"))]
    reply: pb.SimulateResponse = world.ok("Simulate", pb.SimulateRequest(rules=files))
    assert reply.after.rules_revision != reply.before.rules_revision
    assert reply.after.catalog_revision == reply.before.catalog_revision


@pytest.mark.parametrize(
    ("request_", "field"),
    [
        (
            pb.SimulateRequest(delete=[pb.ObjectKey(kind="ServingRuntime", namespace=NAMESPACE, name="nope")]),
            "delete[0]",
        ),
        (pb.SimulateRequest(delete=[pb.ObjectKey(kind="Deployment", name="x")]), "delete[0].kind"),
        (pb.SimulateRequest(apply=[rpb.Object(manifest="kind: Deployment\nmetadata: {name: x}\n")]), "apply[0].kind"),
        (
            pb.SimulateRequest(
                apply=[manifest_object({**runtime_manifest(), "spec": {"autoscalerPolicyRef": {"name": "x"}}})]
            ),
            "apply[0].spec.autoscalerPolicyRef",
        ),
        (pb.SimulateRequest(rules=[pb.RuleFile(name="x.yaml", content="rules: [")]), "rules"),
        (
            pb.SimulateRequest(inference_services=[isvc_text({**isvc_manifest(), "spec": {"model": {}}})]),
            "inference_services[0].spec.model.name",
        ),
        (pb.LintRequest(rules=[pb.RuleFile(name="x.yaml", content="rules: [{id: x}]")]), "rules"),
    ],
)
def test_bad_what_if_input_is_named_by_its_field(world: Harness, request_: Any, field: str) -> None:
    method = "Lint" if isinstance(request_, pb.LintRequest) else "Simulate"
    assert_invalid(world.call(method, request_), field)


def test_lint_judges_the_catalog_with_the_lint_rules(world: Harness) -> None:
    classes = {**runtime_manifest()}
    classes["spec"] = {**classes["spec"], "acceleratorRequirements": {"acceleratorClasses": ["nvidia-a100"]}}
    world.ok("ApplyObjects", pb.ApplyObjectsRequest(objects=[manifest_object(classes), manifest_object(H100)]))
    reply: pb.LintResponse = world.ok("Lint", pb.LintRequest())
    (finding,) = [f for f in reply.findings if f.id == "accelerator-class-undefined"]
    assert finding.severity == "error"
    assert [(k.kind, k.name) for k in finding.objects] == [("ServingRuntime", RUNTIME_NAME)]
    assert finding.message.startswith("accelerator class nvidia-a100 is defined by none of the catalog's 1")
    assert reply.models_decided >= 1 and reply.revisions.catalog_revision == _revision(world)

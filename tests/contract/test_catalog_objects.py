"""ApplyObjects, GetObjects and DeleteObjects: the daemon's catalog, and the decisions made on it."""

from __future__ import annotations

import json

import grpc
import pytest

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
    isvc_typed,
    manifest_object,
    model_manifest,
    model_typed,
    runtime_70b_manifest,
    runtime_manifest,
    runtime_typed,
    struct,
)

MODEL_KEY = pb.ObjectKey(kind="ClusterBaseModel", name=MODEL_NAME)
RUNTIME_KEY = pb.ObjectKey(kind="ServingRuntime", namespace=NAMESPACE, name=RUNTIME_NAME)
BIG_KEY = pb.ObjectKey(kind="ClusterServingRuntime", name=RUNTIME_70B)
MISSING_KEY = pb.ObjectKey(kind="ServingRuntime", namespace="elsewhere", name=RUNTIME_NAME)


def _status(h: Harness) -> pb.GetStatusResponse:
    reply: pb.GetStatusResponse = h.ok("GetStatus", pb.GetStatusRequest())
    return reply


def _apply_all(h: Harness) -> pb.ApplyObjectsResponse:
    objects = [
        rpb.Object(model=model_typed()),
        rpb.Object(runtime=runtime_typed()),
        manifest_object(runtime_70b_manifest()),
    ]
    reply: pb.ApplyObjectsResponse = h.ok("ApplyObjects", pb.ApplyObjectsRequest(objects=objects))
    return reply


def test_apply_get_delete_round_trip_changes_the_catalog_revision(fresh: Harness) -> None:
    empty = _status(fresh).revisions.catalog_revision
    applied = _apply_all(fresh)
    assert (applied.runtimes, applied.models) == (2, 1)
    assert applied.catalog_revision and applied.catalog_revision != empty

    got = fresh.ok("GetObjects", pb.GetObjectsRequest(keys=[MODEL_KEY, RUNTIME_KEY, BIG_KEY, MISSING_KEY]))
    assert got.catalog_revision == applied.catalog_revision
    assert [json.loads(o.manifest) for o in got.objects[:3]] == [
        model_manifest(),
        runtime_manifest(),
        runtime_70b_manifest(),
    ]
    assert got.objects[3] == rpb.Object()  # not in the catalog

    deleted = fresh.ok("DeleteObjects", pb.DeleteObjectsRequest(keys=[RUNTIME_KEY]))
    assert deleted.deleted == 1
    assert deleted.catalog_revision not in (applied.catalog_revision, empty)
    assert fresh.ok("GetObjects", pb.GetObjectsRequest(keys=[RUNTIME_KEY])).objects[0] == rpb.Object()
    status = _status(fresh)
    assert (status.runtimes, status.models) == (1, 1)
    assert status.revisions.catalog_revision == deleted.catalog_revision

    again = fresh.ok("DeleteObjects", pb.DeleteObjectsRequest(keys=[RUNTIME_KEY]))
    assert again.deleted == 0
    assert again.catalog_revision == deleted.catalog_revision


def test_typed_and_manifest_objects_make_the_same_catalog() -> None:
    typed, text = Harness(), Harness()
    by_type = typed.ok(
        "ApplyObjects",
        pb.ApplyObjectsRequest(objects=[rpb.Object(model=model_typed()), rpb.Object(runtime=runtime_typed())]),
    )
    by_text = text.ok(
        "ApplyObjects",
        pb.ApplyObjectsRequest(objects=[manifest_object(model_manifest()), manifest_object(runtime_manifest())]),
    )
    assert by_type == by_text


def test_decisions_follow_the_applied_catalog(fresh: Harness) -> None:
    request = pb.SelectRequest(inference_service=isvc_typed())
    applied = _apply_all(fresh)
    chosen = fresh.ok("Select", request)
    assert [r.name for r in chosen.ranking] == [RUNTIME_NAME]
    assert chosen.revisions.catalog_revision == applied.catalog_revision

    deleted = fresh.ok("DeleteObjects", pb.DeleteObjectsRequest(keys=[RUNTIME_KEY]))
    after = fresh.ok("Select", request)  # the same request: the cached answer must not be reused
    assert not after.ranking
    assert after.error.startswith("no runtime found to support model safetensors")
    assert after.revisions.catalog_revision == deleted.catalog_revision


@pytest.mark.parametrize("form", ["manifest", "typed"])
def test_apply_refuses_a_runtime_with_autoscaler_policy_ref(fresh: Harness, form: str) -> None:
    if form == "manifest":
        doc = runtime_manifest()
        doc["spec"]["autoscalerPolicyRef"] = {"name": "keda-policy"}
        bad = manifest_object(doc)
    else:
        runtime = runtime_typed()
        runtime.spec.extra.CopyFrom(struct({"autoscalerPolicyRef": {"name": "keda-policy"}}))
        bad = rpb.Object(runtime=runtime)
    result = fresh.call("ApplyObjects", pb.ApplyObjectsRequest(objects=[bad]))
    assert_invalid(result, "objects[0].spec.autoscalerPolicyRef")
    assert f"autoscalerPolicyRef is not allowed in runtime {RUNTIME_NAME}" in result.details


def test_a_refused_apply_applies_nothing(fresh: Harness) -> None:
    before = _status(fresh).revisions.catalog_revision
    doc = runtime_manifest()
    doc["spec"]["autoscalerPolicyRef"] = {"name": "keda-policy"}
    result = fresh.call(
        "ApplyObjects", pb.ApplyObjectsRequest(objects=[manifest_object(model_manifest()), manifest_object(doc)])
    )
    assert_invalid(result, "objects[1].spec.autoscalerPolicyRef")
    status = _status(fresh)
    assert (status.runtimes, status.models) == (0, 0)
    assert status.revisions.catalog_revision == before


def test_apply_refuses_a_malformed_inference_service(fresh: Harness) -> None:
    # the catalog keeps InferenceServices (what-if decides them), parsed as any other object
    result = fresh.call("ApplyObjects", pb.ApplyObjectsRequest(objects=[manifest_object(isvc_manifest(model={}))]))
    assert_invalid(result, "objects[0].spec.model.name")


def test_apply_refuses_a_priority_below_the_crd_minimum(fresh: Harness) -> None:
    doc = runtime_manifest()
    doc["spec"]["supportedModelFormats"][0]["priority"] = 0
    result = fresh.call("ApplyObjects", pb.ApplyObjectsRequest(objects=[manifest_object(doc)]))
    assert_invalid(result, "objects[0].spec.supportedModelFormats[0].priority")


def test_apply_takes_a_version_ome_cannot_read_as_the_crd_and_ome_take_it(fresh: Harness) -> None:
    doc = runtime_manifest()
    doc["spec"]["supportedModelFormats"][0]["modelFramework"]["version"] = "4.x"
    result = fresh.call("ApplyObjects", pb.ApplyObjectsRequest(objects=[manifest_object(doc)]))
    assert result.code == grpc.StatusCode.OK, result.details


@pytest.mark.parametrize(
    ("obj", "field"),
    [(rpb.Object(), "objects[0]"), (rpb.Object(manifest="spec: [x"), "objects[0].manifest")],
    ids=["empty-object", "yaml-not-valid"],
)
def test_apply_names_the_object_field_once(fresh: Harness, obj: rpb.Object, field: str) -> None:
    # Comes out as objects[0].objects[0]...: the prefix is added twice.
    assert_invalid(fresh.call("ApplyObjects", pb.ApplyObjectsRequest(objects=[obj])), field)


@pytest.mark.parametrize("rpc", ["GetObjects", "DeleteObjects"])
def test_keys_of_unknown_kind_or_without_name(fresh: Harness, rpc: str) -> None:
    request = pb.GetObjectsRequest if rpc == "GetObjects" else pb.DeleteObjectsRequest
    assert_invalid(fresh.call(rpc, request(keys=[MODEL_KEY, pb.ObjectKey(kind="Foo", name="x")])), "keys[1].kind")
    assert_invalid(fresh.call(rpc, request(keys=[pb.ObjectKey(kind="ClusterBaseModel")])), "keys[0].name")


def test_apply_objects_with_replace_makes_them_the_whole_catalog(fresh: Harness) -> None:
    whole = _apply_all(fresh).catalog_revision
    replaced: pb.ApplyObjectsResponse = fresh.ok(
        "ApplyObjects", pb.ApplyObjectsRequest(objects=[rpb.Object(model=model_typed())], replace=True)
    )
    assert (replaced.runtimes, replaced.models) == (0, 1)
    got = fresh.ok("GetObjects", pb.GetObjectsRequest(keys=[MODEL_KEY, RUNTIME_KEY, BIG_KEY]))
    assert [bool(o.manifest) for o in got.objects] == [True, False, False]
    # the same objects again give the same revision, however the catalog got there
    assert _apply_all(fresh).catalog_revision == whole

"""Bad input to the four decision RPCs: INVALID_ARGUMENT whose details begin with the path of the
offending field in the request, typed or manifest, never a traceback. What the CRDs take as free
strings and OME reads otherwise than written (a size it reads as 0, a version that matches none,
an unknown operator it reads as Equal) is not bad input: it is decided as OME decides it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from google.protobuf.message import Message

from policyd.contract import policy_pb2 as pb
from policyd.contract import resources_pb2 as rpb

from .support import (
    RUNTIME_NAME,
    Harness,
    assert_invalid,
    isvc_manifest,
    isvc_text,
    isvc_typed,
    manifest_object,
    model_manifest,
    model_typed,
    runtime_manifest,
    runtime_typed,
)

REQUESTS: dict[str, Callable[..., Message]] = {
    "Select": pb.SelectRequest,
    "Explain": pb.ExplainRequest,
    "Resolve": pb.ResolveRequest,
    "Effective": pb.EffectiveRequest,
}
ENTRY = "spec.supportedModelFormats[0]"


@dataclass(frozen=True)
class Bad:
    id: str
    path: str
    isvc: rpb.InferenceServiceInput = field(default_factory=lambda: isvc_text(isvc_manifest()))
    objects: tuple[rpb.Object, ...] = ()


def _runtime(change: Callable[[dict[str, Any]], None]) -> rpb.Object:
    doc = runtime_manifest()
    change(doc)
    return manifest_object(doc)


def _model(change: Callable[[dict[str, Any]], None]) -> rpb.Object:
    doc = model_manifest()
    change(doc)
    return manifest_object(doc)


def _framework(doc: dict[str, Any], **values: str) -> None:
    doc["spec"]["supportedModelFormats"][0]["modelFramework"].update(values)


def _typed_runtime_with_operator(operator: str) -> rpb.Object:
    runtime = runtime_typed()
    runtime.spec.supported_model_formats[0].model_framework.operator = operator
    return rpb.Object(runtime=runtime)


MODEL = manifest_object(model_manifest())
CASES = [
    Bad(
        "isvc-deploymentMode-Sideways",
        "inference_service.spec.deploymentMode",
        isvc_text(isvc_manifest(deploymentMode="Sideways")),
    ),
    Bad(
        "typed-isvc-deploymentMode-Sideways",
        "inference_service.spec.deploymentMode",
        isvc_typed(deployment_mode="Sideways"),
    ),
    Bad(
        "isvc-runtime-kind-Foo",
        "inference_service.spec.runtime.kind",
        isvc_text(isvc_manifest(runtime={"name": RUNTIME_NAME, "kind": "Foo"})),
    ),
    Bad(
        "typed-isvc-runtime-kind-Foo",
        "inference_service.spec.runtime.kind",
        isvc_typed(rpb.RuntimeRef(name=RUNTIME_NAME, kind="Foo")),
    ),
    Bad(
        "isvc-model-kind-Foo",
        "inference_service.spec.model.kind",
        isvc_text(isvc_manifest(model={"name": "m", "kind": "Foo"})),
    ),
    Bad("isvc-engine-not-an-object", "inference_service.spec.engine", isvc_text(isvc_manifest(engine=["x"]))),
    Bad(
        "typed-isvc-without-metadata",
        "inference_service.metadata",
        rpb.InferenceServiceInput(typed=rpb.InferenceService()),
    ),
    Bad(
        "priority-0",
        f"catalog.objects[0].{ENTRY}.priority",
        objects=(_runtime(lambda d: d["spec"]["supportedModelFormats"][0].update(priority=0)), MODEL),
    ),
    Bad(
        "catalog-object-of-unknown-kind",
        "catalog.objects[0].kind",
        objects=(manifest_object({"apiVersion": "ome.io/v1beta1", "kind": "Foo", "metadata": {"name": "x"}}),),
    ),
    Bad("inferenceservice-in-catalog", "catalog.objects[0].kind", objects=(manifest_object(isvc_manifest()),)),
    # A field path names the request field once: these come out as inference_service.inference_service...
    # and catalog.objects[0].catalog.objects[0]... (the prefix is added twice).
    Bad("isvc-yaml-not-valid", "inference_service.manifest", rpb.InferenceServiceInput(manifest="spec: [model")),
    Bad("isvc-two-documents", "inference_service.manifest", rpb.InferenceServiceInput(manifest="a: 1\n---\nb: 2\n")),
    Bad("catalog-yaml-not-valid", "catalog.objects[0].manifest", objects=(rpb.Object(manifest="spec: [model"),)),
    Bad("catalog-object-empty", "catalog.objects[0]", objects=(rpb.Object(),)),
]


@pytest.mark.parametrize("rpc", list(REQUESTS))
@pytest.mark.parametrize("bad", CASES, ids=[c.id for c in CASES])
def test_bad_input_names_the_field(harness: Harness, rpc: str, bad: Bad) -> None:
    catalog = pb.RequestCatalog(objects=list(bad.objects), isolated=True)
    result = harness.call(rpc, REQUESTS[rpc](inference_service=bad.isvc, catalog=catalog))
    assert_invalid(result, bad.path)


MISREAD = {
    "operator-Between": (_runtime(lambda d: _framework(d, operator="Between")), MODEL),
    "typed-operator-Between": (_typed_runtime_with_operator("Between"), rpb.Object(model=model_typed())),
    "runtime-version-4.x": (_runtime(lambda d: _framework(d, version="4.x")), MODEL),
    "model-version-4.x": (_model(lambda d: d["spec"]["modelFramework"].update(version="4.x")),),
    "model-size-7Q": (_model(lambda d: d["spec"].update(modelParameterSize="7Q")),),
    "runtime-size-range-7Q": (_runtime(lambda d: d["spec"]["modelSizeRange"].update(max="7Q")), MODEL),
    "runtime-size-range-min-over-max": (
        _runtime(lambda d: d["spec"].update(modelSizeRange={"min": "9B", "max": "2B"})),
        MODEL,
    ),
}


@pytest.mark.parametrize("rpc", list(REQUESTS))
@pytest.mark.parametrize("objects", list(MISREAD.values()), ids=list(MISREAD))
def test_input_ome_reads_otherwise_than_written_is_decided_not_refused(
    harness: Harness, rpc: str, objects: tuple[rpb.Object, ...]
) -> None:
    catalog = pb.RequestCatalog(objects=list(objects), isolated=True)
    named = {"runtime": {"name": RUNTIME_NAME, "kind": "ServingRuntime"}} if rpc == "Resolve" else {}
    harness.ok(rpc, REQUESTS[rpc](inference_service=isvc_text(isvc_manifest(**named)), catalog=catalog))

"""Decide: the whole decision for an InferenceService in one call — what Resolve (a named
runtime) or Select (auto-selection) answers, then Effective's modes on that runtime, and the
accelerator class each engine and decoder is placed on."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from policyd.contract import policy_pb2 as pb

from .support import (
    RUNTIME_70B,
    RUNTIME_NAME,
    Harness,
    isvc_manifest,
    isvc_text,
    manifest_catalog,
    model_manifest,
    runtime_70b_manifest,
    runtime_manifest,
)

MODE = "ome.io/deploymentMode"
CLASS_ANNOTATION = "ome.io/accelerator-class"
SHAPES: dict[str, dict[str, Any]] = {
    "auto-selected": {},
    "named": {"runtime": {"name": RUNTIME_70B}},
    "named, not found": {"runtime": {"name": "no-such-runtime"}},
    "named ServingRuntime": {"runtime": {"name": RUNTIME_NAME, "kind": "ServingRuntime"}},
    "router in MultiNode": {"router": {"annotations": {MODE: "MultiNode"}}},
    "engine and decoder": {"decoder": {"minReplicas": 1}},
    "an unknown model": {"model": {"name": "no-such-model"}},
    "an accelerator class no runtime has": {"acceleratorSelector": {"acceleratorClass": "tpu-v5"}},
}


def _as_the_calls_answer(harness: Harness, doc: dict[str, Any], catalog: pb.RequestCatalog) -> Any:
    """What Resolve or Select, then Effective (only when a runtime can be used), answer: the
    clients' three calls Decide stands for."""
    expected, isvc = pb.DecideResponse(), isvc_text(doc)
    if "runtime" in doc["spec"]:
        resolved = harness.ok("Resolve", pb.ResolveRequest(inference_service=isvc, catalog=catalog))
        expected.named = True
        expected.warnings.extend([resolved.warning] if resolved.warning else [])
        expected.event, expected.event_reason = resolved.event, resolved.event_reason
        expected.entry_index = resolved.entry_index
        if resolved.HasField("rejection"):
            expected.rejection.CopyFrom(resolved.rejection)
        else:
            expected.runtime, expected.runtime_kind = resolved.runtime, resolved.runtime_kind
            expected.runtime_namespace = resolved.runtime_namespace
        expected.revisions.CopyFrom(resolved.revisions)
    else:
        selected = harness.ok("Select", pb.SelectRequest(inference_service=isvc, catalog=catalog))
        expected.warnings.extend(selected.warnings)
        expected.entry_index = -1
        if selected.ranking:
            top = selected.ranking[0]
            expected.runtime, expected.runtime_kind, expected.runtime_namespace = top.name, top.kind, top.namespace
            expected.entry_index = top.entry_index
        else:
            expected.rejection.CopyFrom(selected.rejection)
        expected.revisions.CopyFrom(selected.revisions)
    if not expected.HasField("rejection"):
        effective = harness.ok("Effective", pb.EffectiveRequest(inference_service=isvc, catalog=catalog))
        expected.components.extend(effective.components)
        if effective.HasField("backends"):
            expected.backends.CopyFrom(effective.backends)
    return expected


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_decide_answers_as_resolve_or_select_then_effective(harness: Harness, shape: str) -> None:
    doc, catalog = isvc_manifest(**SHAPES[shape]), manifest_catalog()
    decided = harness.ok("Decide", pb.DecideRequest(inference_service=isvc_text(doc), catalog=catalog))
    assert decided == _as_the_calls_answer(harness, doc, catalog)


def test_a_refused_decision_carries_the_runtimeready_condition_and_no_runtime(harness: Harness) -> None:
    isvc = isvc_text(isvc_manifest(runtime={"name": "no-such-runtime"}))
    decided = harness.ok("Decide", pb.DecideRequest(inference_service=isvc, catalog=manifest_catalog()))
    assert decided.named and not decided.runtime and not decided.components
    assert decided.rejection.condition_reason == "RuntimeNotFound"
    assert "no-such-runtime" in decided.rejection.condition_message


def _accelerated(classes: list[str]) -> pb.RequestCatalog:
    runtime = runtime_manifest()
    runtime["spec"]["acceleratorRequirements"] = {"acceleratorClasses": classes}
    return manifest_catalog(model_manifest(), runtime, runtime_70b_manifest())


def test_each_engine_and_decoder_is_placed_on_its_override_else_the_selector_else_the_annotation(
    harness: Harness,
) -> None:
    doc = isvc_manifest(
        acceleratorSelector={"acceleratorClass": "nvidia-a100"},
        decoder={"minReplicas": 1, "acceleratorOverride": {"acceleratorClass": "nvidia-h100"}},
        router={"minReplicas": 1},
    )
    doc["metadata"]["annotations"] = {CLASS_ANNOTATION: "nvidia-l40s"}
    catalog = _accelerated(["nvidia-a100", "nvidia-h100", "nvidia-l40s"])
    decided = harness.ok("Decide", pb.DecideRequest(inference_service=isvc_text(doc), catalog=catalog))
    assert decided.runtime == RUNTIME_NAME, decided.rejection.message
    # the router runs on no accelerator: it is given none
    assert dict(decided.accelerator_classes) == {"engine": "nvidia-a100", "decoder": "nvidia-h100"}
    annotated = copy.deepcopy(doc)
    del annotated["spec"]["acceleratorSelector"]
    decided = harness.ok("Decide", pb.DecideRequest(inference_service=isvc_text(annotated), catalog=catalog))
    assert dict(decided.accelerator_classes) == {"engine": "nvidia-l40s", "decoder": "nvidia-h100"}


def test_an_inferenceservice_naming_no_accelerator_class_is_placed_on_none(harness: Harness) -> None:
    isvc = isvc_text(isvc_manifest())
    decided = harness.ok("Decide", pb.DecideRequest(inference_service=isvc, catalog=manifest_catalog()))
    assert decided.runtime and not decided.accelerator_classes

"""Select: the auto-selectable runtimes, best first, OME's admission warning, and the decision cache."""

from __future__ import annotations

from policyd.contract import policy_pb2 as pb
from policyd.server import observability as obs

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
    runtime_70b_manifest,
    typed_catalog,
)

WARNING = f"Runtime {RUNTIME_NAME} will be auto-selected for model {MODEL_NAME}"


def test_typed_request_selects_the_spec_runtime(harness: Harness) -> None:
    reply = harness.ok("Select", pb.SelectRequest(inference_service=isvc_typed(), catalog=typed_catalog()))
    assert [(r.name, r.kind, r.namespace) for r in reply.ranking] == [(RUNTIME_NAME, "ServingRuntime", NAMESPACE)]
    top = reply.ranking[0]
    assert top.entry_index == 0
    assert top.score == 2  # (format weight 1 + framework weight 1) x priority 1
    assert top.entry.model_architecture == "LlamaForCausalLM"
    assert top.entry.model_framework.version == "4.45.0.dev0"
    assert top.entry.auto_select is True
    assert list(reply.warnings) == [WARNING]
    assert reply.error == ""
    assert not reply.excluded


def test_typed_and_manifest_requests_give_the_same_decision(harness: Harness) -> None:
    typed = harness.ok("Select", pb.SelectRequest(inference_service=isvc_typed(), catalog=typed_catalog()))
    text = harness.ok(
        "Select", pb.SelectRequest(inference_service=isvc_text(isvc_manifest()), catalog=manifest_catalog())
    )
    assert typed.ranking  # equal and non-trivial
    assert typed == text


def test_response_names_the_revisions(harness: Harness, revision: str) -> None:
    reply = harness.ok("Select", pb.SelectRequest(inference_service=isvc_typed(), catalog=typed_catalog()))
    assert reply.revisions.rules_revision == revision
    assert reply.revisions.catalog_revision


def test_no_auto_selectable_runtime_gives_omes_message(harness: Harness) -> None:
    catalog = manifest_catalog(model_manifest(), runtime_70b_manifest(), isolated=True)
    reply = harness.ok("Select", pb.SelectRequest(inference_service=isvc_text(isvc_manifest()), catalog=catalog))
    assert not reply.ranking
    assert not reply.warnings
    # The runtime that is not auto-selectable is listed because it failed a check (spec 001).
    assert reply.error == (
        f"no runtime found to support model safetensors with format safetensors in namespace {NAMESPACE}. "
        "Checked 1 runtimes (0 namespace-scoped, 1 cluster-scoped). "
        f"Excluded runtimes: {RUNTIME_70B} (model format 'mt:safetensors:1.0.0:LlamaForCausalLM:transformers:"
        "4.45.0.dev0' not in supported formats: framework version mismatch (model=4.45.0.dev0, runtime=4.47.0.dev0))"
    )
    assert [(v.name, v.selectable, v.reason.rule_id) for v in reply.excluded] == [
        (RUNTIME_70B, False, "supported-formats")
    ]
    # the refusal, typed: clients write its condition as it is
    assert (reply.rejection.kind, reply.rejection.condition_reason) == ("RuntimeNotFound", "RuntimeNotFound")
    assert reply.rejection.message == reply.error == reply.rejection.condition_message


def test_not_auto_selectable_runtime_that_passes_every_check_is_not_listed(harness: Harness) -> None:
    big = runtime_70b_manifest()
    big["spec"]["modelSizeRange"] = {"min": "1B", "max": "75B"}
    big["spec"]["supportedModelFormats"][0]["modelFramework"]["version"] = "4.45.0.dev0"
    catalog = manifest_catalog(model_manifest(), big, isolated=True)
    reply = harness.ok("Select", pb.SelectRequest(inference_service=isvc_text(isvc_manifest()), catalog=catalog))
    assert not reply.ranking
    assert not reply.excluded
    assert reply.error.endswith("Checked 1 runtimes (0 namespace-scoped, 1 cluster-scoped)")


def test_the_same_select_twice_is_answered_equally_from_the_cache(fresh: Harness) -> None:
    request = pb.SelectRequest(inference_service=isvc_typed(), catalog=typed_catalog())
    hits = obs.REGISTRY.get_sample_value("policyd_decision_cache_hits_total") or 0.0
    first = fresh.ok("Select", request)
    second = fresh.ok("Select", request)
    assert first == second
    assert first.ranking[0].name == RUNTIME_NAME
    assert obs.REGISTRY.get_sample_value("policyd_decision_cache_hits_total") == hits + 1


def test_isvc_without_model_or_runtime_is_refused_as_the_webhook_does(harness: Harness) -> None:
    doc = isvc_manifest()
    del doc["spec"]["model"]
    reply = harness.ok("Select", pb.SelectRequest(inference_service=isvc_text(doc), catalog=manifest_catalog()))
    assert not reply.ranking
    assert reply.error == (
        "model reference is required when runtime is not specified and engine does not have complete runner"
        " configuration"
    )
    assert (reply.rejection.kind, reply.rejection.rule_id, reply.rejection.field) == (
        "ValidationError",
        "no-model-no-runtime",
        "spec.runtime.name",
    )


def test_isvc_without_model_naming_a_runtime_is_invalid_for_select(harness: Harness) -> None:
    doc = isvc_manifest(runtime={"name": RUNTIME_70B})
    del doc["spec"]["model"]
    result = harness.call("Select", pb.SelectRequest(inference_service=isvc_text(doc), catalog=manifest_catalog()))
    assert_invalid(result, "spec.model", "inference_service.spec.model")


def test_model_not_in_catalog_is_refused_naming_the_field(harness: Harness) -> None:
    doc = isvc_manifest(model={"name": "llama-9000"})
    reply = harness.ok("Select", pb.SelectRequest(inference_service=isvc_text(doc), catalog=manifest_catalog()))
    assert reply.error == (
        f'referenced model "llama-9000" not found in namespace "{NAMESPACE}": ensure a BaseModel exists in this'
        " namespace or a ClusterBaseModel exists cluster-wide with this name"
    )
    assert (reply.rejection.field, reply.rejection.condition_reason) == ("spec.model.name", "RuntimeValidationError")


def test_empty_request_names_inference_service_once(harness: Harness) -> None:
    assert_invalid(harness.call("Select", pb.SelectRequest()), "inference_service")

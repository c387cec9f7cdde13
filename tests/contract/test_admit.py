"""Admit: OME's validating webhooks for InferenceServices, ServingRuntimes and
ClusterServingRuntimes — allowed or the denial in OME's words, the warnings kubectl prints, and
what the review looked up and did not find."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from policyd.contract import policy_pb2 as pb
from policyd.server import observability as obs
from policyd.server.observability import DecisionLog

from .support import (
    MODEL_NAME,
    NAMESPACE,
    RUNNER,
    RUNTIME_70B,
    RUNTIME_NAME,
    Harness,
    assert_invalid,
    isvc_manifest,
    isvc_text,
    manifest_catalog,
    manifest_object,
    model_manifest,
    runtime_70b_manifest,
    runtime_manifest,
)


def admit(harness: Harness, doc: dict[str, Any], *catalog: dict[str, Any]) -> Any:
    return harness.ok("Admit", pb.AdmitRequest(object=manifest_object(doc), catalog=manifest_catalog(*catalog)))


def keys(reply: Any) -> list[tuple[str, str, str]]:
    return [(k.kind, k.namespace, k.name) for k in reply.missing]


def named(doc: dict[str, Any], name: str, **extra: Any) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    doc["metadata"]["name"] = name
    doc["spec"].update(extra)
    return doc


# -- InferenceServices --------------------------------------------------------------------


def test_the_webhook_tells_which_runtime_will_be_auto_selected(harness: Harness) -> None:
    reply = admit(harness, isvc_manifest())
    assert reply.allowed is True
    assert list(reply.warnings) == [f"Runtime {RUNTIME_NAME} will be auto-selected for model {MODEL_NAME}"]
    assert not reply.HasField("denial")
    assert list(reply.missing) == []


def test_the_webhook_rejects_a_named_runtime_that_does_not_exist_and_names_the_keys_it_looked_up(
    harness: Harness,
) -> None:
    reply = admit(harness, isvc_manifest(runtime={"name": "srt-x"}))
    assert reply.allowed is False
    assert reply.denial.message == f"srt-x not found in namespace {NAMESPACE}"
    assert (reply.denial.rule_id, reply.denial.kind) == ("named-runtime-not-found", "RuntimeNotFound")
    assert keys(reply) == [("ClusterServingRuntime", "", "srt-x"), ("ServingRuntime", NAMESPACE, "srt-x")]


def test_a_named_servingruntime_is_looked_up_only_in_the_namespace(harness: Harness) -> None:
    reply = admit(harness, isvc_manifest(runtime={"name": "srt-x", "kind": "ServingRuntime"}))
    assert keys(reply) == [("ServingRuntime", NAMESPACE, "srt-x")]


def test_the_webhook_asks_again_with_what_the_caller_read(harness: Harness) -> None:
    doc = isvc_manifest(runtime={"name": "srt-x", "kind": "ServingRuntime"})
    created = named(runtime_manifest(), "srt-x")
    reply = admit(harness, doc, model_manifest(), runtime_manifest(), created)
    assert reply.allowed is True
    assert list(reply.missing) == []


def test_without_a_base_model_a_missing_runtime_is_admitted(harness: Harness) -> None:
    doc = isvc_manifest(runtime={"name": "srt-x"})
    del doc["spec"]["model"]
    reply = admit(harness, doc)
    assert reply.allowed is True
    assert list(reply.missing) == []


MISSING_MODEL = (
    'referenced model "nope" not found in namespace "{namespace}": ensure a BaseModel exists in this namespace'
    " or a ClusterBaseModel exists cluster-wide with this name"
)


def test_the_webhook_rejects_a_base_model_that_does_not_exist(harness: Harness) -> None:
    reply = admit(harness, isvc_manifest(model={"name": "nope"}))
    assert reply.denial.message == MISSING_MODEL.format(namespace=NAMESPACE)
    assert keys(reply) == [("ClusterBaseModel", "", "nope")]


def test_the_webhook_looks_the_model_up_before_the_runtime_it_names(harness: Harness) -> None:
    doc = isvc_manifest(model={"name": "nope"}, runtime={"name": "srt-x"})
    assert admit(harness, doc).denial.message == MISSING_MODEL.format(namespace=NAMESPACE)


FORMATLESS = "invalid model specification: modelFormat.name: model format name is required"


def formatless_model() -> dict[str, Any]:
    doc = model_manifest()
    del doc["spec"]["modelFormat"]
    return doc


def test_a_model_without_a_format_keeps_the_webhook_s_prefix(harness: Harness) -> None:
    reply = admit(harness, isvc_manifest(), formatless_model(), runtime_manifest())
    assert reply.denial.message == (
        f"no supporting runtime found for model {MODEL_NAME} and engine does not have complete runner"
        f" configuration: {FORMATLESS}"
    )


def test_a_named_runtime_that_is_missing_with_a_model_without_a_format_reports_the_model(harness: Harness) -> None:
    reply = admit(harness, isvc_manifest(runtime={"name": "srt-x"}), formatless_model())
    assert reply.denial.message == FORMATLESS


def test_an_engine_with_its_own_runner_gets_no_auto_selected_warning_and_needs_no_model_format(
    harness: Harness,
) -> None:
    engine = {"runner": {"image": RUNNER["image"]}}
    reply = admit(harness, isvc_manifest(engine=engine), model_manifest(), runtime_manifest())
    assert (reply.allowed, list(reply.warnings)) == (True, [])
    reply = admit(harness, isvc_manifest(engine=engine), formatless_model(), runtime_manifest())
    assert (reply.allowed, list(reply.warnings)) == (True, [])


def test_the_webhook_rejects_a_disabled_named_runtime(harness: Harness) -> None:
    disabled = runtime_70b_manifest()
    disabled["spec"]["disabled"] = True
    reply = admit(harness, isvc_manifest(runtime={"name": RUNTIME_70B}), model_manifest(), disabled)
    assert reply.allowed is False
    assert reply.denial.message == f"cluster-scoped runtime {RUNTIME_70B} is disabled"
    assert list(reply.missing) == []


def test_a_named_runtime_without_support_is_admitted_with_the_warning(harness: Harness) -> None:
    reply = admit(harness, isvc_manifest(runtime={"name": RUNTIME_70B}))
    assert reply.allowed is True
    (warning,) = reply.warnings
    assert warning.startswith(f'runtime "{RUNTIME_70B}" does not declare support for model "{MODEL_NAME}" (')
    assert warning.endswith("; proceeding because the runtime was named explicitly")


def test_a_compatible_named_runtime_is_admitted_without_a_warning(harness: Harness) -> None:
    reply = admit(harness, isvc_manifest(runtime={"name": RUNTIME_NAME, "kind": "ServingRuntime"}))
    assert reply.allowed is True
    assert list(reply.warnings) == []


# spec 002: spec.runtime.revision "Needs autoSync: false"; OME admits it without, and it does nothing
REVISION = f"{MODEL_NAME}-5d8f7c9b4"
UNPINNED = (
    f'spec.runtime.revision "{REVISION}" has no effect without spec.runtime.autoSync: false; '
    f'the InferenceService follows runtime "{RUNTIME_NAME}"'
)


def with_runtime(**runtime: Any) -> dict[str, Any]:
    return isvc_manifest(runtime={"name": RUNTIME_NAME, "kind": "ServingRuntime", **runtime})


def test_a_revision_without_autosync_false_is_admitted_with_a_warning_and_the_same_defaults(
    harness: Harness,
) -> None:
    doc = with_runtime(revision=REVISION)
    reply, plain = admit(harness, doc), admit(harness, with_runtime())
    assert (reply.allowed, list(reply.warnings)) == (True, [UNPINNED])
    assert (reply.HasField("denial"), list(reply.missing)) == (False, [])
    assert list(plain.warnings) == []
    assert admit(harness, with_runtime(revision=REVISION, autoSync=True)).warnings == [UNPINNED]

    def defaults(manifest: dict[str, Any]) -> str:
        bare = {**manifest, "spec": {**manifest["spec"], "engine": {}}}  # replicas for the webhook to default
        return str(harness.ok("Default", pb.DefaultRequest(inference_service=isvc_text(bare))).patch)

    assert defaults(doc) == defaults(with_runtime()) != "[]"


@pytest.mark.parametrize(
    "runtime", [{"revision": REVISION, "autoSync": False}, {"autoSync": True}, {"autoSync": False}, {}]
)
def test_no_revision_warning_when_pinned_or_without_a_revision(harness: Harness, runtime: dict[str, Any]) -> None:
    reply = admit(harness, with_runtime(**runtime))
    assert (reply.allowed, list(reply.warnings)) == (True, [])


def test_the_revision_warning_comes_before_the_runtime_s_and_without_an_engine(harness: Harness) -> None:
    unsupported = isvc_manifest(runtime={"name": RUNTIME_70B, "revision": REVISION})
    first, support = admit(harness, unsupported).warnings
    assert first == UNPINNED.replace(RUNTIME_NAME, RUNTIME_70B)
    assert support.startswith(f'runtime "{RUNTIME_70B}" does not declare support for model "{MODEL_NAME}" (')
    # a request check: made whether or not the webhook checks the runtime
    doc = with_runtime(revision=REVISION)
    del doc["spec"]["engine"]
    assert list(admit(harness, doc).warnings) == [UNPINNED]


def test_a_denied_request_is_denied_as_without_the_revision(harness: Harness) -> None:
    reply = admit(harness, isvc_manifest(runtime={"name": "srt-x", "revision": REVISION}))
    plain = admit(harness, isvc_manifest(runtime={"name": "srt-x"}))
    assert (reply.allowed, list(reply.warnings)) == (False, [])
    assert reply.denial == plain.denial and list(reply.missing) == list(plain.missing)


def test_without_an_engine_the_webhook_checks_neither_runtime_nor_model(harness: Harness) -> None:
    doc = isvc_manifest(model={"name": "nope"}, runtime={"name": "srt-x"})
    del doc["spec"]["engine"]
    reply = admit(harness, doc)
    assert reply.allowed is True
    assert list(reply.warnings) == []


def test_the_webhook_rejects_an_inferenceservice_no_runtime_can_serve(harness: Harness) -> None:
    reply = admit(harness, isvc_manifest(), model_manifest())
    assert reply.allowed is False
    prefix = (
        f"no supporting runtime found for model {MODEL_NAME} and engine does not have complete runner configuration: "
    )
    assert reply.denial.message.startswith(prefix + "no runtime found to support model safetensors")
    assert reply.denial.kind == "RuntimeNotFound"


@pytest.mark.parametrize(
    "engine",
    [
        {"runner": {"image": RUNNER["image"]}},
        {"leader": {"runner": {"image": RUNNER["image"]}}, "worker": {"runner": {"image": RUNNER["image"]}}},
    ],
)
def test_an_engine_with_its_own_runner_needs_no_runtime(harness: Harness, engine: dict[str, Any]) -> None:
    reply = admit(harness, isvc_manifest(engine=engine), model_manifest())
    assert reply.allowed is True
    assert list(reply.warnings) == []


def test_a_leader_runner_alone_is_not_a_complete_runner(harness: Harness) -> None:
    engine = {"leader": {"runner": {"image": RUNNER["image"]}}, "worker": {}}
    reply = admit(harness, isvc_manifest(engine=engine), model_manifest())
    assert reply.allowed is False


def test_the_webhook_rejects_an_inferenceservice_name_of_the_wrong_format(harness: Harness) -> None:
    doc = isvc_manifest()
    doc["metadata"]["name"] = "Llama_3"
    del doc["spec"]["engine"]  # checked whatever else the InferenceService says
    reply = admit(harness, doc)
    assert reply.denial.message == 'invalid InferenceService name "Llama_3", must match "[a-z]([-a-z0-9]*[a-z0-9])?"'
    assert (reply.denial.rule_id, reply.denial.kind, reply.denial.field) == (
        "isvc-name-format",
        "ValidationError",
        "metadata.name",
    )


def test_the_webhook_rejects_a_decoder_without_an_engine(harness: Harness) -> None:
    doc = isvc_manifest(decoder={"minReplicas": 1})
    del doc["spec"]["engine"]
    reply = admit(harness, doc)
    assert reply.denial.message == "decoder cannot be specified without engine"


@pytest.mark.parametrize(
    ("annotations", "message"),
    [
        ({"ome.io/autoscalerClass": "kpa"}, "[kpa] is not a supported autoscaler class type"),
        ({"ome.io/autoscalerClass": "hpa", "ome.io/metrics": "gpu"}, "[gpu] is not a supported metric"),
        ({"ome.io/targetUtilizationPercentage": "0"}, "the target utilization percentage should be a [1-100] integer"),
        (
            {"ome.io/targetUtilizationPercentage": "50%"},
            "the target utilization percentage should be a [1-100] integer",
        ),
    ],
)
def test_the_webhook_rejects_autoscaler_annotations_ome_does_not_support(
    harness: Harness, annotations: dict[str, str], message: str
) -> None:
    doc = isvc_manifest()
    doc["metadata"]["annotations"] = annotations
    reply = admit(harness, doc)
    assert reply.allowed is False
    assert reply.denial.message == message


def test_supported_autoscaler_annotations_are_admitted(harness: Harness) -> None:
    doc = isvc_manifest()
    doc["metadata"]["annotations"] = {
        "ome.io/autoscalerClass": "hpa",
        "ome.io/metrics": "memory",
        "ome.io/targetUtilizationPercentage": "100",
    }
    assert admit(harness, doc).allowed is True


# -- ServingRuntimes and ClusterServingRuntimes ------------------------------------------------

PLAIN = {"modelFormat": {"name": "safetensors"}, "modelFramework": {"name": "transformers"}, "autoSelect": True}


def plain_runtime(name: str, kind: str = "ServingRuntime", **spec: Any) -> dict[str, Any]:
    """A runtime with one auto-selectable entry of priority 1."""
    meta = {"name": name, "namespace": NAMESPACE} if kind == "ServingRuntime" else {"name": name}
    body = {"supportedModelFormats": [{**PLAIN, "priority": 1}], "protocolVersions": ["openAI"]}
    return {"apiVersion": "ome.io/v1beta1", "kind": kind, "metadata": meta, "spec": {**body, **spec}}


def test_the_webhook_admits_the_spec_example_runtime(harness: Harness) -> None:
    reply = admit(harness, runtime_manifest(), model_manifest(), runtime_manifest())
    assert reply.allowed is True


def test_the_webhook_rejects_a_runtime_whose_accelerator_classes_do_not_exist(harness: Harness) -> None:
    reply = admit(harness, runtime_70b_manifest(), model_manifest())
    assert reply.allowed is False
    assert (
        reply.denial.message
        == "unknown accelerator classes referenced in AcceleratorRequirements: [nvidia-h100 nvidia-l40s]"
    )
    assert keys(reply) == [("AcceleratorClass", "", "nvidia-h100"), ("AcceleratorClass", "", "nvidia-l40s")]


def test_accelerator_classes_the_caller_read_are_known(harness: Harness) -> None:
    classes = [
        {"apiVersion": "ome.io/v1beta1", "kind": "AcceleratorClass", "metadata": {"name": n}}
        for n in ("nvidia-h100", "nvidia-l40s")
    ]
    reply = admit(harness, runtime_70b_manifest(), model_manifest(), *classes)
    assert reply.allowed is True
    assert list(reply.missing) == []


def test_the_webhook_rejects_a_runtime_with_an_autoscaler_policy_ref(harness: Harness) -> None:
    doc = plain_runtime("srt-a", autoscalerPolicyRef={"name": "p"}, disabled=True)
    reply = admit(harness, doc)
    assert reply.denial.message == (
        "autoscalerPolicyRef is not allowed in runtime srt-a: attach the autoscaler policy in the InferenceService"
    )


def test_the_webhook_rejects_a_runtime_scaling_mode_but_independent_even_when_disabled(harness: Harness) -> None:
    doc = plain_runtime("srt-a", scalingPolicy={"mode": "Coordinated"}, disabled=True)
    reply = admit(harness, doc)
    assert reply.denial.kind == "ScalingModeNotImplemented"
    assert reply.denial.message == (
        "ScalingModeNotImplemented: scalingPolicy mode Coordinated is not implemented; only Independent is supported"
    )


MULTINODE = (
    "invalid configuration: for MultiNode deployment, both leader and worker must be defined"
    " and worker.size must be greater than 0"
)
RAW = "invalid configuration: for RawDeployment, leader and worker must not be defined"


def _env(mode: str) -> list[dict[str, Any]]:
    return [{"name": "c", "env": [{"name": "DEPLOYMENT_MODE", "value": mode}]}]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"workers": {"size": 0}}, MULTINODE),
        ({"engineConfig": {}, "containers": _env("MultiNode")}, MULTINODE),
        ({"engineConfig": {}, "containers": _env("RawDeployment"), "workers": {"size": 2}}, RAW),
    ],
)
def test_the_webhook_rejects_an_invalid_deployment_configuration(
    harness: Harness, spec: dict[str, Any], message: str
) -> None:
    assert admit(harness, plain_runtime("srt-a", **spec)).denial.message == message


def test_a_pd_disaggregated_or_disabled_runtime_is_not_checked_for_its_configuration(harness: Harness) -> None:
    both = plain_runtime("srt-a", engineConfig={}, decoderConfig={}, workers={"size": 0})
    assert admit(harness, both).allowed is True
    disabled = plain_runtime("srt-a", workers={"size": 0}, disabled=True)
    assert admit(harness, disabled).allowed is True


def test_the_webhook_rejects_different_priorities_for_one_model_format_in_a_runtime(harness: Harness) -> None:
    entries = [{**PLAIN, "name": "llama", "priority": 1}, {**PLAIN, "name": "llama", "priority": 2}]
    doc = plain_runtime("srt-b", supportedModelFormats=entries)
    reply = admit(harness, doc, plain_runtime("srt-a"))
    assert (
        reply.denial.message
        == "different priorities assigned for the model format llama under the servingruntime srt-b"
    )
    cluster = plain_runtime("csr-b", kind="ClusterServingRuntime", supportedModelFormats=entries)
    reply = admit(harness, cluster, plain_runtime("csr-a", kind="ClusterServingRuntime"))
    assert reply.denial.message == (
        "different priorities assigned for the model format llama under the clusterservingruntime csr-b"
    )


def test_different_priorities_are_checked_only_while_the_scope_holds_a_runtime_of_the_kind(harness: Harness) -> None:
    entries = [{**PLAIN, "name": "llama", "priority": 1}, {**PLAIN, "name": "llama", "priority": 2}]
    doc = plain_runtime("srt-b", supportedModelFormats=entries)
    assert admit(harness, doc, plain_runtime("csr-a", kind="ClusterServingRuntime")).allowed is True


def test_the_same_priority_as_another_runtime_is_admitted_with_a_warning_naming_both_and_the_format(
    harness: Harness,
) -> None:
    # OME's check never fires (it compares pointers), so OME admits; the warning names the
    # reviewed runtime's entry's own name, else its modelFormat.name (catalog runtimes set no name)
    other = plain_runtime("srt-a", supportedModelFormats=[{**PLAIN, "name": "llama", "priority": 1}])
    reply = admit(
        harness, plain_runtime("srt-b", supportedModelFormats=[{**PLAIN, "name": "Llama", "priority": 1}]), other
    )
    assert reply.allowed is True
    assert list(reply.warnings) == [
        "same priority assigned for the model format Llama in the servingruntimes srt-a and srt-b"
        f" in namespace {NAMESPACE}"
    ]
    cluster = plain_runtime("csr-b", kind="ClusterServingRuntime")
    reply = admit(harness, cluster, plain_runtime("csr-a", kind="ClusterServingRuntime"))
    assert reply.allowed is True
    assert list(reply.warnings) == [
        "same priority assigned for the model format safetensors in the clusterservingruntimes csr-a and csr-b"
    ]


def test_entries_compare_by_value_with_the_crd_defaults(harness: Harness) -> None:
    """The API server stores each modelFormat and modelFramework with operator Equal and weight 1
    (the CRD's defaults): such entries are the same model format as entries that leave them unset."""
    defaulted = {"name": "safetensors", "version": "1.0.0", "operator": "Equal", "weight": 1}
    stored = {**PLAIN, "modelFormat": defaulted, "modelFramework": {"name": "transformers", "operator": "Equal"}}
    other = plain_runtime("srt-a", supportedModelFormats=[{**stored, "priority": 1}])
    mine = {**PLAIN, "modelFormat": {"name": "safetensors", "version": "1.0.0"}, "priority": 1}
    reply = admit(harness, plain_runtime("srt-b", supportedModelFormats=[mine]), other)
    assert list(reply.warnings) == [
        "same priority assigned for the model format safetensors in the servingruntimes srt-a and srt-b"
        f" in namespace {NAMESPACE}"
    ]


@pytest.mark.parametrize(
    "other",
    [
        plain_runtime("srt-b"),  # the runtime itself: an update
        plain_runtime("srt-a", disabled=True),
        plain_runtime("srt-a", protocolVersions=["grpc-v2"]),
        plain_runtime("srt-a", modelSizeRange={"min": "1B"}),
        plain_runtime("srt-a", supportedModelFormats=[{**PLAIN, "priority": 2}]),
        plain_runtime("srt-a", supportedModelFormats=[{**PLAIN, "autoSelect": False, "priority": 1}]),
        plain_runtime("csr-a", kind="ClusterServingRuntime"),
        # a format version the other entry does not declare
        plain_runtime(
            "srt-a", supportedModelFormats=[{**PLAIN, "modelFormat": {"name": "safetensors", "version": "1"}}]
        ),
    ],
)
def test_no_same_priority_warning_where_ome_does_not_compare(harness: Harness, other: dict[str, Any]) -> None:
    reply = admit(harness, plain_runtime("srt-b"), other)
    assert (reply.allowed, list(reply.warnings)) == (True, [])


# -- bad input ---------------------------------------------------------------------------------


def test_an_admit_without_an_object_is_invalid(harness: Harness) -> None:
    assert_invalid(harness.call("Admit", pb.AdmitRequest()), "object")


def test_an_object_of_a_kind_without_a_webhook_is_invalid(harness: Harness) -> None:
    result = harness.call("Admit", pb.AdmitRequest(object=manifest_object(model_manifest())))
    assert_invalid(result, "object.kind")


def test_a_bad_manifest_names_its_field(harness: Harness) -> None:
    doc = runtime_manifest()
    doc["spec"]["supportedModelFormats"] = [{"modelFramework": {"name": "transformers"}}]
    result = harness.call("Admit", pb.AdmitRequest(object=manifest_object(doc)))
    assert_invalid(result, "object.spec.supportedModelFormats[0].modelFormat")


def test_a_review_is_never_answered_from_the_decision_cache_yet_the_decision_log_records_it(
    fresh: Harness, tmp_path: Path
) -> None:
    """A review is of an object just written: its answer is not kept to evict decisions with."""
    log = tmp_path / "decisions.jsonl"
    fresh.servicer.decisions = DecisionLog(log)
    hits = obs.REGISTRY.get_sample_value("policyd_decision_cache_hits_total") or 0.0
    first, second = (admit(fresh, isvc_manifest(), model_manifest(), runtime_manifest()) for _ in range(2))
    assert first == second
    assert obs.REGISTRY.get_sample_value("policyd_decision_cache_hits_total") == hits
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(r["rpc"], r["cached"]) for r in records] == [("Admit", False), ("Admit", False)]


# -- what OME reads otherwise than written: admitted, decided as OME decides, with a warning


def test_a_runtime_with_fields_ome_reads_otherwise_is_admitted_with_a_warning_naming_each(harness: Harness) -> None:
    entry = {
        **PLAIN,
        "modelFormat": {"name": "safetensors", "version": "04.45.0"},
        "modelFramework": {"name": "transformers", "version": "4.46.0", "operator": "LessThan"},
    }
    doc = plain_runtime("srt-a", supportedModelFormats=[entry], modelSizeRange={"min": "2b", "max": "1B"})
    reply = admit(harness, doc)
    assert reply.allowed is True
    assert list(reply.warnings) == [
        "spec.supportedModelFormats[0].modelFormat.version: '04.45.0' is not a version OME reads;"
        " it matches no version; spec.supportedModelFormats[0].modelFramework.operator: 'LessThan' is not an"
        " operator OME reads; it compares as Equal; spec.modelSizeRange.min: '2b' is not a size OME reads;"
        " it counts as 0"
    ]


def test_a_model_size_ome_cannot_read_is_admitted_with_a_warning(harness: Harness) -> None:
    model = model_manifest()
    model["spec"]["modelParameterSize"] = "7.7 B"
    reply = admit(harness, isvc_manifest(), model, runtime_manifest())
    # OME reads 0, outside the runtime's [2B, 4B]: nothing is selected
    assert reply.allowed is False
    assert f"Excluded runtimes: {RUNTIME_NAME} (model size 7.7 B is outside supported range [2B, 4B])" in (
        reply.denial.message
    )
    wide = runtime_manifest()
    wide["spec"]["modelSizeRange"] = {"min": "0", "max": "4B"}
    reply = admit(harness, isvc_manifest(), model, wide)
    assert list(reply.warnings) == [
        "spec.modelParameterSize: '7.7 B' is not a size OME reads; it counts as 0",
        f"Runtime {RUNTIME_NAME} will be auto-selected for model {MODEL_NAME}",
    ]


@pytest.mark.parametrize("component", ["engineConfig", "decoderConfig", "routerConfig"])
def test_the_webhook_rejects_autoscaler_policy_ref_in_each_component_of_a_runtime(
    harness: Harness, component: str
) -> None:
    doc = plain_runtime("srt-a", **{component: {"autoscalerPolicyRef": {"name": "p"}}})
    reply = admit(harness, doc)
    assert reply.denial.message == (
        f"{component}.autoscalerPolicyRef is not allowed in runtime srt-a: attach the autoscaler policy in the"
        " InferenceService"
    )
    assert reply.denial.field == f"spec.{component}.autoscalerPolicyRef"


OPERATORS = "GreaterThan, GreaterThanOrEqual, LessThan, LessThanOrEqual"


@pytest.mark.parametrize(
    ("keda", "annotations", "message"),
    [
        ({"scalingOperator": "Above"}, {}, f'invalid KEDA scaling operator "Above", must be one of: {OPERATORS}'),
        ({}, {"autoscaling.keda.sh/operator": ""}, f'invalid KEDA scaling operator "", must be one of: {OPERATORS}'),
        ({"scalingThreshold": "ten"}, {}, 'invalid KEDA scaling threshold "ten": must be a valid number'),
        ({}, {"autoscaling.keda.sh/threshold": "1_0"}, 'invalid KEDA scaling threshold "1_0": must be a valid number'),
        (
            {"promServerAddress": "prometheus:9090"},
            {},
            'invalid KEDA Prometheus server address "prometheus:9090": scheme must be http or https',
        ),
        (
            {},
            {"autoscaling.keda.sh/prometheus.serverAddress": "http:///api"},
            'invalid KEDA Prometheus server address "http:///api": host is required',
        ),
        (
            {"promServerAddress": ":9090"},
            {},
            'invalid KEDA Prometheus server address ":9090": parse ":9090": missing protocol scheme',
        ),
        ({"authModes": "tls, oauth"}, {}, 'invalid KEDA auth mode "oauth", must be one of: basic, tls, bearer, custom'),
        # spec.kedaConfig's operator is checked before the annotation's
        (
            {"scalingOperator": "Above"},
            {"autoscaling.keda.sh/operator": "Below"},
            f'invalid KEDA scaling operator "Above", must be one of: {OPERATORS}',
        ),
    ],
)
def test_the_webhook_rejects_keda_settings_ome_s_validate_keda_config_refuses(
    harness: Harness, keda: dict[str, str], annotations: dict[str, str], message: str
) -> None:
    doc = isvc_manifest(kedaConfig=keda)
    doc["metadata"]["annotations"] = {"ome.io/autoscalerClass": "keda", **annotations}
    reply = admit(harness, doc)
    assert (reply.allowed, reply.denial.message) == (False, message)


def test_keda_settings_are_checked_only_with_the_keda_class_and_good_ones_are_admitted(harness: Harness) -> None:
    doc = isvc_manifest(kedaConfig={"scalingOperator": "Above"})
    assert admit(harness, doc).allowed is True
    good = {
        "scalingOperator": "GreaterThanOrEqual",
        "scalingThreshold": "1e2",
        "promServerAddress": "http://prometheus.monitoring:9090",
        "authModes": "basic,tls",
    }
    doc = isvc_manifest(kedaConfig=good)
    doc["metadata"]["annotations"] = {"ome.io/autoscalerClass": "keda", "autoscaling.keda.sh/threshold": "0x1p3"}
    assert admit(harness, doc).allowed is True

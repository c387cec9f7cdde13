"""Pure decisions (Select, Explain, Resolve, effective modes) in the spec's words, for behaviour the
shared conformance cases do not pin down already."""

from __future__ import annotations

from typing import Any

import pytest
from testkit.deciding import effective, explain_isvc, explain_model, resolve, select

from policyd.catalog.snapshot import Catalog
from policyd.decision.answers import Effective, Resolution, Selection
from policyd.decision.lookup import lookup
from policyd.decision.verdicts import RuntimeVerdict
from policyd.errors import InvalidInput
from policyd.resources.objects import ModelRef

from .builders import (
    MODEL,
    NAMESPACE,
    catalog,
    default_revision,
    entry,
    isvc,
    mode_annotation,
    model,
    parsed_isvc,
    runtime,
)

LABEL = "mt:safetensors:1.0.0:LlamaForCausalLM:transformers:4.45.0.dev0"
NOT_IN_FORMATS = f"model format '{LABEL}' not in supported formats: "
NAMED = "; proceeding because the runtime was named explicitly"


def run_select(cat: Catalog, request: dict[str, Any]) -> Selection:
    return select(cat, parsed_isvc(request), default_revision())


def run_resolve(cat: Catalog, request: dict[str, Any], mode: str = "v1.3") -> Resolution:
    return resolve(cat, parsed_isvc(request), default_revision(), mode)


def explained(cat: Catalog, request: dict[str, Any]) -> dict[str, RuntimeVerdict]:
    return {e.runtime.meta.name: e for e in explain_isvc(cat, parsed_isvc(request), default_revision()).runtimes}


# == Select ==========================================================================================


def test_select_warns_which_runtime_will_be_auto_selected() -> None:
    selection = run_select(catalog(model(), runtime("srt-llama-3-2-3b-instruct")), isvc())
    assert selection.error == ""
    assert selection.warnings == ("Runtime srt-llama-3-2-3b-instruct will be auto-selected for model " + MODEL,)


def test_no_runtime_message_lists_excluded_runtimes_joined_by_semicolons_with_the_counts() -> None:
    cat = catalog(
        model(),
        runtime("sr-onnx", kind="ServingRuntime", entries=[entry(fmt=("onnx", "1.0.0"))]),
        runtime("sr-elsewhere", kind="ServingRuntime", namespace="other-team"),
        runtime("csr-big", size_range=("60B", "75B")),
        runtime("csr-manual", entries=[entry(auto_select=False)]),
        runtime("csr-off", disabled=True),
    )
    selection = run_select(cat, isvc())
    assert selection.ranking == ()
    assert selection.error == (
        "no runtime found to support model safetensors with format safetensors in namespace llama-demo."
        " Checked 4 runtimes (1 namespace-scoped, 3 cluster-scoped). Excluded runtimes: "
        f"sr-onnx ({NOT_IN_FORMATS}format name mismatch (model=safetensors, runtime=onnx)); "
        "csr-big (model size 3B is outside supported range [60B, 75B]); "
        "csr-off (runtime is disabled)"
    )
    assert [e.runtime.meta.name for e in selection.excluded] == ["sr-onnx", "csr-big", "csr-off"]


def test_a_disabled_runtime_is_excluded_as_disabled_even_when_it_supports_the_model() -> None:
    cat = catalog(model(), runtime("srt-off", disabled=True))
    selection = run_select(cat, isvc())
    assert selection.error.endswith("Excluded runtimes: srt-off (runtime is disabled)")
    (off,) = selection.excluded
    assert off.reason is not None and off.reason.message == "runtime is disabled"
    assert off.compatible and not off.selectable  # it still declares support; it just can't be picked


def test_excluded_runtimes_are_listed_only_when_nothing_is_selectable() -> None:
    selection = run_select(catalog(model(), runtime("srt-off", disabled=True), runtime("srt-on")), isvc())
    assert [e.runtime.meta.name for e in selection.ranking] == ["srt-on"]
    assert selection.error == "" and selection.excluded == ()


def test_a_runtime_without_auto_select_is_not_listed_as_excluded() -> None:
    cat = catalog(
        model(),
        runtime("srt-manual", entries=[entry(auto_select=False)]),
        runtime("srt-unset", entries=[entry(auto_select=None)]),
    )
    selection = run_select(cat, isvc())
    assert selection.excluded == ()
    assert selection.error.endswith("Checked 2 runtimes (0 namespace-scoped, 2 cluster-scoped)")


def test_a_disabled_runtime_is_reported_as_disabled_before_its_other_problems() -> None:
    cat = catalog(model(), runtime("srt-off", disabled=True, entries=[entry(fmt=("onnx", "1.0.0"))]))
    assert run_select(cat, isvc()).error.endswith("Excluded runtimes: srt-off (runtime is disabled)")


def test_only_runtimes_in_the_namespace_and_at_cluster_scope_are_checked_and_none_checked_is_not_counted() -> None:
    cat = catalog(model(), runtime("sr-other", kind="ServingRuntime", namespace="other-team"))
    selection = run_select(cat, isvc())
    assert (
        selection.error
        == "no runtime found to support model safetensors with format safetensors in namespace " + NAMESPACE
    )
    assert selection.refusal is not None and selection.refusal.kind == "RuntimeNotFound"


def test_select_without_spec_model_or_a_named_runtime_is_refused_as_the_webhook_does() -> None:
    selection = run_select(catalog(model(), runtime()), isvc(model_name=None, runtime_name=None))
    assert selection.refusal is not None
    assert selection.refusal.message == (
        "model reference is required when runtime is not specified and engine does not have complete runner"
        " configuration"
    )
    assert (selection.refusal.kind, selection.refusal.field) == ("ValidationError", "spec.runtime.name")


def test_select_without_spec_model_for_a_named_runtime_is_invalid_input_naming_spec_model() -> None:
    with pytest.raises(InvalidInput) as err:
        run_select(catalog(model(), runtime()), isvc(model_name=None, runtime_name="srt-llama"))
    assert err.value.field == "spec.model"


def test_select_for_a_model_that_does_not_exist_is_refused_naming_spec_model_name() -> None:
    selection = run_select(catalog(model(), runtime()), isvc(model_name="nope"))
    assert selection.refusal is not None
    assert (selection.refusal.field, selection.refusal.message) == (
        "spec.model.name",
        'referenced model "nope" not found in namespace "llama-demo": ensure a BaseModel exists in this namespace'
        " or a ClusterBaseModel exists cluster-wide with this name",
    )
    assert selection.refusal.condition_reason == "RuntimeValidationError"


def test_a_base_model_is_looked_up_in_the_inference_service_namespace() -> None:
    cat = catalog(model("ns-model", kind="BaseModel", namespace="llama-demo"), runtime())
    assert run_select(cat, isvc(model_name="ns-model", model_kind="BaseModel")).ranking
    other = run_select(cat, isvc(model_name="ns-model", model_kind="BaseModel", namespace="other-team"))
    assert other.error.startswith('referenced model "ns-model" not found in namespace "other-team": ')
    assert run_select(cat, isvc(model_name="ns-model")).refusal is not None


# -- scoring --------------------------------------------------------------------------------------


def weighted_entry(format_weight: int | None, framework_weight: int | None, **fields: Any) -> dict[str, Any]:
    body = entry(**fields)
    if format_weight is not None:
        body["modelFormat"]["weight"] = format_weight
    if framework_weight is not None:
        body["modelFramework"]["weight"] = framework_weight
    return body


@pytest.mark.parametrize(
    ("entries", "score"),
    [
        ([weighted_entry(None, None, priority=None)], (1 + 1) * 1),  # weight and priority default to 1
        ([weighted_entry(0, None, priority=3)], (10 + 1) * 3),  # OME reads an explicit format weight 0 as 10
        ([weighted_entry(None, 0, priority=3)], (1 + 5) * 3),  # and a framework weight 0 as 5
        ([weighted_entry(5, 2, priority=2)], (5 + 2) * 2),
        ([weighted_entry(1, 1, priority=1), weighted_entry(3, 1, priority=2)], (3 + 1) * 2),  # the best entry
        ([weighted_entry(9, 9, priority=9, auto_select=False), entry(priority=2)], (1 + 1) * 2),  # autoSelect false
        ([weighted_entry(9, 9, priority=9, auto_select=None), entry(priority=2)], (9 + 9) * 9),  # unset counts
        ([weighted_entry(9, 9, priority=9, fmt=("onnx", "1.0.0")), entry(priority=2)], (1 + 1) * 2),  # other format
        # OME scores an entry on its format and framework alone: another architecture still scores
        ([weighted_entry(9, 9, priority=9, architecture="MistralForCausalLM"), entry(priority=2)], (9 + 9) * 9),
    ],
)
def test_score_is_format_weight_plus_framework_weight_times_priority_of_the_best_entry(
    entries: list[dict[str, Any]], score: int
) -> None:
    verdicts = explained(catalog(model(), runtime("rt", entries=entries)), isvc())
    assert verdicts["rt"].selectable
    assert verdicts["rt"].score == score


def test_the_matched_entry_is_the_first_best_by_weights_scored_with_the_default_priority() -> None:
    # OME takes acceleratorConfig from the entry that best matches the model's format and framework
    entries = [entry(priority=1), entry(priority=4), weighted_entry(2, 1)]
    assert explained(catalog(model(), runtime("rt", entries=entries)), isvc())["rt"].entry_index == 2
    same = [entry(priority=1), entry(priority=4)]
    assert explained(catalog(model(), runtime("rt", entries=same)), isvc())["rt"].entry_index == 0


# -- ranking ---------------------------------------------------------------------------------------


def test_ranking_is_kind_then_score_then_closest_size_range_then_name() -> None:
    cat = catalog(
        model(size="3B"),
        runtime("csr-high-score", entries=[entry(priority=3)], size_range=("1B", "8B")),
        runtime("csr-low-wide", size_range=("1B", "8B")),
        runtime("csr-low-narrow", size_range=("2B", "4B")),
        runtime("csr-low-no-range-b"),
        runtime("csr-low-no-range-a"),
        runtime("sr-b", kind="ServingRuntime"),
        runtime("sr-a-wide", kind="ServingRuntime", size_range=("1B", "70B")),
        runtime("sr-c-default-priority", kind="ServingRuntime", entries=[entry(priority=None, auto_select=True)]),
    )
    selection = run_select(cat, isvc())
    assert [e.runtime.meta.name for e in selection.ranking] == [
        "sr-b",  # ServingRuntimes first; same score, no range is closest
        "sr-c-default-priority",
        "sr-a-wide",
        "csr-high-score",  # then the highest score, whatever its range
        "csr-low-no-range-a",  # then no range, by name
        "csr-low-no-range-b",
        "csr-low-narrow",
        "csr-low-wide",
    ]


def test_an_unknown_model_size_makes_every_range_equally_close() -> None:
    cat = catalog(
        model(size=None), runtime("b-narrow", size_range=("2B", "4B")), runtime("a-wide", size_range=("1B", "80B"))
    )
    assert [e.runtime.meta.name for e in run_select(cat, isvc()).ranking] == ["a-wide", "b-narrow"]


# == Resolve ===========================================================================================


def both_kinds(name: str = "shared-rt") -> list[dict[str, Any]]:
    return [
        runtime(name, entries=[entry(priority=1)]),
        runtime(name, kind="ServingRuntime", entries=[entry(priority=2)]),
    ]


def found_kind(cat: Catalog, request: dict[str, Any], mode: str = "v1.3") -> str | None:
    rt = lookup(cat, parsed_isvc(request), mode)
    return rt.kind if rt else None


def test_default_kind_looks_at_cluster_scope_then_the_namespace() -> None:
    named = isvc(runtime_name="shared-rt")
    assert found_kind(catalog(model(), *both_kinds()), named) == "ClusterServingRuntime"
    assert found_kind(catalog(model(), both_kinds()[1]), named) == "ServingRuntime"
    explicit = isvc(runtime_name="shared-rt", runtime_kind="ClusterServingRuntime")
    assert found_kind(catalog(model(), both_kinds()[1]), explicit) == "ServingRuntime"


def test_kind_servingruntime_looks_only_in_the_namespace() -> None:
    named = isvc(runtime_name="shared-rt", runtime_kind="ServingRuntime")
    assert found_kind(catalog(model(), *both_kinds()), named) == "ServingRuntime"
    assert found_kind(catalog(model(), both_kinds()[0]), named) is None


def test_a_servingruntime_in_another_namespace_is_not_found() -> None:
    other = runtime("shared-rt", kind="ServingRuntime", namespace="other-team")
    assert found_kind(catalog(model(), other), isvc(runtime_name="shared-rt")) is None


def test_v1_2_2_lookup_looks_in_the_namespace_first_and_ignores_kind() -> None:
    cat = catalog(model(), *both_kinds())
    assert found_kind(cat, isvc(runtime_name="shared-rt"), "v1.2.2") == "ServingRuntime"
    explicit = isvc(runtime_name="shared-rt", runtime_kind="ClusterServingRuntime")
    assert found_kind(cat, explicit, "v1.2.2") == "ServingRuntime"
    only_cluster = catalog(model(), both_kinds()[0])
    kind_sr = isvc(runtime_name="shared-rt", runtime_kind="ServingRuntime")
    assert found_kind(only_cluster, kind_sr, "v1.2.2") == "ClusterServingRuntime"
    resolution = run_resolve(cat, isvc(runtime_name="shared-rt"), "v1.2.2")
    assert resolution.runtime is not None and resolution.runtime.kind == "ServingRuntime"


def test_an_unknown_lookup_is_invalid_input() -> None:
    with pytest.raises(InvalidInput) as err:
        run_resolve(catalog(model(), runtime()), isvc(runtime_name="srt-llama"), "v1.4")
    assert err.value.field == "lookup"


# -- rejections -------------------------------------------------------------------------------------


def test_a_missing_runtime_is_rejected_with_the_webhook_text_and_the_runtime_not_found_condition() -> None:
    resolution = run_resolve(catalog(model()), isvc(runtime_name="srt-llama-3-2-1b-instruct"))
    assert resolution.runtime is None
    rejection = resolution.refusal
    assert rejection is not None
    assert rejection.message == "srt-llama-3-2-1b-instruct not found in namespace llama-demo"
    assert rejection.field == "spec.runtime.name"
    assert rejection.condition_reason == "RuntimeNotFound"
    assert rejection.condition_message == (
        "runtime srt-llama-3-2-1b-instruct not found in namespace llama-demo or at cluster scope"
    )


def test_without_a_model_a_missing_runtime_is_not_an_admission_error_but_sets_the_condition() -> None:
    resolution = run_resolve(catalog(), isvc(model_name=None, runtime_name="srt-gone"))
    rejection = resolution.refusal
    assert rejection is not None
    assert rejection.message == ""
    assert rejection.condition_reason == "RuntimeNotFound"
    assert rejection.condition_message == "runtime srt-gone not found in namespace llama-demo or at cluster scope"


def test_a_disabled_runtime_is_rejected() -> None:
    resolution = run_resolve(catalog(model(), runtime("srt-off", disabled=True)), isvc(runtime_name="srt-off"))
    assert resolution.refusal is not None
    assert resolution.refusal.message == "cluster-scoped runtime srt-off is disabled"
    assert resolution.refusal.field == "spec.runtime.name"


def test_a_disabled_model_is_rejected() -> None:
    resolution = run_resolve(catalog(model(disabled=True), runtime()), isvc(runtime_name="srt-llama"))
    assert resolution.refusal is not None
    assert resolution.refusal.message == f"model {MODEL} is disabled"
    assert "is disabled" in resolution.refusal.message


def test_a_sharded_model_is_rejected() -> None:
    resolution = run_resolve(catalog(model(distribution="Sharded"), runtime()), isvc(runtime_name="srt-llama"))
    assert resolution.refusal is not None
    assert resolution.refusal.message.endswith("no model cache provider is configured for sharded model loading")


def test_the_webhook_rejects_a_base_model_that_does_not_exist() -> None:
    resolution = run_resolve(catalog(runtime()), isvc(runtime_name="srt-llama"))
    assert resolution.refusal is not None
    assert resolution.refusal.message == (
        f'referenced model "{MODEL}" not found in namespace "llama-demo": ensure a BaseModel exists in this'
        " namespace or a ClusterBaseModel exists cluster-wide with this name"
    )
    assert resolution.refusal.field == "spec.model.name"


def test_an_inference_service_with_neither_model_nor_runtime_is_rejected() -> None:
    resolution = run_resolve(catalog(runtime()), isvc(model_name=None))
    assert resolution.runtime is None
    assert resolution.refusal is not None
    assert resolution.refusal.message == (
        "model reference is required when runtime is not specified and engine does not have complete runner"
        " configuration"
    )
    assert resolution.refusal.field == "spec.runtime.name"


def test_resolve_without_a_named_runtime_is_invalid_input() -> None:
    with pytest.raises(InvalidInput) as err:
        run_resolve(catalog(model(), runtime()), isvc())
    assert err.value.field == "spec.runtime.name"


def test_an_autoscaler_policy_ref_in_the_runtime_is_refused() -> None:
    cat = catalog(model(), runtime("srt-scaled", autoscalerPolicyRef={"name": "kpa"}))
    rejection = run_resolve(cat, isvc(runtime_name="srt-scaled")).refusal
    assert rejection is not None
    assert rejection.field == "spec.autoscalerPolicyRef"
    assert "autoscalerPolicyRef" in rejection.message and "srt-scaled" in rejection.message


def test_a_scaling_mode_other_than_independent_is_not_implemented() -> None:
    request = isvc(runtime_name="srt-llama", scalingPolicy={"mode": "Coordinated"})
    rejection = run_resolve(catalog(model(), runtime()), request).refusal
    assert rejection is not None
    assert "ScalingModeNotImplemented" in rejection.message and "Coordinated" in rejection.message
    assert rejection.field == "spec.scalingPolicy.mode"


@pytest.mark.parametrize("policy", [{"mode": "Independent"}, {}])
def test_independent_scaling_is_accepted_and_is_the_default(policy: dict[str, Any]) -> None:
    request = isvc(runtime_name="srt-llama", scalingPolicy=policy)
    assert run_resolve(catalog(model(), runtime()), request).refusal is None


def test_the_runtime_s_scaling_policy_applies_unless_the_inference_service_replaces_it() -> None:
    cat = catalog(model(), runtime("srt-llama", scalingPolicy={"mode": "Coordinated"}))
    rejection = run_resolve(cat, isvc(runtime_name="srt-llama")).refusal
    assert rejection is not None and "ScalingModeNotImplemented" in rejection.message
    assert "srt-llama" in rejection.field and rejection.field.endswith("spec.scalingPolicy.mode")
    replaced = isvc(runtime_name="srt-llama", scalingPolicy={"mode": "Independent"})
    assert run_resolve(cat, replaced).refusal is None


# -- a named runtime that does not declare support ----------------------------------------------------------


def named_texts(rt: dict[str, Any], request: dict[str, Any], mdl: dict[str, Any] | None = None) -> Resolution:
    resolution = run_resolve(catalog(mdl or model(), rt), request)
    assert resolution.refusal is None
    assert resolution.runtime is not None and resolution.runtime.meta.name == rt["metadata"]["name"]
    return resolution


def test_a_named_runtime_that_supports_the_model_is_used_without_warning_even_without_auto_select() -> None:
    resolution = named_texts(runtime("srt-manual", entries=[entry(auto_select=False)]), isvc(runtime_name="srt-manual"))
    assert (resolution.warning, resolution.event) == ("", "")
    assert resolution.verdict is not None and resolution.verdict.compatible


def test_a_named_runtime_with_other_formats_gets_the_warning_and_the_advisory_event() -> None:
    rt = runtime("srt-onnx", entries=[entry(fmt=("onnx", "1.0.0"))])
    resolution = named_texts(rt, isvc(runtime_name="srt-onnx"))
    detail = (
        f"runtime srt-onnx does not support model safetensors: {NOT_IN_FORMATS}"
        "format name mismatch (model=safetensors, runtime=onnx)"
    )
    assert resolution.warning == f'runtime "srt-onnx" does not declare support for model "{MODEL}" ({detail}){NAMED}'
    assert resolution.event == f"Runtime srt-onnx does not declare support for model {MODEL} ({detail}){NAMED}"


def test_a_named_runtime_outside_its_size_range_does_not_declare_support() -> None:
    rt = runtime("srt-70b", size_range=("60B", "75B"))
    resolution = named_texts(rt, isvc(runtime_name="srt-70b"))
    reason = "model size 3B is outside supported range [60B, 75B]"
    assert resolution.warning.startswith(f'runtime "srt-70b" does not declare support for model "{MODEL}" (')
    assert resolution.warning.endswith(f"{reason}){NAMED}")
    assert resolution.event.startswith(f"Runtime srt-70b does not declare support for model {MODEL} (")
    assert resolution.event.endswith(f"{reason}){NAMED}")


def test_a_named_runtime_that_does_not_list_the_accelerator_class_does_not_declare_support() -> None:
    rt = runtime("srt-h100", classes=["nvidia-h100"])
    request = isvc(runtime_name="srt-h100", acceleratorSelector={"acceleratorClass": "nvidia-l40s"})
    resolution = named_texts(rt, request)
    reason = "runtime does not support the required accelerator class"
    assert resolution.warning.startswith(f'runtime "srt-h100" does not declare support for model "{MODEL}" (')
    assert resolution.warning.endswith(f"{reason}){NAMED}")
    assert resolution.event.endswith(f"{reason}){NAMED}")


def test_a_named_runtime_with_another_deployment_mode_gets_ome_s_warning() -> None:
    rt = runtime("srt-multinode", engine_mode="MultiNode")
    resolution = named_texts(rt, isvc(runtime_name="srt-multinode", deploymentMode="OMENative"))
    detail = (
        "runtime srt-multinode does not support model : runtime engine deployment mode MultiNode"
        " does not match requested engine deployment mode OMENative"
    )
    assert (
        resolution.warning == f'runtime "srt-multinode" does not declare support for model "{MODEL}" ({detail}){NAMED}'
    )


def test_a_pinned_named_runtime_gets_the_warning_but_no_advisory_event() -> None:
    rt = runtime("srt-onnx", entries=[entry(fmt=("onnx", "1.0.0"))])
    resolution = named_texts(rt, isvc(runtime_name="srt-onnx", auto_sync=False))
    assert resolution.warning.startswith('runtime "srt-onnx" does not declare support')
    assert resolution.event == ""


def test_without_an_engine_there_is_no_webhook_warning_but_the_event_is_recorded() -> None:
    rt = runtime("srt-onnx", entries=[entry(fmt=("onnx", "1.0.0"))])
    request = isvc(runtime_name="srt-onnx")
    del request["spec"]["engine"]
    resolution = named_texts(rt, request)
    assert resolution.warning == ""
    assert resolution.event.startswith("Runtime srt-onnx does not declare support for model")


def test_a_named_runtime_takes_its_best_entry_counting_entries_without_auto_select() -> None:
    # "counting only entries with autoSelect: true when OME chose the runtime": a named one counts all
    entries = [entry(priority=5, auto_select=False), entry(priority=1, auto_select=True)]
    resolution = named_texts(runtime("srt-two", entries=entries), isvc(runtime_name="srt-two"))
    assert resolution.entry_index == 0


def test_an_auto_selected_runtime_takes_its_best_auto_select_entry() -> None:
    entries = [entry(priority=5, auto_select=False), entry(priority=1, auto_select=True)]
    verdicts = explained(catalog(model(), runtime("srt-two", entries=entries)), isvc())
    assert verdicts["srt-two"].entry_index == 1


# == Explain without an InferenceService ======================================================================


def test_explaining_a_model_alone_requests_no_mode_and_no_accelerator_class() -> None:
    cat = catalog(model(), runtime("srt-multinode", engine_mode="MultiNode", classes=["nvidia-h100"]))
    explanation = explain_model(cat, ModelRef(MODEL), NAMESPACE, default_revision())
    (only,) = explanation.runtimes
    assert only.selectable and only.compatible
    assert explanation.model_format == LABEL


# == Effective modes ===========================================================================================


def modes_of(request: dict[str, Any], rt: dict[str, Any] | None) -> Effective:
    cat = catalog(model(), rt) if rt else catalog(model())
    return effective(cat, parsed_isvc(request), default_revision())


def test_effective_modes_report_the_rule_that_set_each_component_s_mode() -> None:
    rt = runtime(engine_mode="OMENative", decoder_mode="OMENative", router_mode="RawDeployment")
    request = isvc(
        engine=mode_annotation("OMENative"),
        decoder={},
        router={},
        deploymentMode="OMENative",
    )
    effective = modes_of(request, rt)
    assert [(m.component, m.mode, m.source) for m in effective.modes] == [
        ("engine", "OMENative", "InferenceService spec.engine.annotations[ome.io/deploymentMode]"),
        ("decoder", "OMENative", "runtime decoderConfig.annotations[ome.io/deploymentMode]"),
        ("router", "RawDeployment", "runtime routerConfig.annotations[ome.io/deploymentMode]"),
    ]
    assert effective.errors == ()


def test_effective_modes_cover_only_the_components_the_inference_service_declares() -> None:
    rt = runtime(engine_mode="MultiNode", decoder_mode="MultiNode", router_mode="MultiNode")
    effective = modes_of(isvc(), rt)
    assert [(m.component, m.mode) for m in effective.modes] == [("engine", "MultiNode")]
    assert effective.errors == ()


def test_effective_mode_falls_back_to_spec_deployment_mode_then_raw_deployment() -> None:
    assert [m.source for m in modes_of(isvc(deploymentMode="MultiNode"), runtime()).modes] == [
        "InferenceService spec.deploymentMode"
    ]
    only = modes_of(isvc(), None).modes[0]
    assert (only.mode, only.source) == ("RawDeployment", "default")


@pytest.mark.parametrize(
    ("spec", "engine", "decoder"),
    [
        ({}, "OMENative", "RawDeployment"),
        ({"deploymentMode": "OMENative"}, None, "RawDeployment"),
        ({"deploymentMode": "MultiNode"}, "OMENative", None),
        ({}, "OMENative", None),
    ],
)
def test_omenative_on_the_engine_or_decoder_requires_both_to_ask_for_the_same_mode(
    spec: dict[str, Any], engine: str | None, decoder: str | None
) -> None:
    request = isvc(
        engine=mode_annotation(engine) if engine else {},
        decoder=mode_annotation(decoder) if decoder else {},
        **spec,
    )
    effective = modes_of(request, runtime())
    (error,) = effective.errors
    assert "OMENative" in error.message
    assert error.message.startswith(
        "when the engine or the decoder asks for OMENative, both must ask for the same mode"
    )


@pytest.mark.parametrize(
    ("spec", "engine", "decoder"),
    [
        ({"deploymentMode": "OMENative"}, None, None),
        ({}, "OMENative", "OMENative"),
        ({}, "MultiNode", "RawDeployment"),
    ],
)
def test_engine_and_decoder_asking_for_the_same_mode_or_no_omenative_pass(
    spec: dict[str, Any], engine: str | None, decoder: str | None
) -> None:
    request = isvc(
        engine=mode_annotation(engine) if engine else {},
        decoder=mode_annotation(decoder) if decoder else {},
        **spec,
    )
    assert modes_of(request, runtime()).errors == ()


def test_a_router_can_not_run_as_multinode() -> None:
    effective = modes_of(isvc(router={}), runtime(router_mode="MultiNode"))
    (error,) = effective.errors
    assert "invalid deployment mode for router" in error.message
    assert error.field == "spec.router"
    assert [(m.component, m.mode) for m in effective.modes] == [("engine", "RawDeployment"), ("router", "MultiNode")]


def test_a_multinode_router_config_is_harmless_without_a_router() -> None:
    assert modes_of(isvc(), runtime(router_mode="MultiNode")).errors == ()


def test_select_refuses_a_disabled_base_model() -> None:
    result = run_select(catalog(model(disabled=True), runtime()), isvc())
    assert result.ranking == ()
    assert result.error == f"model {MODEL} is disabled"


def test_select_refuses_a_sharded_base_model() -> None:
    result = run_select(catalog(model(distribution="Sharded"), runtime()), isvc())
    assert result.ranking == ()
    assert result.error.endswith("no model cache provider is configured for sharded model loading")


def test_the_auto_select_warning_comes_only_with_an_engine_section() -> None:
    without_engine = isvc()
    del without_engine["spec"]["engine"]
    result = run_select(catalog(model(), runtime()), without_engine)
    assert [e.runtime.meta.name for e in result.ranking] == ["srt-llama"]
    assert result.warnings == ()

"""The one manifest parser: every failure is InvalidInput naming the field path; the whole OME
catalog parses; OME's model format label."""

from __future__ import annotations

import copy
from collections import Counter
from typing import Any

import pytest
from testkit.catalog_dir import load_directory

from policyd.errors import InvalidInput
from policyd.resources.manifests import (
    load_documents,
    parse_inference_service,
    parse_model,
    parse_object,
    parse_runtime,
)
from policyd.resources.objects import BaseModel, InferenceService, ServingRuntime
from policyd.semantics.format_label import format_label

from .builders import CATALOG_DIR, entry, isvc, model, runtime


def error_of(doc: dict[str, Any]) -> InvalidInput:
    with pytest.raises(InvalidInput) as err:
        parse_object(doc)
    return err.value


# -- field paths in errors ------------------------------------------------------------------


# -- what OME reads otherwise than written: read as OME reads it, with a warning naming the field


def notes_of(doc: dict[str, Any]) -> tuple[str, ...]:
    parsed = parse_object(doc)
    assert isinstance(parsed, BaseModel | ServingRuntime)
    return parsed.notes


def test_a_version_ome_cannot_read_in_the_second_entry_matches_no_version_and_is_named_by_its_path() -> None:
    doc = runtime(entries=[entry(), entry(framework=("transformers", "4.x"))])
    parsed = parse_runtime(doc)
    assert parsed.entries[1].framework.parsed is None and parsed.entries[1].framework.version_set
    assert parsed.notes == (
        "spec.supportedModelFormats[1].modelFramework.version: '4.x' is not a version OME reads; it matches no version",
    )


@pytest.mark.parametrize("version", ["04.45.0", "1.0.0rc1", "one"])
def test_a_format_version_ome_cannot_read_is_named_by_its_path(version: str) -> None:
    doc = runtime(entries=[entry(fmt=("safetensors", version))])
    assert notes_of(doc) == (
        f"spec.supportedModelFormats[0].modelFormat.version: {version!r} is not a version OME reads;"
        " it matches no version",
    )


def test_an_unknown_operator_compares_as_equal_and_is_named_by_its_path() -> None:
    doc = runtime(entries=[entry()])
    doc["spec"]["supportedModelFormats"][0]["modelFramework"]["operator"] = "LessThan"
    parsed = parse_runtime(doc)
    assert parsed.entries[0].framework.operator == "Equal"
    assert parsed.notes == (
        "spec.supportedModelFormats[0].modelFramework.operator: 'LessThan' is not an operator OME reads;"
        " it compares as Equal",
    )


@pytest.mark.parametrize("size", ["7Q", "2b", "7.7 B"])
def test_a_model_size_ome_cannot_read_counts_as_0(size: str) -> None:
    parsed = parse_model(model(size=size))
    assert (parsed.size, parsed.size_text) == (0.0, size)
    assert parsed.notes == (f"spec.modelParameterSize: {size!r} is not a size OME reads; it counts as 0",)


@pytest.mark.parametrize(("end", "value"), [("min", "B7"), ("max", "2b")])
def test_a_size_range_end_ome_cannot_read_counts_as_0(end: str, value: str) -> None:
    bounds = {"min": "1B", "max": "8B", end: value}
    parsed = parse_runtime(runtime(size_range=(bounds["min"], bounds["max"])))
    assert parsed.size_range is not None and getattr(parsed.size_range, end) == 0.0
    assert f"spec.modelSizeRange.{end}: {value!r} is not a size OME reads; it counts as 0" in parsed.notes


def test_a_size_range_whose_min_exceeds_its_max_holds_no_size() -> None:
    parsed = parse_runtime(runtime(size_range=("9B", "2B")))
    assert parsed.notes == ("spec.modelSizeRange: min '9B' is greater than max '2B'; no model size is in it",)


def test_a_model_framework_version_ome_cannot_read_is_named_by_its_path() -> None:
    assert notes_of(model(framework=("transformers", "4..0"))) == (
        "spec.modelFramework.version: '4..0' is not a version OME reads; it matches no version",
    )


def test_an_unknown_kind_names_kind() -> None:
    doc = {"apiVersion": "ome.io/v1beta1", "kind": "BenchmarkJob", "metadata": {"name": "x"}}
    err = error_of(doc)
    assert err.field == "kind"
    assert "'BenchmarkJob'" in err.message


def test_a_missing_kind_names_kind() -> None:
    doc = runtime()
    del doc["kind"]
    assert error_of(doc).field == "kind"


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"runtime": {"name": "rt", "kind": "Cluster"}}, "spec.runtime.kind"),
        ({"model": {"name": "m", "kind": "Model"}}, "spec.model.kind"),
        ({"deploymentMode": "Serverless"}, "spec.deploymentMode"),
        ({"deploymentMode": "multinode"}, "spec.deploymentMode"),
        ({"runtime": {"kind": "ServingRuntime"}}, "spec.runtime.name"),
        ({"model": {"kind": "BaseModel"}}, "spec.model.name"),
        ({"runtime": {"name": "rt", "autoSync": "no"}}, "spec.runtime.autoSync"),
        (
            {"engine": {"annotations": {"ome.io/deploymentMode": ["MultiNode"]}}},
            "spec.engine.annotations[ome.io/deploymentMode]",
        ),
    ],
)
def test_inference_service_errors_name_their_path(spec: dict[str, Any], field: str) -> None:
    doc = isvc(model_name=None)
    doc["spec"].update(spec)
    with pytest.raises(InvalidInput) as err:
        parse_inference_service(doc)
    assert err.value.field == field


def test_an_inference_service_without_spec_names_spec() -> None:
    doc = isvc()
    del doc["spec"]
    with pytest.raises(InvalidInput) as err:
        parse_inference_service(doc)
    assert err.value.field == "spec"


@pytest.mark.parametrize("doc", [runtime(), model(), isvc()], ids=["runtime", "model", "isvc"])
def test_a_missing_metadata_name_names_metadata_name(doc: dict[str, Any]) -> None:
    doc = copy.deepcopy(doc)
    del doc["metadata"]["name"]
    assert error_of(doc).field == "metadata.name"


def test_missing_metadata_names_metadata() -> None:
    doc = model()
    del doc["metadata"]
    assert error_of(doc).field == "metadata"


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda e: e.pop("modelFramework"), "spec.supportedModelFormats[0].modelFramework"),
        (lambda e: e["modelFormat"].pop("name"), "spec.supportedModelFormats[0].modelFormat.name"),
        (lambda e: e.update(autoSelect="yes"), "spec.supportedModelFormats[0].autoSelect"),
        (lambda e: e.update(priority=1.5), "spec.supportedModelFormats[0].priority"),
        (lambda e: e["modelFormat"].update(weight="heavy"), "spec.supportedModelFormats[0].modelFormat.weight"),
        (
            lambda e: e.update(diffusionPipeline={"additionalComponents": {"safety_checker": "diffusers"}}),
            "spec.supportedModelFormats[0].diffusionPipeline.additionalComponents.safety_checker",
        ),
    ],
)
def test_entry_errors_name_their_path(change: Any, field: str) -> None:
    doc = runtime()
    change(doc["spec"]["supportedModelFormats"][0])
    assert error_of(doc).field == field


def test_an_entry_that_is_not_an_object_names_its_index() -> None:
    doc = runtime(entries=[entry(), "safetensors"])  # type: ignore[list-item]
    assert error_of(doc).field == "spec.supportedModelFormats[1]"


def test_accelerator_classes_must_be_a_list() -> None:
    doc = runtime()
    doc["spec"]["acceleratorRequirements"] = {"acceleratorClasses": "nvidia-l40s"}
    assert error_of(doc).field == "spec.acceleratorRequirements.acceleratorClasses"


def test_parse_model_refuses_a_runtime_kind_and_parse_runtime_a_model_kind() -> None:
    with pytest.raises(InvalidInput) as err:
        parse_model(runtime())
    assert err.value.field == "kind"
    with pytest.raises(InvalidInput) as err:
        parse_runtime(model())
    assert err.value.field == "kind"


def test_invalid_yaml_names_the_source() -> None:
    with pytest.raises(InvalidInput) as err:
        load_documents("kind: [unclosed\n", "runtime.yaml")
    assert err.value.field == "runtime.yaml"
    with pytest.raises(InvalidInput) as err:
        load_documents("kind: A\n---\n- a list\n", "two.yaml")
    assert err.value.field == "two.yaml[1]"


# -- what the parser records ---------------------------------------------------------------


def test_parser_records_defaults_of_an_entry() -> None:
    doc = runtime(entries=[entry(auto_select=None, priority=None)])
    parsed = parse_runtime(doc)
    (only,) = parsed.entries
    assert only.auto_select is None  # unset: it neither enables auto-selection nor stops the entry scoring
    assert only.priority is None
    assert only.format.operator == "Equal" and only.format.weight == 1 and not only.format.weight_set


@pytest.mark.parametrize("priority", [0, -1, 2**31])
def test_a_priority_outside_the_crd_s_range_is_refused(priority: int) -> None:
    with pytest.raises(InvalidInput) as err:
        parse_runtime(runtime(entries=[entry(priority=priority)]))
    assert err.value.field == "spec.supportedModelFormats[0].priority"


def test_the_accelerator_classes_an_inference_service_names_come_from_every_source_ome_reads() -> None:
    doc = isvc(
        acceleratorSelector={"acceleratorClass": "nvidia-l40s"},
        engine={"acceleratorOverride": {"acceleratorClass": "nvidia-h100"}},
        decoder={"acceleratorOverride": {"acceleratorClass": "nvidia-a100"}},
    )
    doc["metadata"]["annotations"] = {"ome.io/accelerator-class": "nvidia-b200"}
    parsed = parse_inference_service(doc)
    assert parsed.accelerator_classes == ("nvidia-b200", "nvidia-l40s", "nvidia-h100", "nvidia-a100")


def test_scaling_policy_mode_defaults_to_independent_when_the_policy_names_none() -> None:
    assert parse_inference_service(isvc(scalingPolicy={})).scaling_mode == "Independent"
    assert parse_inference_service(isvc()).scaling_mode == ""
    assert parse_runtime(runtime(scalingPolicy={"mode": "Coordinated"})).scaling_mode == "Coordinated"


def test_parser_records_the_runtime_s_component_modes_and_images() -> None:
    doc = runtime(engine_mode="MultiNode", router_mode="RawDeployment", image="registry/x:1.0")
    parsed = parse_runtime(doc)
    assert parsed.components["engine"] == {"ome.io/deploymentMode": "MultiNode"}
    assert parsed.components["router"] == {"ome.io/deploymentMode": "RawDeployment"}
    assert "decoder" not in parsed.components
    assert parsed.images == ("registry/x:1.0", "registry/x:1.0")


def test_a_cluster_scoped_object_drops_a_namespace_and_a_namespaced_one_keeps_it() -> None:
    doc = runtime()
    doc["metadata"]["namespace"] = "ignored"
    assert parse_runtime(doc).meta.namespace == ""
    assert parse_runtime(runtime(kind="ServingRuntime", namespace="ns")).meta.namespace == "ns"


def test_an_inference_service_defaults_its_references() -> None:
    parsed = parse_inference_service(isvc(runtime_name="rt"))
    assert parsed.model is not None and parsed.model.kind == "ClusterBaseModel"
    assert parsed.runtime is not None
    assert parsed.runtime.kind == "ClusterServingRuntime"
    assert parsed.runtime.auto_sync is True
    assert set(parsed.components) == {"engine"}


# -- the OME catalog -------------------------------------------------------------------------


def test_every_runtime_and_model_in_the_ome_catalog_parses() -> None:
    loaded = load_directory(CATALOG_DIR)
    assert loaded.errors == []
    kinds = Counter(type(o).__name__ for o in loaded.objects)
    assert kinds == {"ServingRuntime": 207, "BaseModel": 207}
    assert all(isinstance(o, ServingRuntime | BaseModel) for o in loaded.objects)
    assert {o.kind for o in loaded.objects} == {"ClusterServingRuntime", "ClusterBaseModel"}


# -- the format label ------------------------------------------------------------------------


def label(doc: dict[str, Any]) -> str:
    obj = parse_object(doc)
    assert isinstance(obj, BaseModel)
    return format_label(obj)


def test_format_label_is_mt_format_version_architecture_framework_version() -> None:
    doc = model(framework=("transformers", "4.46.0"))
    assert label(doc) == "mt:safetensors:1.0.0:LlamaForCausalLM:transformers:4.46.0"


def test_format_label_puts_the_quantization_after_the_architecture() -> None:
    doc = model(quantization="fp8")
    assert label(doc) == "mt:safetensors:1.0.0:LlamaForCausalLM:fp8:transformers:4.45.0.dev0"


def test_format_label_of_a_diffusers_model() -> None:
    version = ("diffusers", "0.34.0.dev0")
    doc = model(fmt=version, framework=version, architecture="QwenImagePipeline")
    assert label(doc) == "mt:diffusers:0.34.0.dev0:QwenImagePipeline:diffusers:0.34.0.dev0"


def test_format_label_leaves_out_what_the_model_does_not_record() -> None:
    doc = model(architecture=None, framework=None)
    assert label(doc) == "mt:safetensors:1.0.0"
    # OME prints the format's name whatever it is: "mt:" for a model without one
    assert label(model(fmt=None, framework=None, architecture=None)) == "mt:"


def test_parse_object_returns_the_type_for_the_kind() -> None:
    assert isinstance(parse_object(model()), BaseModel)
    assert isinstance(parse_object(runtime()), ServingRuntime)
    assert isinstance(parse_object(isvc()), InferenceService)


def test_an_inference_service_s_shape_is_what_decides_it_and_its_digest_the_whole_manifest() -> None:
    """A review's object carries a uid, a resourceVersion, managed fields and a status of its own;
    none decides it, so InferenceServices that differ only there share their verdicts."""
    plain = isvc()
    written = copy.deepcopy(plain)
    written["metadata"] |= {"uid": "6c1f", "resourceVersion": "42", "managedFields": [{"manager": "kubectl"}]}
    written["status"] = {"conditions": [{"type": "Ready", "status": "False"}]}
    labelled = copy.deepcopy(plain)
    labelled["metadata"]["labels"] = {"team": "a"}
    a, b, c = (parse_inference_service(doc) for doc in (plain, written, labelled))
    assert a.shape == b.shape != c.shape
    assert len({a.digest, b.digest, c.digest}) == 3

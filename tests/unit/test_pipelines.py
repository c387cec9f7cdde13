"""Diffusion pipeline runtime matching (000_4f25be48ab7aa4be.txt): every row of "The matching
rule" and of "Where a rejection shows up"."""

from __future__ import annotations

from typing import Any

import pytest
from testkit.deciding import explain_isvc

from policyd.resources.objects import BaseModel, Pipeline, ServingRuntime
from policyd.semantics.pipelines import NIL, PipelineMismatch, first_mismatch

from .builders import catalog, default_revision, entry, isvc, model, parsed, parsed_isvc, runtime

QWEN = {
    "className": "QwenImagePipeline",
    "transformer": {"library": "diffusers", "type": "QwenImageTransformer2DModel"},
}
FULL = {
    "className": "StableDiffusionPipeline",
    "scheduler": {"library": "diffusers", "type": "EulerDiscreteScheduler"},
    "textEncoder": {"library": "transformers", "type": "CLIPTextModel"},
    "tokenizer": {"library": "transformers", "type": "CLIPTokenizer"},
    "transformer": {"library": "diffusers", "type": "UNet2DConditionModel"},
    "vae": {"library": "diffusers", "type": "AutoencoderKL"},
    "additionalComponents": {"safety_checker": {"library": "diffusers", "type": "StableDiffusionSafetyChecker"}},
}
NO_PIPELINE = object()


def model_pipeline(value: Any) -> Pipeline | None:
    """The pipeline the parser records for a model with ``diffusionPipeline: value``."""
    doc = model("m", pipeline=None if value is NO_PIPELINE else value)
    obj = parsed(doc)
    assert isinstance(obj, BaseModel)
    return obj.pipeline


def entry_pipeline(value: Any) -> Pipeline | None:
    fields = {} if value is NO_PIPELINE else {"diffusionPipeline": value}
    obj = parsed(runtime("rt", entries=[entry(**fields)]))
    assert isinstance(obj, ServingRuntime)
    return obj.entries[0].pipeline


def mismatch(model_value: Any, entry_value: Any) -> PipelineMismatch | None:
    return first_mismatch(model_pipeline(model_value), entry_pipeline(entry_value))


# -- The matching rule ---------------------------------------------------------------------


def test_entry_without_pipeline_passes_for_every_model() -> None:
    for value in (NO_PIPELINE, {}, QWEN, FULL, {"className": "Other"}):
        assert mismatch(value, NO_PIPELINE) is None


def test_empty_entry_pipeline_requires_a_model_pipeline() -> None:
    assert mismatch(NO_PIPELINE, {}) == PipelineMismatch("pipeline-missing")


def test_empty_entry_pipeline_accepts_any_model_pipeline() -> None:
    for value in ({}, QWEN, FULL):
        assert mismatch(value, {}) is None


def test_class_name_requires_the_same_class() -> None:
    assert mismatch(QWEN, {"className": "QwenImagePipeline"}) is None
    assert mismatch({**QWEN, "className": "QwenImageEditPipeline"}, {"className": "QwenImagePipeline"}) == (
        PipelineMismatch("class", "className", "QwenImageEditPipeline", "QwenImagePipeline")
    )


def test_class_name_fails_when_the_model_pipeline_has_no_class_and_reports_nil() -> None:
    found = mismatch({"transformer": {"library": "diffusers"}}, {"className": "QwenImagePipeline"})
    assert found == PipelineMismatch("class", "className", NIL, "QwenImagePipeline")
    assert NIL == "<nil>"


@pytest.mark.parametrize("component", ["scheduler", "textEncoder", "tokenizer", "transformer", "vae"])
def test_component_set_on_the_entry_requires_that_component_even_an_empty_one(component: str) -> None:
    assert mismatch({"className": "P"}, {component: {}}) == PipelineMismatch("component-missing", component)
    assert mismatch({"className": "P", component: {"library": "x", "type": "y"}}, {component: {}}) is None


def test_component_library_must_be_the_same() -> None:
    found = mismatch(
        {"transformer": {"library": "transformers", "type": "T"}}, {"transformer": {"library": "diffusers"}}
    )
    assert found == PipelineMismatch("library", "transformer", "transformers", "diffusers")


def test_component_library_fails_when_the_model_component_has_none_and_reports_it_empty() -> None:
    found = mismatch({"transformer": {"type": "T"}}, {"transformer": {"library": "diffusers"}})
    assert found == PipelineMismatch("library", "transformer", "", "diffusers")


def test_component_type_must_be_the_same() -> None:
    found = mismatch(
        {"scheduler": {"library": "diffusers", "type": "EulerDiscreteScheduler"}},
        {"scheduler": {"type": "FlowMatchEulerDiscreteScheduler"}},
    )
    assert found == PipelineMismatch("type", "scheduler", "EulerDiscreteScheduler", "FlowMatchEulerDiscreteScheduler")


def test_component_type_fails_when_the_model_component_has_none() -> None:
    found = mismatch({"vae": {"library": "diffusers"}}, {"vae": {"type": "AutoencoderKL"}})
    assert found == PipelineMismatch("type", "vae", "", "AutoencoderKL")


def test_fields_the_entry_leaves_unset_are_not_required() -> None:
    # the entry sets only the library: any type passes; only the class: any components pass
    assert mismatch(FULL, {"transformer": {"library": "diffusers"}}) is None
    assert mismatch(FULL, {"className": "StableDiffusionPipeline"}) is None
    assert mismatch(FULL, FULL) is None


@pytest.mark.parametrize(
    ("model_value", "entry_value"),
    [
        ({"className": "qwenimagepipeline"}, {"className": "QwenImagePipeline"}),
        ({"transformer": {"library": "Diffusers"}}, {"transformer": {"library": "diffusers"}}),
        ({"vae": {"type": "autoencoderkl"}}, {"vae": {"type": "AutoencoderKL"}}),
        ({"additionalComponents": {"Safety_Checker": {}}}, {"additionalComponents": {"safety_checker": {}}}),
    ],
)
def test_values_compare_as_exact_case_sensitive_strings(model_value: Any, entry_value: Any) -> None:
    assert mismatch(model_value, entry_value) is not None


def test_additional_components_on_the_entry_fail_when_the_model_has_none() -> None:
    required = {"additionalComponents": {"safety_checker": {"library": "diffusers"}}}
    assert mismatch({"className": "P"}, required) == PipelineMismatch("additional-none", "additionalComponents")


def test_additional_component_key_missing_in_the_model() -> None:
    found = mismatch(
        {"additionalComponents": {"image_encoder": {"library": "transformers"}}},
        {"additionalComponents": {"safety_checker": {}}},
    )
    assert found == PipelineMismatch("additional-missing", "safety_checker")


def test_additional_component_whose_library_or_type_differs_fails() -> None:
    model_value = {"additionalComponents": {"safety_checker": {"library": "diffusers", "type": "Checker"}}}
    library = mismatch(model_value, {"additionalComponents": {"safety_checker": {"library": "transformers"}}})
    kind = mismatch(model_value, {"additionalComponents": {"safety_checker": {"type": "OtherChecker"}}})
    assert library == PipelineMismatch("library", "safety_checker", "diffusers", "transformers")
    assert kind == PipelineMismatch("type", "safety_checker", "Checker", "OtherChecker")
    assert mismatch(model_value, {"additionalComponents": {"safety_checker": {"library": "diffusers"}}}) is None


# -- only the first mismatch is reported ------------------------------------------------------


def test_only_the_first_mismatch_is_reported_class_before_components() -> None:
    found = mismatch({"className": "Other"}, {"className": "QwenImagePipeline", "transformer": {}})
    assert found is not None and found.kind == "class"


def test_components_are_checked_in_order_scheduler_text_encoder_tokenizer_transformer_vae() -> None:
    order = ["scheduler", "textEncoder", "tokenizer", "transformer", "vae"]
    # the entry lists them in reverse; the model has none: the first in OME's order is reported
    required = {name: {} for name in reversed(order)}
    have: dict[str, Any] = {"className": "P"}
    for name in order:
        assert mismatch(have, required) == PipelineMismatch("component-missing", name)
        have[name] = {}
    assert mismatch(have, required) is None


def test_components_are_checked_before_additional_components() -> None:
    found = mismatch(
        {"className": "P"},
        {"additionalComponents": {"safety_checker": {}}, "vae": {"library": "diffusers"}},
    )
    assert found == PipelineMismatch("component-missing", "vae")


def test_a_component_library_mismatch_is_reported_before_a_later_missing_component() -> None:
    found = mismatch(
        {"scheduler": {"library": "transformers"}},
        {"scheduler": {"library": "diffusers"}, "vae": {}},
    )
    assert found == PipelineMismatch("library", "scheduler", "transformers", "diffusers")


# -- Where a rejection shows up: the reasons, as OME prints them ----------------------------------

LABEL = "mt:diffusers:0.34.0.dev0:QwenImagePipeline:diffusers:0.34.0.dev0"
PREFIX = f"model format '{LABEL}' not in supported formats: "


def diffusion_reason(model_value: Any, entry_value: Any, architecture: str | None = "QwenImagePipeline") -> str:
    """The first reason explain gives for a runtime whose only entry sets ``entry_value``."""
    version = ("diffusers", "0.34.0.dev0")
    fields = {} if entry_value is NO_PIPELINE else {"diffusionPipeline": entry_value}
    rt = runtime(
        "srt-qwen-image-pipeline",
        entries=[entry(fmt=version, framework=version, architecture=architecture, priority=2, **fields)],
    )
    doc = model(
        "qwen-image",
        fmt=version,
        framework=version,
        architecture="QwenImagePipeline",
        size=None,
        pipeline=None if model_value is NO_PIPELINE else model_value,
    )
    explanation = explain_isvc(catalog(doc, rt), parsed_isvc(isvc(model_name="qwen-image")), default_revision())
    (verdict,) = explanation.runtimes
    assert not verdict.compatible and not verdict.selectable
    assert verdict.reason is not None
    return verdict.reason.message


@pytest.mark.parametrize(
    ("model_value", "entry_value", "reason"),
    [
        (NO_PIPELINE, QWEN, "diffusion pipeline required by runtime but not specified in model"),
        (NO_PIPELINE, {}, "diffusion pipeline required by runtime but not specified in model"),
        (
            {"className": "QwenImageEditPipeline"},
            {"className": "QwenImagePipeline"},
            "pipeline class mismatch (model=QwenImageEditPipeline, runtime=QwenImagePipeline)",
        ),
        (
            {"transformer": {"library": "diffusers"}},
            {"className": "QwenImagePipeline"},
            "pipeline class mismatch (model=<nil>, runtime=QwenImagePipeline)",
        ),
        (
            {"className": "QwenImagePipeline"},
            {"transformer": {"library": "diffusers"}},
            "component transformer required by runtime but not specified in model",
        ),
        (
            {"transformer": {"library": "transformers"}},
            {"transformer": {"library": "diffusers"}},
            "transformer library mismatch (model=transformers, runtime=diffusers)",
        ),
        (
            {"transformer": {"type": "T"}},
            {"transformer": {"library": "diffusers"}},
            "transformer library mismatch (model=, runtime=diffusers)",
        ),
        (
            {"scheduler": {"type": "EulerDiscreteScheduler"}},
            {"scheduler": {"type": "FlowMatchEulerDiscreteScheduler"}},
            "scheduler type mismatch (model=EulerDiscreteScheduler, runtime=FlowMatchEulerDiscreteScheduler)",
        ),
        (
            {"className": "QwenImagePipeline"},
            {"additionalComponents": {"safety_checker": {}}},
            "diffusion pipeline missing required additional components",
        ),
        (
            {"additionalComponents": {"image_encoder": {}}},
            {"additionalComponents": {"safety_checker": {}}},
            "diffusion component safety_checker missing in model",
        ),
    ],
)
def test_pipeline_rejection_reasons_are_ome_s_words(model_value: Any, entry_value: Any, reason: str) -> None:
    assert diffusion_reason(model_value, entry_value) == PREFIX + reason


def test_entry_without_architecture_for_a_pipeline_model_gets_the_architecture_reason() -> None:
    reason = diffusion_reason(QWEN, NO_PIPELINE, architecture=None)
    assert reason == PREFIX + "model has architecture QwenImagePipeline but runtime has no architecture requirement"


def test_the_pipeline_check_adds_nothing_to_the_score() -> None:
    version = ("diffusers", "0.34.0.dev0")
    common = {"fmt": version, "framework": version, "architecture": "QwenImagePipeline", "priority": 2}
    with_pipeline = runtime("with-pipeline", entries=[entry(diffusionPipeline=QWEN, **common)])
    without = runtime("without-pipeline", entries=[entry(**common)])
    doc = model("qwen-image", fmt=version, framework=version, architecture="QwenImagePipeline", pipeline=QWEN)
    explanation = explain_isvc(
        catalog(doc, with_pipeline, without), parsed_isvc(isvc(model_name="qwen-image")), default_revision()
    )
    scores = {e.runtime.meta.name: (e.selectable, e.score) for e in explanation.runtimes}
    assert scores == {"with-pipeline": (True, 4), "without-pipeline": (True, 4)}

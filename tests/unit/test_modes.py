"""Deployment modes (001_e5dcabf2510ce189.txt): "A mode counts when its value is RawDeployment,
OMENative, MultiNode or VirtualDeployment. Annotation values are case-sensitive, and OME silently
treats a misspelled one as no mode", and "How OME resolves the mode": the component's own
annotation in the InferenceService, else the runtime's, else spec.deploymentMode."""

from __future__ import annotations

import pytest

from policyd.errors import InvalidInput
from policyd.resources.deployment_modes import DEFAULT_MODE, MODE_ANNOTATION, MODES, check_mode
from policyd.semantics.modes import EffectiveMode, annotated_mode, effective_mode, requested_mode

VALID = ["RawDeployment", "OMENative", "MultiNode", "VirtualDeployment"]


def ann(mode: str) -> dict[str, str]:
    return {MODE_ANNOTATION: mode}


def test_the_mode_annotation_is_ome_io_deployment_mode() -> None:
    assert MODE_ANNOTATION == "ome.io/deploymentMode"
    assert set(MODES) == set(VALID)


@pytest.mark.parametrize("mode", VALID)
def test_each_valid_mode_annotation_counts(mode: str) -> None:
    assert annotated_mode(ann(mode)) == mode


@pytest.mark.parametrize(
    "value",
    ["multinode", "MULTINODE", "Multinode", "omenative", "rawdeployment", "Raw", "MultiNode ", "", "Serverless"],
)
def test_misspelled_mode_annotation_counts_as_no_mode(value: str) -> None:
    assert annotated_mode(ann(value)) == ""


def test_no_annotations_is_no_mode() -> None:
    assert annotated_mode(None) == ""
    assert annotated_mode({}) == ""
    assert annotated_mode({"ome.io/deployment-mode": "MultiNode", "deploymentMode": "MultiNode"}) == ""


# -- effective_mode: the order and the rule that set it -------------------------------------


def test_component_own_annotation_in_the_inference_service_wins() -> None:
    mode = effective_mode("engine", ann("OMENative"), ann("MultiNode"), "RawDeployment")
    assert mode == EffectiveMode(
        "engine", "OMENative", "InferenceService spec.engine.annotations[ome.io/deploymentMode]"
    )


def test_runtime_component_annotation_comes_ahead_of_spec_deployment_mode() -> None:
    mode = effective_mode("engine", {}, ann("MultiNode"), "OMENative")
    assert mode == EffectiveMode("engine", "MultiNode", "runtime engineConfig.annotations[ome.io/deploymentMode]")


def test_runtime_annotation_is_per_component() -> None:
    mode = effective_mode("decoder", None, ann("MultiNode"), "")
    assert mode.source == "runtime decoderConfig.annotations[ome.io/deploymentMode]"
    assert mode.mode == "MultiNode"


def test_spec_deployment_mode_applies_when_no_annotation_declares_a_mode() -> None:
    mode = effective_mode("router", None, None, "OMENative")
    assert mode == EffectiveMode("router", "OMENative", "InferenceService spec.deploymentMode")


def test_raw_deployment_is_the_default_mode() -> None:
    assert DEFAULT_MODE == "RawDeployment"
    assert effective_mode("engine", None, None, "") == EffectiveMode("engine", "RawDeployment", "default")


def test_an_inference_service_that_declares_no_mode_gets_the_runtime_s_multinode() -> None:
    assert effective_mode("engine", {}, ann("MultiNode"), "").mode == "MultiNode"


def test_a_misspelled_annotation_is_skipped_when_resolving_the_effective_mode() -> None:
    assert effective_mode("engine", ann("omenative"), ann("MultiNode"), "").source.startswith("runtime ")
    assert effective_mode("engine", ann("omenative"), ann("multinode"), "OMENative").source == (
        "InferenceService spec.deploymentMode"
    )
    assert effective_mode("engine", ann("omenative"), ann("multinode"), "").source == "default"


# -- requested_mode: what the InferenceService asks of a component when matching runtimes -----------


def test_requested_mode_is_the_component_annotation_first() -> None:
    assert requested_mode(ann("MultiNode"), "OMENative") == "MultiNode"


def test_requested_mode_falls_back_to_spec_deployment_mode() -> None:
    assert requested_mode({}, "OMENative") == "OMENative"
    assert requested_mode(ann("Multinode"), "OMENative") == "OMENative"


def test_requested_mode_is_empty_when_the_inference_service_declares_none() -> None:
    assert requested_mode(None, "") == ""
    assert requested_mode(ann("multinode"), "") == ""


# -- spec.deploymentMode is a typed field: unknown values are refused ---------------------------


@pytest.mark.parametrize("mode", VALID)
def test_check_mode_accepts_the_valid_modes(mode: str) -> None:
    assert check_mode(mode, "spec.deploymentMode") == mode


def test_check_mode_accepts_an_unset_mode() -> None:
    assert check_mode("", "spec.deploymentMode") == ""


@pytest.mark.parametrize("mode", ["Serverless", "omenative", "multinode", "Raw"])
def test_check_mode_refuses_an_unknown_spec_deployment_mode(mode: str) -> None:
    with pytest.raises(InvalidInput) as err:
        check_mode(mode, "spec.deploymentMode")
    assert err.value.field == "spec.deploymentMode"
    assert repr(mode) in err.value.message

"""Lint: the bundled lint rules (rules/70-lint.yaml) judging the records of small catalogs — a tie
only the name breaks, a runtime always outranked, an autoSelect entry no model matches,
overlapping size ranges, undefined accelerator classes, a runtime the policy refuses whatever
the model, a refused model — and lint rules being data an organisation can change."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from testkit import diffusers_backend as diffusers

from policyd.catalog.snapshot import Catalog
from policyd.policy.revision import build_revision
from policyd.whatif.lint import Finding, lint

from .builders import RULES, catalog, default_revision, entry, isvc, model, plain, runtime

H100 = {"apiVersion": "ome.io/v1beta1", "kind": "AcceleratorClass", "metadata": {"name": "nvidia-h100"}}


def _found(world: Catalog, rule: str | None = None) -> list[Finding]:
    return [f for f in lint(world, plain(default_revision())).findings if rule is None or f.id == rule]


def _names(finding: Finding) -> list[str]:
    return [name for _, _, name in finding.objects]


def test_a_clean_catalog_has_no_findings() -> None:
    assert _found(catalog(model(), runtime("srt-llama"))) == []


def test_two_runtimes_equal_but_for_the_name_are_an_ambiguous_tie_and_nothing_else() -> None:
    (tie,) = _found(catalog(model(), runtime("srt-b"), runtime("srt-a")))
    assert tie.id == "ambiguous-tie"
    assert tie.severity == "warning"
    assert _names(tie) == ["llama-3-2-3b-instruct", "srt-a", "srt-b"]
    assert tie.message == (
        "model llama-3-2-3b-instruct (namespace default): ClusterServingRuntime/srt-a, ClusterServingRuntime/srt-b"
        " rank equal but for the name, which picks ClusterServingRuntime/srt-a"
    )


def test_a_tie_the_size_range_breaks_is_no_tie_but_the_farther_runtime_is_shadowed() -> None:
    world = catalog(model(), runtime("srt-a", size_range=("1B", "8B")), runtime("srt-b", size_range=("2B", "4B")))
    assert _found(world, "ambiguous-tie") == []
    (shadowed,) = _found(world, "runtime-shadowed")
    assert _names(shadowed) == ["srt-a"]
    assert shadowed.message == (
        "ClusterServingRuntime srt-a can be auto-selected for 1 of the catalog's models but is never chosen:"
        " ClusterServingRuntime/srt-b ranks first"
    )


def test_an_auto_select_entry_no_model_matches() -> None:
    mistral = runtime("srt-mistral", entries=[entry(architecture="MistralForCausalLM"), entry(auto_select=False)])
    found = _found(catalog(model(), runtime("srt-llama"), mistral), "auto-select-entry-matches-nothing")
    assert [(f.severity, _names(f)) for f in found] == [("warning", ["srt-mistral"])]
    assert "supportedModelFormats[0] sets autoSelect" in found[0].message
    # without a model to match there is nothing to say
    assert _found(catalog(mistral), "auto-select-entry-matches-nothing") == []


def test_overlapping_size_ranges_for_the_same_format_and_architecture() -> None:
    world = catalog(runtime("srt-small", size_range=("1B", "8B")), runtime("srt-big", size_range=("7B", "70B")))
    (overlap,) = _found(world, "size-ranges-overlap")
    assert _names(overlap) == ["srt-big", "srt-small"]
    assert overlap.message == (
        "ClusterServingRuntime/srt-big [7B, 70B] and ClusterServingRuntime/srt-small [1B, 8B] both auto-select"
        " safetensors LlamaForCausalLM models, and their size ranges overlap"
    )
    apart = catalog(runtime("srt-small", size_range=("1B", "6B")), runtime("srt-big", size_range=("7B", "70B")))
    assert _found(apart, "size-ranges-overlap") == []
    other = catalog(runtime("srt-small", size_range=("1B", "8B")), runtime("srt-q", size_range=("7B", "70B")))
    quantized = runtime("srt-q", size_range=("7B", "70B"), entries=[entry(quantization="fp8")])
    assert len(_found(other, "size-ranges-overlap")) == 1
    assert _found(catalog(runtime("srt-small", size_range=("1B", "8B")), quantized), "size-ranges-overlap") == []


def test_accelerator_classes_no_accelerator_class_defines_when_the_catalog_has_some() -> None:
    named = isvc("svc", acceleratorSelector={"acceleratorClass": "nvidia-a100"})
    tuned = runtime("srt-tuned", entries=[entry(acceleratorConfig={"nvidia-l40s": {}})])
    world = catalog(model(), runtime("srt-llama", classes=["nvidia-h100", "nvidia-a100"]), tuned, named, H100)
    found = _found(world, "accelerator-class-undefined")
    assert [(f.severity, _names(f)) for f in found] == [
        ("error", ["srt-llama", "svc"]),
        ("error", ["srt-tuned"]),
    ]
    assert found[0].message == (
        "accelerator class nvidia-a100 is defined by none of the catalog's 1 AcceleratorClasses;"
        " named by ClusterServingRuntime/srt-llama, InferenceService/svc"
    )
    # a catalog without AcceleratorClasses has nothing to check them against
    assert _found(catalog(model(), runtime("srt-llama", classes=["nvidia-a100"])), "accelerator-class-undefined") == []


def test_a_runtime_the_diffusers_backend_refuses_serves_no_model() -> None:
    refused = diffusers.runtime("qwen-teacache", "--cache-backend", "tea_cache")
    (finding,) = _found(catalog(diffusers.model(), refused), "runtime-refused-whatever-the-model")
    assert (finding.severity, _names(finding)) == ("error", ["qwen-teacache"])
    assert finding.message.startswith("ClusterServingRuntime qwen-teacache serves no model: the diffusers backend")
    assert _found(catalog(diffusers.model(), diffusers.runtime("qwen")), "runtime-refused-whatever-the-model") == []


def test_a_disabled_runtime_is_refused_on_purpose() -> None:
    assert _found(catalog(model(), runtime("srt-off", disabled=True)), "runtime-refused-whatever-the-model") == []


def test_a_model_without_a_format_is_refused_and_one_without_auto_selectable_runtime_is_said() -> None:
    world = catalog(
        model("bare", fmt=None, framework=None), model(), runtime("srt-llama", entries=[entry(auto_select=False)])
    )
    assert [(f.id, f.severity, _names(f)) for f in _found(world)] == [
        ("model-refused", "info", ["bare"]),
        ("model-without-auto-selectable-runtime", "info", ["llama-3-2-3b-instruct"]),
    ]


def test_a_cluster_model_is_decided_in_each_namespace_with_servingruntimes() -> None:
    world = catalog(model(), runtime("srt-a"), runtime("srt-b"), runtime("sr", kind="ServingRuntime", namespace="team"))
    result = lint(world, plain(default_revision()))
    assert result.models_decided == 2
    ties = [f for f in result.findings if f.id == "ambiguous-tie"]
    assert [f.message.split(":")[0] for f in ties] == ["model llama-3-2-3b-instruct (namespace default)"]


def test_lint_rules_are_data_an_allow_rule_waives_a_finding(tmp_path: Path) -> None:
    extra = tmp_path / "extra"
    extra.mkdir()
    waiver: dict[str, Any] = {
        "id": "ties-accepted",
        "order": 5000,
        "applies_to": "lint_model",
        "effect": "allow",
        "overrides": ["ambiguous-tie"],
        "when": {"model_name": "llama-3-2-3b-instruct"},
        "reason": "the team accepts this tie",
    }
    (extra / "waive.yaml").write_text(yaml.safe_dump({"rules": [waiver]}))
    revision = build_revision(extra, RULES)
    world = catalog(model(), runtime("srt-b"), runtime("srt-a"))
    assert [f.id for f in lint(world, plain(revision)).findings] == []
    assert [f.id for f in lint(world, plain(default_revision())).findings] == ["ambiguous-tie"]

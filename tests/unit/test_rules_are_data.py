"""Changing a rule file changes decisions, with no code change: each test edits a private copy of
rules/, builds a revision from it and compares the pure decisions with the bundled rules'."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from testkit.deciding import explain_isvc, resolve, select

from policyd.catalog.snapshot import Catalog
from policyd.decision.verdicts import RuntimeVerdict
from policyd.policy.revision import Revision, build_revision

from .builders import catalog, copy_rules, default_revision, entry, isvc, model, parsed_isvc, runtime


def edit_text(path: Path, old: str, new: str, count: int = 1) -> None:
    text = path.read_text()
    assert text.count(old) == count, f"{old!r} occurs {text.count(old)} times in {path}"
    path.write_text(text.replace(old, new))


def edit_yaml(path: Path, change: Any) -> None:
    doc = yaml.safe_load(path.read_text())
    change(doc)
    path.write_text(yaml.safe_dump(doc, sort_keys=False, width=1000))


def verdict(cat: Catalog, request: dict[str, Any], revision: Revision, name: str) -> RuntimeVerdict:
    explanation = explain_isvc(cat, parsed_isvc(request), revision)
    (found,) = [e for e in explanation.runtimes if e.runtime.meta.name == name]
    return found


def first_reason(cat: Catalog, request: dict[str, Any], revision: Revision, name: str) -> str:
    found = verdict(cat, request, revision, name)
    assert found.reason is not None
    return found.reason.message


def selected(cat: Catalog, request: dict[str, Any], revision: Revision) -> str:
    selection = select(cat, parsed_isvc(request), revision)
    assert selection.ranking, selection.error
    return selection.ranking[0].runtime.meta.name


def test_reordering_checks_changes_the_first_reason(tmp_path: Path) -> None:
    cat = catalog(model(), runtime("srt-both", engine_mode="MultiNode", classes=["nvidia-h100"]))
    request = isvc(deploymentMode="OMENative", acceleratorSelector={"acceleratorClass": "nvidia-l40s"})
    accelerator = "runtime does not support the required accelerator class"
    assert first_reason(cat, request, default_revision(), "srt-both") == accelerator

    rules = copy_rules(tmp_path)
    edit_text(rules / "10-runtime.yaml", "    order: 200\n", "    order: 350\n")  # accelerator-class-not-listed
    edit_text(
        rules / "10-runtime.yaml", "        expect: {rule: accelerator-class-not-listed}\n", "        expect: {}\n"
    )
    reordered = build_revision(rules)
    assert reordered.id != default_revision().id
    mode = "runtime engine deployment mode MultiNode does not match requested engine deployment mode OMENative"
    assert first_reason(cat, request, reordered, "srt-both") == mode


def test_removing_a_rule_makes_a_runtime_it_excluded_compatible(tmp_path: Path) -> None:
    cat = catalog(model(quantization="fp8"), runtime("srt-unquantized"))
    request = isvc()
    before = verdict(cat, request, default_revision(), "srt-unquantized")
    assert not before.compatible and before.reason is not None
    assert [p.rule_id for p in before.reason.parts] == ["quantization-not-required"]
    assert "model has quantization fp8 but runtime has no quantization requirement" in before.reason.message
    assert select(cat, parsed_isvc(request), default_revision()).ranking == ()

    rules = copy_rules(tmp_path)

    def drop(doc: dict[str, Any]) -> None:
        doc["rules"] = [r for r in doc["rules"] if r["id"] != "quantization-not-required"]

    edit_yaml(rules / "20-formats.yaml", drop)
    revision = build_revision(rules)
    after = verdict(cat, request, revision, "srt-unquantized")
    assert after.compatible and after.selectable and after.reason is None
    assert selected(cat, request, revision) == "srt-unquantized"


def test_changing_a_reason_text_changes_the_explanation_and_the_message(tmp_path: Path) -> None:
    cat = catalog(model(), runtime("srt-off", disabled=True))
    request = isvc()
    assert first_reason(cat, request, default_revision(), "srt-off") == "runtime is disabled"

    rules = copy_rules(tmp_path)
    # the reason and the stored tests that expect it
    edit_text(rules / "10-runtime.yaml", "runtime is disabled", "switched off by the platform team", count=2)
    revision = build_revision(rules)
    assert first_reason(cat, request, revision, "srt-off") == "switched off by the platform team"
    assert select(cat, parsed_isvc(request), revision).error.endswith(
        "Excluded runtimes: srt-off (switched off by the platform team)"
    )


MISMATCHED = [entry(fmt=("onnx", "1.0.0"), architecture="MistralForCausalLM"), entry(quantization="int4")]
JOINED = (
    "model format 'mt:safetensors:1.0.0:LlamaForCausalLM:transformers:4.45.0.dev0' not in supported formats: "
    "architecture mismatch (model=LlamaForCausalLM, runtime=MistralForCausalLM), "
    "format name mismatch (model=safetensors, runtime=onnx); "
    "model has no quantization but runtime requires int4"
)


def test_joining_reasons_differently_changes_the_message(tmp_path: Path) -> None:
    cat = catalog(model(), runtime("srt-other", entries=MISMATCHED))
    assert first_reason(cat, isvc(), default_revision(), "srt-other") == JOINED

    rules = copy_rules(tmp_path)
    edit_text(rules / "20-formats.yaml", '    join: ", "\n', '    join: " and "\n')
    edit_text(rules / "20-formats.yaml", '      join: "; "\n', '      join: " | "\n')
    edit_text(rules / "20-formats.yaml", "MistralForCausalLM), format name", "MistralForCausalLM) and format name")
    edit_text(rules / "20-formats.yaml", "pytorch); quantization", "pytorch) | quantization")
    edit_text(rules / "20-formats.yaml", "int4), format name", "int4) and format name")
    edit_text(rules / "25-diffusion-pipeline.yaml", "in model, model has", "in model and model has")
    revision = build_revision(rules)
    joined = JOINED.replace("), format", ") and format").replace("); model", ") | model")
    assert first_reason(cat, isvc(), revision, "srt-other") == joined


def test_combining_only_the_first_match_reports_one_reason_per_entry(tmp_path: Path) -> None:
    cat = catalog(model(), runtime("srt-other", entries=MISMATCHED))
    rules = copy_rules(tmp_path)
    edit_text(rules / "20-formats.yaml", "    combine: collect\n", "    combine: first\n")
    edit_text(rules / "20-formats.yaml", ", format name mismatch (model=safetensors, runtime=pytorch)", "")
    edit_text(
        rules / "20-formats.yaml",
        '          reason: "quantization mismatch (model=fp8, runtime=int4), format name mismatch'
        ' (model=pytorch, runtime=safetensors)"\n',
        '          reason: "quantization mismatch (model=fp8, runtime=int4)"\n',
    )
    edit_text(
        rules / "25-diffusion-pipeline.yaml",
        ", model has architecture QwenImagePipeline but runtime has no architecture requirement",
        "",
    )
    revision = build_revision(rules)
    assert first_reason(cat, isvc(), revision, "srt-other") == JOINED.replace(
        ", format name mismatch (model=safetensors, runtime=onnx)", ""
    )


def test_removing_a_request_level_check_lets_the_request_through(tmp_path: Path) -> None:
    cat = catalog(model(disabled=True), runtime("srt-llama"))
    assert select(cat, parsed_isvc(isvc()), default_revision()).error.endswith("is disabled")
    named = parsed_isvc(isvc(runtime_name="srt-llama"))
    refused = resolve(cat, named, default_revision()).refusal
    assert refused is not None and refused.rule_id == "model-disabled"

    rules = copy_rules(tmp_path)

    def drop(doc: dict[str, Any]) -> None:
        doc["rules"] = [r for r in doc["rules"] if r["id"] != "model-disabled"]

    edit_yaml(rules / "00-admission.yaml", drop)
    revision = build_revision(rules)
    assert selected(cat, isvc(), revision) == "srt-llama"
    assert resolve(cat, named, revision).refusal is None


def test_changing_a_kind_changes_what_a_named_runtime_gets(tmp_path: Path) -> None:
    cat = catalog(model(), runtime("srt-h100", classes=["nvidia-h100"]))
    request = parsed_isvc(isvc(runtime_name="srt-h100", acceleratorSelector={"acceleratorClass": "nvidia-l40s"}))
    advised = resolve(cat, request, default_revision())
    assert advised.refusal is None and advised.warning and advised.event_reason == "RuntimeCompatibilityAdvisory"

    rules = copy_rules(tmp_path)
    edit_text(
        rules / "10-runtime.yaml",
        "    effect: exclude\n    kind: Advisory\n    when: {accelerator_class_listed: false}",
        "    effect: exclude\n    kind: ValidationError\n    when: {accelerator_class_listed: false}",
    )
    rejected = resolve(cat, request, build_revision(rules))
    assert rejected.refusal is not None
    assert (rejected.refusal.kind, rejected.refusal.message) == (
        "ValidationError",
        "runtime does not support the required accelerator class",
    )


def test_changing_the_default_weight_changes_the_score(tmp_path: Path) -> None:
    cat = catalog(model(), runtime("srt-prio-2", entries=[entry(priority=2)]))
    request = isvc()
    assert verdict(cat, request, default_revision(), "srt-prio-2").score == (1 + 1) * 2

    rules = copy_rules(tmp_path)
    edit_text(rules / "90-selection.yaml", "  default_weight: 1\n", "  default_weight: 3\n")
    assert verdict(cat, request, build_revision(rules), "srt-prio-2").score == (3 + 3) * 2


def test_scoring_without_the_priority_changes_the_score_and_the_choice(tmp_path: Path) -> None:
    weighted = entry(priority=1)
    weighted["modelFormat"]["weight"] = 5
    cat = catalog(
        model(), runtime("srt-prio-3", entries=[entry(priority=3)]), runtime("srt-weighted", entries=[weighted])
    )
    request = isvc()
    assert verdict(cat, request, default_revision(), "srt-prio-3").score == 6
    assert selected(cat, request, default_revision()) == "srt-prio-3"  # 6 ties with (5 + 1) x 1: the name decides

    rules = copy_rules(tmp_path)
    edit_text(rules / "90-selection.yaml", "  multiply_by: priority\n", "  multiply_by: none\n")
    revision = build_revision(rules)
    assert verdict(cat, request, revision, "srt-prio-3").score == 2
    assert verdict(cat, request, revision, "srt-weighted").score == 6
    assert selected(cat, request, revision) == "srt-weighted"


def test_changing_the_ranking_changes_the_selection(tmp_path: Path) -> None:
    cat = catalog(model(), runtime("sr-local", kind="ServingRuntime"), runtime("csr-shared"))
    request = isvc()
    assert selected(cat, request, default_revision()) == "sr-local"

    rules = copy_rules(tmp_path)
    edit_text(
        rules / "90-selection.yaml",
        "{key: kind, order: [ServingRuntime, ClusterServingRuntime]}",
        "{key: kind, order: [ClusterServingRuntime, ServingRuntime]}",
    )
    assert selected(cat, request, build_revision(rules)) == "csr-shared"


ORGANISATION_RULES = """\
description: Organisation policy, added beside OME's rules.
rules:
  - id: runtime-image-unpinned
    description: Every runner image must be pinned to a tag other than latest, or a digest.
    order: 150
    applies_to: runtime
    effect: exclude
    kind: Advisory
    when: {runtime_image_unpinned: true}
    reason: "runtime image is not pinned: {runtime_images}"
    tests:
      - facts: {runtime_image_unpinned: true, runtime_images: ["sglang:latest"]}
        expect: {rule: runtime-image-unpinned, effect: exclude, reason: "runtime image is not pinned: sglang:latest"}
      - facts: {runtime_image_unpinned: false}
        expect: {effect: pass}
"""


def test_adding_an_organisation_rule_excludes_a_runtime(tmp_path: Path) -> None:
    latest = "docker.io/lmsysorg/sglang:latest"
    cat = catalog(
        model(),
        runtime("srt-a-floating", entries=[entry(priority=5)], image=latest),
        runtime("srt-b-pinned"),
    )
    request = isvc()
    assert selected(cat, request, default_revision()) == "srt-a-floating"

    rules = copy_rules(tmp_path)
    (rules / "50-organisation.yaml").write_text(ORGANISATION_RULES)
    revision = build_revision(rules)
    assert revision.tests_run == default_revision().tests_run + 2
    floating = verdict(cat, request, revision, "srt-a-floating")
    assert not floating.selectable and not floating.compatible
    assert floating.reason is not None and floating.reason.message == f"runtime image is not pinned: {latest}"
    assert selected(cat, request, revision) == "srt-b-pinned"

"""rules/examples: organisation policies a platform team adds. Each carries its own
tests (run when the revision is built) and changes decisions once dropped in."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from testkit import diffusers_backend as diffusers
from testkit.deciding import explain_isvc, select
from testkit.llama import llama_entry
from testkit.shared import RULES

from policyd.catalog.snapshot import Catalog
from policyd.decision.admission import admit_runtime
from policyd.decision.decider import Decider
from policyd.policy.revision import Revision, build_revision
from policyd.resources.manifests import parse_inference_service, parse_model, parse_object, parse_runtime

EXAMPLES = sorted((RULES / "examples").glob("*.yaml"))

MODEL = {
    "kind": "ClusterBaseModel",
    "metadata": {"name": "llama"},
    "spec": {
        "modelFormat": {"name": "safetensors", "version": "1.0.0"},
        "modelFramework": {"name": "transformers", "version": "4.45.0.dev0"},
        "modelArchitecture": "LlamaForCausalLM",
    },
}


def runtime(name: str, image: str = "sglang:v0.5.5", labels: dict[str, str] | None = None, **annotations: str) -> Any:
    return parse_runtime(
        {
            "kind": "ClusterServingRuntime",
            "metadata": {"name": name, "labels": labels or {}, "annotations": annotations},
            "spec": {
                "supportedModelFormats": [llama_entry()],
                "engineConfig": {"runner": {"image": image}},
            },
        }
    )


def isvc(namespace: str = "default") -> Any:
    return parse_inference_service(
        {
            "kind": "InferenceService",
            "metadata": {"name": "x", "namespace": namespace},
            "spec": {"model": {"name": "llama"}},
        }
    )


def with_example(tmp_path: Path, example: str) -> Revision:
    for f in RULES.glob("*.yaml"):
        shutil.copy(f, tmp_path)
    shutil.copy(RULES / "examples" / example, tmp_path)
    return build_revision(tmp_path)


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_every_example_passes_its_own_tests_next_to_the_default_rules(example: Path, tmp_path: Path) -> None:
    revision = with_example(tmp_path, example.name)
    example_rules = [r for r in revision.policy.rules if r.source.endswith(example.name)]
    assert example_rules and all(r.tests for r in example_rules)


def test_unpinned_images_are_never_auto_selected(tmp_path: Path) -> None:
    revision = with_example(tmp_path, "pinned-images.yaml")
    catalog = Catalog.of([parse_model(MODEL), runtime("floating", "lmsysorg/sglang:latest"), runtime("bare", "sglang")])
    result = select(catalog, isvc(), revision)
    assert result.ranking == ()
    assert (
        "floating (runtime image is not pinned to a tag or digest (or uses latest): lmsysorg/sglang:latest)"
        in result.error
    )


def test_a_namespace_may_only_use_runtimes_with_its_label(tmp_path: Path) -> None:
    revision = with_example(tmp_path, "namespace-runtime-label.yaml")
    labelled = runtime("team-a-runtime", labels={"policy.example.com/team": "team-a"})
    catalog = Catalog.of([parse_model(MODEL), labelled, runtime("shared-runtime")])
    assert [e.runtime.meta.name for e in select(catalog, isvc("team-a"), revision).ranking] == ["team-a-runtime"]
    assert len(select(catalog, isvc("team-b"), revision).ranking) == 2
    verdicts = {e.runtime.meta.name: e for e in explain_isvc(catalog, isvc("team-a"), revision).runtimes}
    assert verdicts["shared-runtime"].compatible and not verdicts["shared-runtime"].selectable


def test_preferred_runtimes_score_ten_more_and_win(tmp_path: Path) -> None:
    revision = with_example(tmp_path, "preferred-runtimes.yaml")
    preferred = runtime("z-preferred", **{"policy.example.com/preferred": "true"})
    catalog = Catalog.of([parse_model(MODEL), runtime("a-plain"), preferred])
    ranking = select(catalog, isvc(), revision).ranking
    assert [(e.runtime.meta.name, e.score) for e in ranking] == [("z-preferred", 12), ("a-plain", 2)]


def test_a_diffusers_backend_entry_without_an_architecture_serves_any_pipeline(tmp_path: Path) -> None:
    any_pipeline = [diffusers.entry(architecture=None)]
    backend = diffusers.runtime("diffusers-any", entries=any_pipeline)
    sglang = diffusers.runtime(
        "sglang-any", command=["sglang", "serve", "--model-path", "$(MODEL_PATH)"], entries=any_pipeline
    )
    models = [diffusers.model("qwen-image"), diffusers.model("wan", pipeline_class="WanPipeline")]
    catalog = Catalog.of([parse_object(o) for o in (*models, backend, sglang)])
    revision = with_example(tmp_path, "diffusers-backend-any-pipeline.yaml")
    for name in ("qwen-image", "wan"):
        isvc = parse_inference_service(diffusers.isvc(model=name))
        assert [e.runtime.meta.name for e in select(catalog, isvc, revision).ranking] == ["diffusers-any"]
    without = select(catalog, parse_inference_service(diffusers.isvc(model="wan")), build_revision(RULES))
    assert without.ranking == ()
    assert "model has architecture WanPipeline but runtime has no architecture requirement" in without.error


def _csr(name: str) -> Any:
    entry = {**llama_entry(), "autoSelect": True, "priority": 1}
    return parse_runtime(
        {
            "kind": "ClusterServingRuntime",
            "metadata": {"name": name},
            "spec": {"supportedModelFormats": [entry], "protocolVersions": ["openAI"]},
        }
    )


def test_same_priority_refused_denies_what_the_bundled_rules_admit_with_a_warning(tmp_path: Path) -> None:
    catalog = Catalog.of([_csr("csr-a")])
    message = "same priority assigned for the model format safetensors in the clusterservingruntimes csr-a and csr-b"
    bundled = admit_runtime(catalog, _csr("csr-b"), Decider(build_revision(RULES)))
    assert (bundled.denial, bundled.warnings) == (None, (message,))
    refused = admit_runtime(catalog, _csr("csr-b"), Decider(with_example(tmp_path, "same-priority-refused.yaml")))
    assert refused.denial is not None and refused.denial.message == message


def test_refuse_what_ome_misreads_denies_what_the_bundled_rules_admit_with_a_warning(tmp_path: Path) -> None:
    doc = {
        "kind": "ClusterServingRuntime",
        "metadata": {"name": "srt-2b"},
        "spec": {"supportedModelFormats": [llama_entry()], "modelSizeRange": {"min": "2b", "max": "4B"}},
    }
    note = "spec.modelSizeRange.min: '2b' is not a size OME reads; it counts as 0"
    bundled = admit_runtime(Catalog.of([]), parse_runtime(doc), Decider(build_revision(RULES)))
    assert (bundled.denial, bundled.warnings) == (None, (note,))
    revision = with_example(tmp_path, "refuse-what-ome-misreads.yaml")
    refused = admit_runtime(Catalog.of([]), parse_runtime(doc), Decider(revision))
    assert refused.denial is not None and refused.denial.message == f"runtime srt-2b is not read as written: {note}"

"""rules/examples: organisation policies a platform team adds. Each carries its own
tests (run when the revision is built) and changes decisions once dropped in."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from testkit.llama import llama_entry
from testkit.shared import RULES

from policyd.catalog.snapshot import Catalog
from policyd.decision.orchestrator import explain_isvc, select
from policyd.policy.revision import Revision, build_revision
from policyd.resources.manifests import parse_inference_service, parse_model, parse_runtime

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

"""Runtimes of one shape are judged once per kind of request; a verdict that prints a fact no
rule tests (the runtime's name) is told apart by it, so each runtime reads its own name."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from testkit.llama import MODEL_NAME, llama_entry, model_manifest
from testkit.shared import RULES

from policyd.catalog.snapshot import Catalog
from policyd.decision.decider import Decider
from policyd.decision.verdict_cache import SharedVerdicts
from policyd.decision.verdicts import Verdict
from policyd.facts.derive import Derivation
from policyd.policy.revision import Revision, build_revision
from policyd.resources.manifests import parse_inference_service, parse_object
from policyd.resources.objects import ServingRuntime

NAMING_RULE = """
rules:
  - id: no-wide-ranges
    order: 150
    applies_to: runtime
    effect: exclude
    kind: Advisory
    when: {size_range_max: 800B}
    reason: "runtime {runtime_name} takes models up to {size_range_max}"
"""


def _runtime(name: str) -> ServingRuntime:
    doc: dict[str, Any] = {
        "apiVersion": "ome.io/v1beta1",
        "kind": "ClusterServingRuntime",
        "metadata": {"name": name, "labels": {"copy": name}},
        "spec": {
            "supportedModelFormats": [llama_entry()],
            "modelSizeRange": {"min": "1B", "max": "800B"},
            "engineConfig": {"runner": {"name": "engine", "image": "srt:v1"}},
        },
    }
    runtime = parse_object(doc)
    assert isinstance(runtime, ServingRuntime)
    return runtime


COPIES = [_runtime(f"copy-{i}") for i in range(5)]
CATALOG = Catalog.of([*COPIES, parse_object(model_manifest())])
ISVC = parse_inference_service(
    {
        "apiVersion": "ome.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {"name": "chat", "namespace": "default"},
        "spec": {"model": {"name": MODEL_NAME}, "engine": {}},
    }
)


@pytest.fixture(scope="module")
def naming(tmp_path_factory: pytest.TempPathFactory) -> Revision:
    root = tmp_path_factory.mktemp("rules")
    for path in RULES.glob("*.yaml"):
        shutil.copy(path, root)
    Path(root, "50-naming.yaml").write_text(NAMING_RULE)
    return build_revision(root)


def _counted(revision: Revision, calls: list[int]) -> Any:
    def judge(todo: Sequence[ServingRuntime]) -> list[Verdict]:
        calls.append(len(todo))
        return [v.verdict for v in Decider(revision).judge(CATALOG, ISVC, todo)]

    return judge


def test_runtimes_of_one_shape_are_judged_once() -> None:
    revision = build_revision(RULES)
    shared, calls = SharedVerdicts(revision.policy, Derivation()), []
    verdicts = shared.judged(("request",), COPIES, _counted(revision, calls))[0]
    assert calls == [1]
    assert all(v.selectable for v in verdicts)
    assert shared.judged(("request",), COPIES, _counted(revision, calls))[0] == verdicts
    assert calls == [1]


def test_a_verdict_printing_the_runtime_name_is_that_runtimes_own(naming: Revision) -> None:
    shared, calls = SharedVerdicts(naming.policy, Derivation()), []
    verdicts = shared.judged(("request",), COPIES, _counted(naming, calls))[0]
    assert calls == [1, len(COPIES) - 1]  # the first judged, then the others its reason names apart
    assert [v.reason.message if v.reason else "" for v in verdicts] == [
        f"runtime {r.meta.name} takes models up to 800B" for r in COPIES
    ]
    assert shared.judged(("another request",), COPIES, _counted(naming, calls))[0] == verdicts
    assert calls == [1, len(COPIES) - 1, len(COPIES)]  # known by now: judged apart at once


def test_explain_names_each_runtime_in_its_own_reason(naming: Revision) -> None:
    explanation = Decider(naming).explain_isvc(CATALOG, ISVC)
    assert [(v.runtime.meta.name, v.reason.message if v.reason else "") for v in explanation.runtimes] == [
        (r.meta.name, f"runtime {r.meta.name} takes models up to 800B") for r in COPIES
    ]

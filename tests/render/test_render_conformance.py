"""The render/ conformance cases, run directly against render() with the modes policyd decides
(the gRPC runner lives elsewhere), for the schema check of every object they render. The
InferenceService gets a uid, as one the controller renders for has."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from policyd.clients.policyctl.conformance.paths import check
from policyd.clients.renderer.render import RenderInput, render

from .builders import UID, render_input
from .schemas import schema_errors
from .shared_data import RENDER_CASES

CASES = sorted(RENDER_CASES.glob("*.yaml"))


def _input(case: dict[str, Any]) -> RenderInput:
    request = case["request"]
    isvc = request["inferenceService"]
    isvc["metadata"]["uid"] = UID
    runtimes = [obj for obj in case["objects"] if obj["kind"] in ("ServingRuntime", "ClusterServingRuntime")]
    named = isvc["spec"].get("runtime", {}).get("name")
    if named:
        runtime = next(r for r in runtimes if r["metadata"]["name"] == named)
    else:
        (runtime,) = runtimes
    model_name = isvc["spec"].get("model", {}).get("name")
    model = next(
        (o for o in case["objects"] if o["kind"].endswith("BaseModel") and o["metadata"]["name"] == model_name), None
    )
    accelerator_class = request.get("acceleratorClass")
    classes = {"engine": accelerator_class, "decoder": accelerator_class} if accelerator_class else {}
    entry = runtime["spec"]["supportedModelFormats"][0]
    return render_input(isvc, runtime, model, classes, entry.get("acceleratorConfig"))


def test_render_cases_exist() -> None:
    assert CASES, f"no render cases in {RENDER_CASES}"


@pytest.mark.parametrize("path", CASES, ids=lambda path: Path(path).stem)
def test_render_case_assertions_hold(path: Path) -> None:
    case = yaml.safe_load(path.read_text())
    assert case["request"]["action"] == "render"
    result = render(_input(case))
    root = {"workloads": result.objects, "errors": result.errors}
    failures = [f for f in (check(root, a) for a in case["expect"]["assertions"]) if f]
    assert not failures, failures
    for obj in result.objects:
        assert not schema_errors(obj), (obj["metadata"]["name"], schema_errors(obj))

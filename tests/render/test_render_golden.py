"""Golden renders of the spec's examples: the 70B runtime of 004 on nvidia-l40s and on
nvidia-h100, and the MultiNode runtime of 001. Inputs are read from the spec pages (the
InferenceService given a uid, as a created one has); the expected objects are in golden/.
Set UPDATE_GOLDEN=1 to rewrite them after a deliberate change."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from policyd.clients.renderer.render import RenderInput, render

from .builders import UID, render_input
from .schemas import schema_errors
from .shared_data import catalog_model, spec_manifest

GOLDEN = Path(__file__).parent / "golden"
RUNTIMES_PAGE = "004_bd905bc5c9728906.txt"
MODES_PAGE = "001_e5dcabf2510ce189.txt"


def _seventy_b(accelerator_class: str) -> RenderInput:
    runtime = spec_manifest(RUNTIMES_PAGE, "ClusterServingRuntime", "sglang-llama-3-3-70b")
    isvc = spec_manifest(RUNTIMES_PAGE, "InferenceService", "llama-3-3-70b-instruct")
    isvc["metadata"]["uid"] = UID
    isvc["spec"]["acceleratorSelector"] = {"acceleratorClass": accelerator_class}
    config = runtime["spec"]["supportedModelFormats"][0]["acceleratorConfig"]
    model = catalog_model("llama-3-3-70b-instruct")
    return render_input(isvc, runtime, model, {"engine": accelerator_class}, config)


def _multinode() -> RenderInput:
    runtime = spec_manifest(MODES_PAGE, "ClusterServingRuntime", "srt-llama-3-3-70b-instruct-multinode")
    isvc = spec_manifest(MODES_PAGE, "InferenceService", "llama-3-70b")
    isvc["metadata"]["uid"] = UID
    isvc["spec"]["runtime"] = {"name": "srt-llama-3-3-70b-instruct-multinode"}
    return render_input(isvc, runtime, catalog_model("llama-3-3-70b-instruct"))


CASES = {
    "sglang-llama-3-3-70b-on-nvidia-l40s": lambda: _seventy_b("nvidia-l40s"),
    "sglang-llama-3-3-70b-on-nvidia-h100": lambda: _seventy_b("nvidia-h100"),
    "srt-llama-3-3-70b-instruct-multinode": _multinode,
}


def _rendered(name: str) -> dict[str, Any]:
    result = render(CASES[name]())
    return {"objects": result.objects, "errors": result.errors}


@pytest.mark.parametrize("name", sorted(CASES))
def test_spec_example_renders_as_its_golden_file(name: str) -> None:
    rendered = _rendered(name)
    path = GOLDEN / f"{name}.yaml"
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.write_text(yaml.safe_dump(rendered, sort_keys=False, width=120))
    assert rendered == yaml.safe_load(path.read_text())
    assert not rendered["errors"]
    for obj in rendered["objects"]:
        assert not schema_errors(obj), schema_errors(obj)


def _engine_args(name: str) -> list[str]:
    (deployment,) = [o for o in _rendered(name)["objects"] if o["kind"] == "Deployment"]
    args: list[str] = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    return args


def test_on_nvidia_l40s_the_70b_runtime_runs_tp_4_pp_2_with_mem_frac_085() -> None:
    assert _engine_args("sglang-llama-3-3-70b-on-nvidia-l40s")[-3:] == ["--tp-size=4", "--pp-size=2", "--mem-frac=0.85"]


def test_on_nvidia_h100_the_70b_runtime_keeps_its_own_flags() -> None:
    assert _engine_args("sglang-llama-3-3-70b-on-nvidia-h100")[-3:] == ["--tp-size=8", "--pp-size=1", "--mem-frac=0.9"]


def test_the_multinode_example_is_one_leaderworkerset_of_two_pods_despite_spec_omenative() -> None:
    lws, service = _rendered("srt-llama-3-3-70b-instruct-multinode")["objects"]
    assert (lws["kind"], service["kind"]) == ("LeaderWorkerSet", "Service")
    assert lws["spec"]["leaderWorkerTemplate"]["size"] == 2

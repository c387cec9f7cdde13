"""render(): errors instead of exceptions, deterministic output, inputs left alone."""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from typing import Any

import pytest

from policyd.clients.renderer.render import RenderInput, render
from policyd.semantics.modes import EffectiveMode

from .builders import make_isvc, make_model, make_runtime, runner

RAW = {"engine": EffectiveMode("engine", "RawDeployment", "default")}


def _input(**changes: Any) -> RenderInput:
    isvc = make_isvc(engine={"runner": {"env": [{"name": "A", "value": "{{.Name}}"}]}})
    runtime = make_runtime(engineConfig={"volumes": [{"name": "dshm", "emptyDir": {}}], "runner": runner()})
    base = RenderInput(isvc, runtime, "ClusterServingRuntime", make_model(), {"engine": "a"}, {"a": {}}, RAW)
    return replace(base, **changes)


def _with_spec(**spec: Any) -> dict[str, Any]:
    isvc = make_isvc(engine={})
    isvc["spec"].update(spec)
    return isvc


@pytest.mark.parametrize(
    ("changes", "error"),
    [
        ({"inference_service": {"spec": {"engine": {}}}}, "metadata.name: the InferenceService has no name"),
        ({"inference_service": {"metadata": {"name": "svc"}}}, "spec: the InferenceService has no spec"),
        (
            {"modes": {}},
            "engine: no deployment mode given for it (RenderRequest.modes, from policyd's Effective)",
        ),
        ({"mode_errors": {"engine": "policyd says no"}}, "engine: policyd says no"),
        (
            {"inference_service": _with_spec(model={"name": "llama", "fineTunedWeights": ["ft"]})},
            "spec.model.fineTunedWeights: fine-tuned serving is not rendered",
        ),
        (
            {"inference_service": _with_spec(engine=None)},
            "spec: the InferenceService declares no engine, decoder or router",
        ),
        (
            {"runtime_kind": "Runtime"},
            "runtime: unknown runtime kind 'Runtime' (one of ServingRuntime, ClusterServingRuntime)",
        ),
        ({"runtime": {"metadata": {"name": "rt"}}}, "runtime: the runtime manifest needs metadata.name and a spec"),
        (
            {
                "runtime": {**make_runtime("ServingRuntime"), "metadata": {"name": "rt", "namespace": "other"}},
                "runtime_kind": "ServingRuntime",
            },
            "runtime: ServingRuntime rt is in namespace other and serves only that namespace, not demo",
        ),
        ({"model": None}, "spec.model: the InferenceService names a base model but none was given to render"),
        ({"model": make_model(path=None)}, "spec.model: base model llama has no spec.storage.path for MODEL_PATH"),
        (
            {"accelerator_config": {"a": ["--x"]}},
            "engine.acceleratorConfig[a]: must be a mapping",
        ),
    ],
)
def test_bad_input_gives_a_specific_error_not_an_exception(changes: dict[str, Any], error: str) -> None:
    result = render(_input(**changes))
    assert result == type(result)([], [error])


@pytest.mark.parametrize(
    ("engine", "error"),
    [
        ("gpu", "engine: must be a mapping, got str"),
        ({"runner": ["x"]}, "engine.runner: must be a mapping (a Container), got list"),
        ({"runner": {"args": ["--port", 8080]}}, "engine.runner.args: must be a list of strings"),
        (
            {"runner": {"env": [{"value": "1"}]}},
            "engine.runner.env: must be a list of mappings, each with a string name",
        ),
        ({"runner": {"resources": {"limits": ["1"]}}}, "engine.runner.resources.limits: must be a mapping, got list"),
        ({"labels": {"team": 1}}, "engine.labels[team]: must be a string, got int"),
        ({"minReplicas": "1"}, "engine.minReplicas: must be a whole number >= 0, got '1'"),
        (
            {"worker": {"size": 1, "runner": {"command": "serve"}}},
            "engine.worker.runner.command: must be a list of strings",
        ),
        ({"containers": {"name": "x"}}, "engine.containers: must be a list of mappings"),
        ({"runner": {"volumeMounts": ["/data"]}}, "engine.runner.volumeMounts: must be a list of mappings"),
        ({"deploymentStrategy": "Recreate"}, "engine.deploymentStrategy: must be a mapping, got str"),
    ],
)
def test_a_malformed_component_gives_an_error_naming_the_field(engine: Any, error: str) -> None:
    result = render(_input(inference_service=make_isvc(engine=engine)))
    assert result.errors == [error]


def test_rendering_is_deterministic() -> None:
    first, second = render(_input()), render(_input())
    assert json.dumps(first.objects) == json.dumps(second.objects)


def test_rendering_leaves_its_input_unchanged_and_shares_nothing_with_it_or_with_later_renders() -> None:
    inp = _input()
    before = copy.deepcopy(inp)
    result = render(inp)
    rendered = copy.deepcopy(result)
    for obj in result.objects:
        obj["metadata"]["labels"]["x"] = "y"
        obj["metadata"]["ownerReferences"][0]["name"] = "other"
    pod = result.objects[0]["spec"]["template"]["spec"]
    pod["volumes"][0]["emptyDir"]["medium"] = "Memory"
    pod["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "9"
    assert inp == before
    assert render(inp) == rendered

"""004, "The engine, decoder and router": the annotation ome.io/engine: sglang-pd on a runtime
fills in an SGLang prefill-decode engine, decoder and router wherever the runtime leaves fields
unset; its images use the latest tag."""

from __future__ import annotations

from typing import Any

from .builders import container, env, make_isvc, make_runtime, of_kind, run
from .schemas import schema_errors

PD = {"ome.io/engine": "sglang-pd"}


def _pd_runtime(**configs: Any) -> dict[str, Any]:
    runtime = make_runtime(**configs)
    runtime["metadata"]["annotations"] = dict(PD)
    return runtime


def _deployments(result: Any) -> dict[str, dict[str, Any]]:
    assert not result.errors, result.errors
    return {o["metadata"]["name"]: o for o in of_kind(result, "Deployment")}


def test_a_runtime_with_only_the_annotation_renders_a_prefill_engine_a_decode_decoder_and_a_pd_router() -> None:
    result = run(make_isvc(engine={}, decoder={}, router={}), _pd_runtime())
    deployments = _deployments(result)
    assert set(deployments) == {"svc-engine", "svc-decoder", "svc-router"}
    engine, decoder = container(deployments["svc-engine"]), container(deployments["svc-decoder"])
    router = container(deployments["svc-router"], name="router")
    assert engine["command"][-2:] == ["--disaggregation-mode", "prefill"]
    assert decoder["command"][-2:] == ["--disaggregation-mode", "decode"]
    assert "--served-model-name" in engine["command"] and "svc" in engine["command"]  # {{.Name}} filled in
    assert "--pd-disaggregation" in router["command"]
    assert "component=engine ome.io/inferenceservice=$(INFERENCESERVICE_NAME)" in router["command"]
    assert "component=decoder ome.io/inferenceservice=$(INFERENCESERVICE_NAME)" in router["command"]
    for c in (engine, decoder, router):
        assert c["image"].endswith(":latest")
    assert env(engine)["PARALLELISM_SIZE"] == "1" and "MODEL_PATH" in env(decoder)
    for obj in result.objects:
        assert not schema_errors(obj), (obj["kind"], schema_errors(obj))


def test_what_the_runtime_sets_wins_over_the_template_field_by_field() -> None:
    runtime = _pd_runtime(
        engineConfig={"runner": {"image": "docker.io/lmsysorg/sglang:v0.5.5", "args": ["--tp-size=2"]}},
        decoderConfig={
            "runner": {"resources": {"limits": {"nvidia.com/gpu": "2"}, "requests": {"nvidia.com/gpu": "2"}}}
        },
    )
    deployments = _deployments(run(make_isvc(engine={}, decoder={}), runtime))
    engine, decoder = container(deployments["svc-engine"]), container(deployments["svc-decoder"])
    assert engine["image"] == "docker.io/lmsysorg/sglang:v0.5.5"
    assert engine["args"] == ["--tp-size=2"]
    assert "--disaggregation-mode" in engine["command"], "the template's command stays"
    assert decoder["resources"]["limits"]["nvidia.com/gpu"] == "2"
    assert env(decoder)["PARALLELISM_SIZE"] == "2"
    assert decoder["image"].endswith(":latest")


def test_only_the_components_the_inferenceservice_declares_are_rendered() -> None:
    result = run(make_isvc(engine={}), _pd_runtime())
    assert set(_deployments(result)) == {"svc-engine"}


def test_the_inferenceservice_still_wins_over_both() -> None:
    isvc = make_isvc(engine={"runner": {"image": "mine:1"}}, decoder={}, router={})
    assert container(_deployments(run(isvc, _pd_runtime()))["svc-engine"])["image"] == "mine:1"


def test_an_unknown_engine_is_an_error_naming_the_annotation() -> None:
    runtime = _pd_runtime()
    runtime["metadata"]["annotations"] = {"ome.io/engine": "vllm-pd"}
    result = run(make_isvc(engine={}), runtime)
    assert result.errors == ["runtime metadata.annotations[ome.io/engine]: unknown engine 'vllm-pd' (one of sglang-pd)"]

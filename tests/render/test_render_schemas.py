"""Every rendered object validates against the real schemas with unknown fields refused, for
every ClusterServingRuntime in the OME catalog."""

from __future__ import annotations

import pytest

from policyd.clients.renderer.render import RenderInput, render

from .builders import make_isvc, make_runtime, only, render_input, run, runner
from .catalog import catalog_inputs
from .schemas import closed, schema_errors

CATALOG = catalog_inputs()
MULTI_NODE = {"ome.io/deploymentMode": "MultiNode"}
# Catalog runtimes whose engine (and decoder) have a leader and worker but declare no mode: they
# default to RawDeployment, which has no runner to run.
LEADER_WORKER_RUNTIMES = {"srt-deepseek-rdma", "srt-deepseek-rdma-pd", "srt-kimi-k2-pd"}


def test_the_catalog_is_there() -> None:
    assert len(CATALOG) > 200


@pytest.mark.parametrize(("name", "inp"), CATALOG, ids=[name for name, _ in CATALOG])
def test_a_catalog_runtime_renders_valid_objects_or_a_specific_error(name: str, inp: RenderInput) -> None:
    result = render(inp)
    if name in LEADER_WORKER_RUNTIMES:
        assert result.errors, "expected the leader/worker runtime to need a MultiNode mode"
        for error in result.errors:
            assert error.split(": ")[0] in ("engine", "decoder")
            assert (
                "Config.runner and the InferenceService sets none; its leader and worker run only in MultiNode" in error
            )
    else:
        assert not result.errors
        declared = [c for c in ("engine", "decoder", "router") if c in inp.inference_service["spec"]]
        deployments = [o["metadata"]["name"] for o in result.objects if o["kind"] == "Deployment"]
        assert deployments == [f"isvc-{name}-{c}" for c in declared]
    for obj in result.objects:
        assert not schema_errors(obj), schema_errors(obj)


@pytest.mark.parametrize("name", sorted(LEADER_WORKER_RUNTIMES))
def test_a_catalog_leader_worker_runtime_annotated_multinode_renders_valid_leaderworkersets(name: str) -> None:
    (inp,) = [inp for runtime, inp in CATALOG if runtime == name]
    spec = dict(inp.inference_service["spec"])
    for component in ("engine", "decoder"):
        if component in spec:
            spec[component] = {**spec[component], "annotations": MULTI_NODE}
    isvc = {**inp.inference_service, "spec": spec}
    result = render(render_input(isvc, inp.runtime, inp.model, {}, inp.accelerator_config))
    assert not result.errors
    kinds = {o["kind"] for o in result.objects}
    assert {"LeaderWorkerSet", "Service"} <= kinds
    assert ("Deployment" in kinds) == ("router" in spec)  # the router stays a Deployment
    for obj in result.objects:
        assert not schema_errors(obj), schema_errors(obj)


def test_closed_schemas_refuse_unknown_fields_except_where_unknown_fields_are_preserved() -> None:
    schema = {
        "type": "object",
        "properties": {
            "spec": {"type": "object", "properties": {"size": {"type": "integer"}}},
            "free": {"type": "object", "properties": {"a": {}}, "x-kubernetes-preserve-unknown-fields": True},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        },
    }
    tight = closed(schema)
    assert tight["additionalProperties"] is False
    assert tight["properties"]["spec"]["additionalProperties"] is False
    assert "additionalProperties" not in tight["properties"]["free"]
    assert tight["properties"]["labels"]["additionalProperties"] == {"type": "string"}


def test_schema_validation_refuses_an_unknown_field_in_a_leaderworkerset_and_a_deployment() -> None:
    runtime = make_runtime(engineConfig={"annotations": MULTI_NODE, "runner": runner(), "worker": {"size": 1}})
    lws = only(run(make_isvc(engine={}), runtime), "LeaderWorkerSet")
    lws["spec"]["leaderWorkerTemplate"]["sizes"] = 2
    assert schema_errors(lws) == [
        "spec.leaderWorkerTemplate: Additional properties are not allowed ('sizes' was unexpected)"
    ]
    deployment = only(run(make_isvc(engine={}), make_runtime(engineConfig={"runner": runner()})))
    deployment["spec"]["template"]["spec"]["runner"] = {}
    assert schema_errors(deployment) == [
        "spec.template.spec: Additional properties are not allowed ('runner' was unexpected)"
    ]

"""Where OME places the engine's and the decoder's pods from the AcceleratorClass chosen for them,
leaders and workers included (components/base.go UpdatePodSpecNodeSelector,
UpdateEngineAffinity, UpdateDecoderAffinity; utils/merging.go MergeNodeSelector, MergeResource)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent import futures
from typing import Any

import grpc
import pytest

from policyd.clients.renderer.names import model_node_label
from policyd.clients.renderer.service import RendererServicer
from policyd.contract import policy_pb2 as pb
from policyd.contract import render_pb2, render_pb2_grpc
from policyd.contract import resources_pb2 as rpb

from .builders import container, make_accelerator_class, make_isvc, make_model, make_runtime, only, run, runner
from .schemas import schema_errors

H100 = "nvidia-h100"
MODEL_READY = {model_node_label("llama", None): "Ready"}
H100_NODES = {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
ZONE_AFFINITY = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]
        }
    }
}
MULTI_NODE = {"ome.io/deploymentMode": "MultiNode"}


def _h100(**spec: Any) -> dict[str, Any]:
    return make_accelerator_class(H100, **{"discovery": {"nodeSelector": H100_NODES}, **spec})


def _run(isvc: dict[str, Any], runtime: dict[str, Any], *classes: dict[str, Any]) -> Any:
    """Rendered with the engine and the decoder placed on nvidia-h100, given ``classes``."""
    return run(isvc, runtime, {"engine": H100, "decoder": H100}, class_objects=list(classes))


def _pod(obj: dict[str, Any], template: str = "") -> dict[str, Any]:
    holder = obj["spec"]["leaderWorkerTemplate"][template] if template else obj["spec"]["template"]
    pod: dict[str, Any] = holder["spec"]
    return pod


def _engine_pod(isvc: dict[str, Any], runtime: dict[str, Any], *classes: dict[str, Any]) -> dict[str, Any]:
    return _pod(only(_run(isvc, runtime, *classes)))


# MergeNodeSelector


def test_the_class_node_selector_overrides_the_runtimes_and_the_inferenceservices_overrides_the_classes() -> None:
    runtime = make_runtime(engineConfig={"runner": runner(), "nodeSelector": {"pool": "config", "disk": "ssd"}})
    runtime["spec"]["nodeSelector"] = {"pool": "runtime", "tier": "runtime", "rack": "runtime"}
    accelerator_class = _h100(discovery={"nodeSelector": {"pool": "class", "tier": "class"}})
    isvc = make_isvc(engine={"nodeSelector": {"tier": "isvc"}})
    assert _engine_pod(isvc, runtime, accelerator_class)["nodeSelector"] == {
        **MODEL_READY,
        "disk": "ssd",  # the merged component's own, which nothing else sets
        "rack": "runtime",
        "pool": "class",
        "tier": "isvc",
    }


def test_the_model_ready_node_selector_and_the_class_node_selector_both_land() -> None:
    pod = _engine_pod(make_isvc(engine={}), make_runtime(engineConfig={"runner": runner()}), _h100())
    assert pod["nodeSelector"] == {**MODEL_READY, **H100_NODES}


def test_only_a_component_serving_a_base_model_gets_the_merged_node_selector() -> None:
    runtime = make_runtime(engineConfig={"runner": runner()})
    runtime["spec"]["nodeSelector"] = {"pool": "runtime"}
    pod = _engine_pod(make_isvc(model=False, engine={}), runtime, _h100(discovery={"affinity": ZONE_AFFINITY}))
    assert "nodeSelector" not in pod
    assert pod["affinity"] == ZONE_AFFINITY  # UpdateEngineAffinity does not ask for a model


def test_a_class_whose_object_is_not_given_places_nothing_but_the_runtime_node_selector_still_lands() -> None:
    runtime = make_runtime(engineConfig={"runner": runner()})
    runtime["spec"]["nodeSelector"] = {"pool": "runtime"}
    pod = _engine_pod(make_isvc(engine={}), runtime)
    assert pod["nodeSelector"] == {**MODEL_READY, "pool": "runtime"}
    assert "affinity" not in pod


def test_the_decoder_is_placed_as_the_engine_and_the_router_is_not_placed() -> None:
    runtime = make_runtime(
        engineConfig={"runner": runner()}, decoderConfig={"runner": runner()}, routerConfig={"runner": runner()}
    )
    runtime["spec"]["nodeSelector"] = {"pool": "runtime"}
    result = run(
        make_isvc(engine={}, decoder={}, router={}),
        runtime,
        {"engine": H100, "decoder": "nvidia-l40s"},
        class_objects=[_h100(), make_accelerator_class("nvidia-l40s", discovery={"affinity": ZONE_AFFINITY})],
    )
    assert not result.errors, result.errors
    pods = {o["metadata"]["name"]: _pod(o) for o in result.objects if o["kind"] == "Deployment"}
    assert pods["svc-engine"]["nodeSelector"] == {**MODEL_READY, "pool": "runtime", **H100_NODES}
    assert "affinity" not in pods["svc-engine"]
    assert pods["svc-decoder"]["nodeSelector"] == {**MODEL_READY, "pool": "runtime"}
    assert pods["svc-decoder"]["affinity"] == ZONE_AFFINITY
    assert "nodeSelector" not in pods["svc-router"] and "affinity" not in pods["svc-router"]


# UpdateEngineAffinity, UpdateDecoderAffinity


def test_the_class_affinity_is_used_only_when_the_component_sets_none() -> None:
    runtime_affinity: dict[str, Any] = {"podAntiAffinity": {}}
    runtime = make_runtime(engineConfig={"runner": runner(), "affinity": runtime_affinity})
    accelerator_class = _h100(discovery={"affinity": ZONE_AFFINITY})
    assert _engine_pod(make_isvc(engine={}), runtime, accelerator_class)["affinity"] == ZONE_AFFINITY
    own: dict[str, Any] = {"podAffinity": {}}
    assert _engine_pod(make_isvc(engine={"affinity": own}), runtime, accelerator_class)["affinity"] == own


def test_a_class_without_affinity_leaves_the_components_affinity() -> None:
    runtime = make_runtime(engineConfig={"runner": runner(), "affinity": ZONE_AFFINITY})
    assert _engine_pod(make_isvc(engine={}), runtime, _h100())["affinity"] == ZONE_AFFINITY


def test_multinode_leader_and_worker_pods_are_placed_and_the_class_affinity_replaces_a_leaders_own() -> None:
    runtime = make_runtime(
        engineConfig={
            "annotations": MULTI_NODE,
            "runner": runner(),
            "leader": {"affinity": {"podAffinity": {}}},
            "worker": {"size": 1},
        }
    )
    runtime["spec"]["nodeSelector"] = {"pool": "runtime"}
    accelerator_class = _h100(discovery={"nodeSelector": H100_NODES, "affinity": ZONE_AFFINITY})
    lws = only(_run(make_isvc(engine={}), runtime, accelerator_class), "LeaderWorkerSet")
    for template in ("leaderTemplate", "workerTemplate"):
        pod = _pod(lws, template)
        assert pod["nodeSelector"] == {**MODEL_READY, "pool": "runtime", **H100_NODES}, template
        # OME looks at the InferenceService's engine-level affinity only
        assert pod["affinity"] == ZONE_AFFINITY, template
    assert not schema_errors(lws), schema_errors(lws)


# MergeResource


def _resources(isvc: dict[str, Any], runtime: dict[str, Any], *classes: dict[str, Any]) -> Any:
    return container(only(_run(isvc, runtime, *classes)))["resources"]


GPU_CLASS = {"resources": [{"name": "nvidia.com/gpu", "quantity": "2"}]}


def test_merge_resource_the_accelerator_class_resources_override_the_runners_requests_and_limits() -> None:
    eight = {"nvidia.com/gpu": "8", "cpu": "4"}
    runtime = make_runtime(engineConfig={"runner": runner(resources={"requests": eight, "limits": eight})})
    resources = _resources(make_isvc(engine={}), runtime, _h100(**GPU_CLASS))
    assert resources == {
        "requests": {"nvidia.com/gpu": "2", "cpu": "4"},
        "limits": {"nvidia.com/gpu": "2", "cpu": "4"},
    }


def test_merge_resource_adds_what_the_runner_lacks_from_the_runtime_container_of_its_name() -> None:
    runtime = make_runtime(engineConfig={"runner": runner()})
    runtime["spec"]["containers"] = [
        {"name": "other", "resources": {"requests": {"cpu": "99"}}},
        {"name": "ome-container", "resources": {"requests": {"memory": "64Gi", "nvidia.com/gpu": "4"}}},
    ]
    resources = _resources(make_isvc(engine={}), runtime)
    assert resources == {
        "requests": {"nvidia.com/gpu": "1", "memory": "64Gi"},
        "limits": {"nvidia.com/gpu": "1"},
    }


def test_merge_resource_applies_only_when_the_inferenceservice_runner_sets_no_resources() -> None:
    runtime = make_runtime(engineConfig={"runner": runner()})
    own = {"limits": {"nvidia.com/gpu": "4"}}
    assert _resources(make_isvc(engine={"runner": {"resources": own}}), runtime, _h100(**GPU_CLASS)) == {
        "requests": {"nvidia.com/gpu": "1"},
        "limits": {"nvidia.com/gpu": "4"},
    }
    # a runner of its own without resources is no reason to skip it
    only_args = make_isvc(engine={"runner": {"args": ["--tp-size=2"]}})
    assert _resources(only_args, runtime, _h100(**GPU_CLASS))["limits"] == {"nvidia.com/gpu": "2"}


def test_merge_resource_gives_a_class_resource_without_a_quantity_the_crd_default_of_1() -> None:
    runtime = make_runtime(engineConfig={"runner": runner(resources={})})
    for accelerator_class in (
        _h100(resources=[{"name": "nvidia.com/gpu"}]),
        _h100(resources=[{"name": "nvidia.com/gpu", "quantity": None}]),
    ):
        assert _resources(make_isvc(engine={}), runtime, accelerator_class) == {
            "requests": {"nvidia.com/gpu": "1"},
            "limits": {"nvidia.com/gpu": "1"},
        }


def test_merge_resource_reaches_the_multinode_leader_and_worker_runners() -> None:
    runtime = make_runtime(engineConfig={"annotations": MULTI_NODE, "runner": runner(), "worker": {"size": 1}})
    lws = only(_run(make_isvc(engine={}), runtime, _h100(**GPU_CLASS)), "LeaderWorkerSet")
    for template in ("leaderTemplate", "workerTemplate"):
        assert container(lws, template)["resources"]["limits"] == {"nvidia.com/gpu": "2"}, template


def test_placed_objects_are_valid_kubernetes_objects() -> None:
    accelerator_class = _h100(discovery={"nodeSelector": H100_NODES, "affinity": ZONE_AFFINITY}, **GPU_CLASS)
    result = _run(make_isvc(engine={}), make_runtime(engineConfig={"runner": runner()}), accelerator_class)
    assert not result.errors
    for obj in result.objects:
        assert not schema_errors(obj), schema_errors(obj)


# Bad input


@pytest.mark.parametrize(
    ("accelerator_class", "error"),
    [
        (
            _h100(discovery={"nodeSelector": ["gpu"]}),
            "AcceleratorClass nvidia-h100 spec.discovery.nodeSelector: must be a mapping of strings, got list",
        ),
        (
            _h100(discovery={"nodeSelector": {"gpu": 1}}),
            "AcceleratorClass nvidia-h100 spec.discovery.nodeSelector[gpu]: must be a string, got int",
        ),
        (
            _h100(discovery={"affinity": "zone-a"}),
            "AcceleratorClass nvidia-h100 spec.discovery.affinity: must be a mapping, got str",
        ),
        (_h100(discovery="h100"), "AcceleratorClass nvidia-h100 spec.discovery: must be a mapping, got str"),
        (
            _h100(resources={"nvidia.com/gpu": 1}),
            "AcceleratorClass nvidia-h100 spec.resources: must be a list, got dict",
        ),
        (
            _h100(resources=[{"quantity": "1"}]),
            "AcceleratorClass nvidia-h100 spec.resources[0].name: must be a resource name",
        ),
        (
            _h100(resources=[{"name": "nvidia.com/gpu", "quantity": True}]),
            "AcceleratorClass nvidia-h100 spec.resources[0].quantity: must be a quantity, got True",
        ),
        ({**_h100(), "kind": "Node"}, "AcceleratorClass nvidia-h100 kind: must be AcceleratorClass, got 'Node'"),
        ({**_h100(), "metadata": {}}, "AcceleratorClass metadata.name: an AcceleratorClass needs a name"),
    ],
)
def test_a_malformed_accelerator_class_is_an_error_naming_its_field(accelerator_class: Any, error: str) -> None:
    result = _run(make_isvc(engine={}), make_runtime(engineConfig={"runner": runner()}), accelerator_class)
    assert (result.objects, result.errors) == ([], [error])


@pytest.mark.parametrize(
    ("spec", "error"),
    [
        ({"nodeSelector": {"pool": 1}}, "engine.runtime spec.nodeSelector[pool]: must be a string, got int"),
        ({"containers": {"name": "x"}}, "engine.runtime spec.containers: must be a list, got dict"),
        (
            {"containers": [{"name": "ome-container", "resources": {"requests": ["cpu"]}}]},
            "engine.runtime spec.containers[0].resources.requests: must be a mapping, got list",
        ),
    ],
)
def test_a_malformed_runtime_node_selector_or_container_is_an_error_naming_its_field(
    spec: dict[str, Any], error: str
) -> None:
    runtime = make_runtime(engineConfig={"runner": runner()})
    runtime["spec"].update(spec)
    assert _run(make_isvc(engine={}), runtime).errors == [error]


# Through the renderer's gRPC service


@pytest.fixture(scope="module")
def renderer() -> Iterator[render_pb2_grpc.RendererServiceStub]:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=1))
    render_pb2_grpc.add_RendererServiceServicer_to_server(RendererServicer(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            yield render_pb2_grpc.RendererServiceStub(channel)
    finally:
        server.stop(None)


def _request(*class_objects: rpb.Object) -> render_pb2.RenderRequest:
    def as_object(manifest: dict[str, Any]) -> rpb.Object:
        return rpb.Object(manifest=json.dumps(manifest))

    return render_pb2.RenderRequest(
        inference_service=rpb.InferenceServiceInput(manifest=json.dumps(make_isvc(engine={}))),
        runtime=as_object(make_runtime(engineConfig={"runner": runner()})),
        model=as_object(make_model()),
        accelerator_classes={"engine": H100},
        entry_index=-1,
        modes=[pb.ComponentMode(component="engine", mode="RawDeployment", source="default")],
        accelerator_class_objects=class_objects,
    )


def test_the_renderer_service_places_pods_on_the_accelerator_class_objects_in_the_request(
    renderer: render_pb2_grpc.RendererServiceStub,
) -> None:
    h100 = rpb.Object(manifest=json.dumps(_h100(discovery={"nodeSelector": H100_NODES}, **GPU_CLASS)))
    reply = renderer.Render(_request(h100), timeout=10)
    assert list(reply.errors) == []
    (deployment,) = [json.loads(o) for o in reply.objects if json.loads(o)["kind"] == "Deployment"]
    assert _pod(deployment)["nodeSelector"] == {**MODEL_READY, **H100_NODES}
    assert container(deployment)["resources"]["limits"] == {"nvidia.com/gpu": "2"}


def test_an_accelerator_class_object_that_is_not_json_is_invalid_argument_naming_it(
    renderer: render_pb2_grpc.RendererServiceStub,
) -> None:
    with pytest.raises(grpc.RpcError) as raised:
        renderer.Render(_request(rpb.Object(manifest="{")), timeout=10)
    assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert raised.value.details().startswith("accelerator_class_objects[0].manifest: ")

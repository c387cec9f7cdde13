"""The objects for each component's effective deployment mode: a Deployment for a single-node
component, a LeaderWorkerSet for MultiNode (001, 004)."""

from __future__ import annotations

import pytest

from .builders import container, make_isvc, make_runtime, only, run, runner

MULTI_NODE = {"ome.io/deploymentMode": "MultiNode"}


def test_a_raw_deployment_component_is_a_deployment_named_after_the_inferenceservice_and_component() -> None:
    runtime = make_runtime(
        engineConfig={
            "labels": {"logging-forward": "enabled"},
            "annotations": {"prometheus.io/scrape": "true"},
            "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory"}}],
            "runner": runner(),
        }
    )
    deployment = only(run(make_isvc(engine={"minReplicas": 2, "maxReplicas": 4}), runtime))
    own = {"ome.io/inferenceservice": "svc", "component": "engine", "serving-runtime": "rt"}
    assert deployment["apiVersion"] == "apps/v1"
    assert deployment["metadata"] == {
        "name": "svc-engine",
        "namespace": "demo",
        "labels": {"logging-forward": "enabled", **own},
    }
    assert deployment["spec"]["replicas"] == 2
    assert deployment["spec"]["selector"] == {"matchLabels": {"ome.io/inferenceservice": "svc", "component": "engine"}}
    template = deployment["spec"]["template"]
    assert template["metadata"] == {
        "labels": {"logging-forward": "enabled", **own},
        "annotations": {"prometheus.io/scrape": "true"},
    }
    assert template["spec"] == {
        "containers": [container(deployment)],
        "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory"}}],
    }


def test_replicas_default_to_one() -> None:
    deployment = only(run(make_isvc(engine={}), make_runtime(engineConfig={"runner": runner()})))
    assert deployment["spec"]["replicas"] == 1


def test_ome_only_keys_are_dropped_from_pod_specs() -> None:
    engine = {
        "minReplicas": 1,
        "maxReplicas": 2,
        "scaleTarget": 5,
        "scaleMetric": "cpu",
        "autoScalingPolicy": {"x": 1},
        "acceleratorOverride": {"acceleratorClass": "a"},
        "nodeSelector": {"pool": "gpu"},
        "runner": runner(),
    }
    deployment = only(run(make_isvc(engine=engine), make_runtime(engineConfig={})))
    assert set(deployment["spec"]["template"]["spec"]) == {"containers", "nodeSelector"}


def test_the_component_labels_cannot_replace_the_labels_ome_sets() -> None:
    runtime = make_runtime(engineConfig={"labels": {"component": "mine"}, "runner": runner()})
    deployment = only(run(make_isvc(engine={}), runtime))
    assert deployment["spec"]["template"]["metadata"]["labels"]["component"] == "engine"


@pytest.mark.parametrize("mode", ["OMENative", "VirtualDeployment", "RawDeployment"])
def test_a_single_node_component_renders_as_a_deployment_in_every_single_node_mode(mode: str) -> None:
    runtime = make_runtime(engineConfig={"runner": runner()})
    assert only(run(make_isvc(engine={}, deploymentMode=mode), runtime))["metadata"]["name"] == "svc-engine"


def test_a_multinode_component_is_a_leaderworkerset_of_one_leader_plus_worker_size_workers() -> None:
    runtime = make_runtime(
        engineConfig={
            "annotations": MULTI_NODE,
            "leader": {"volumes": [{"name": "dshm", "emptyDir": {}}], "runner": runner(image="leader:1")},
            "worker": {"size": 3, "hostIPC": True, "runner": runner(image="worker:1")},
        }
    )
    lws = only(run(make_isvc(engine={"minReplicas": 2}), runtime), "LeaderWorkerSet")
    assert lws["apiVersion"] == "leaderworkerset.x-k8s.io/v1"
    assert lws["metadata"]["name"] == "svc-engine"
    assert lws["spec"]["replicas"] == 2
    template = lws["spec"]["leaderWorkerTemplate"]
    assert template["size"] == 4
    assert container(lws, "leaderTemplate")["image"] == "leader:1"
    assert container(lws, "workerTemplate")["image"] == "worker:1"
    assert template["leaderTemplate"]["spec"]["volumes"] == [{"name": "dshm", "emptyDir": {}}]
    assert template["workerTemplate"]["spec"]["hostIPC"] is True
    assert "size" not in template["workerTemplate"]["spec"]
    for key in ("leaderTemplate", "workerTemplate"):
        assert template[key]["metadata"]["labels"]["component"] == "engine"
        assert template[key]["metadata"]["annotations"] == MULTI_NODE


def test_without_a_leader_the_leaderworkerset_runs_the_leader_from_the_worker_template() -> None:
    runtime = make_runtime(engineConfig={"annotations": MULTI_NODE, "worker": {"size": 1, "runner": runner()}})
    template = only(run(make_isvc(engine={}), runtime), "LeaderWorkerSet")["spec"]["leaderWorkerTemplate"]
    assert set(template) == {"size", "workerTemplate"}


def test_the_inferenceservices_own_mode_annotation_overrides_the_runtimes() -> None:
    runtime = make_runtime(engineConfig={"annotations": MULTI_NODE, "runner": runner()})
    isvc = make_isvc(engine={"annotations": {"ome.io/deploymentMode": "RawDeployment"}})
    assert only(run(isvc, runtime))["kind"] == "Deployment"


def test_a_runtime_mode_comes_ahead_of_spec_deployment_mode() -> None:
    runtime = make_runtime(engineConfig={"annotations": MULTI_NODE, "worker": {"size": 1, "runner": runner()}})
    assert only(run(make_isvc(engine={}, deploymentMode="OMENative"), runtime), "LeaderWorkerSet")


def test_a_router_cannot_run_multinode_and_the_other_components_still_render() -> None:
    runtime = make_runtime(
        engineConfig={"runner": runner()}, routerConfig={"annotations": MULTI_NODE, "runner": runner()}
    )
    result = run(make_isvc(engine={}, router={}, deploymentMode="OMENative"), runtime)
    assert [o["metadata"]["name"] for o in result.objects] == ["svc-engine"]
    (error,) = result.errors
    assert error.startswith("router: ")
    assert "invalid deployment mode for router" in error


def test_a_component_without_a_runner_is_an_error_naming_it() -> None:
    result = run(make_isvc(engine={}, decoder={}), make_runtime(engineConfig={"runner": runner()}))
    assert result.errors == ["decoder: runtime declares no decoderConfig.runner and the InferenceService sets none"]
    assert [o["metadata"]["name"] for o in result.objects] == ["svc-engine"]


def test_leader_and_worker_in_a_single_node_mode_is_an_error_that_says_why() -> None:
    runtime = make_runtime(engineConfig={"leader": {"runner": runner()}, "worker": {"size": 1, "runner": runner()}})
    (error,) = run(make_isvc(engine={}), runtime).errors
    assert error == (
        "engine: runtime declares no engineConfig.runner and the InferenceService sets none; its leader and "
        "worker run only in MultiNode, and it runs in RawDeployment (set by default)"
    )


@pytest.mark.parametrize(
    ("engine_config", "error"),
    [
        (
            {"leader": {"runner": runner()}},
            "engine: MultiNode needs a worker runner: runtime declares no engineConfig.worker.runner "
            "and the InferenceService sets none",
        ),
        (
            {"worker": {"runner": runner()}},
            "engine.worker.size: a MultiNode component needs the number of worker pods for each leader",
        ),
        ({"worker": {"size": -1, "runner": runner()}}, "engine.worker.size: must be a whole number >= 0, got -1"),
        (
            {"leader": {"volumes": []}, "worker": {"size": 1, "runner": runner()}},
            "engine.leader.runner: a leader needs a runner",
        ),
    ],
)
def test_an_incomplete_multinode_component_is_an_error_naming_the_field(
    engine_config: dict[str, object], error: str
) -> None:
    runtime = make_runtime(engineConfig={"annotations": MULTI_NODE, **engine_config})
    assert run(make_isvc(engine={}), runtime).errors == [error]


def test_a_sidecar_with_the_runners_name_is_an_error() -> None:
    runtime = make_runtime(engineConfig={"containers": [{"name": "ome-container", "image": "x"}], "runner": runner()})
    assert run(make_isvc(engine={}), runtime).errors == [
        "engine.containers: a container has the runner's name 'ome-container'"
    ]


def test_sidecars_follow_the_runner() -> None:
    runtime = make_runtime(engineConfig={"containers": [{"name": "proxy", "image": "x"}], "runner": runner()})
    containers = only(run(make_isvc(engine={}), runtime))["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["ome-container", "proxy"]

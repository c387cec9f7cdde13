"""004, "The engine, decoder and router": where the runtime and the InferenceService both set a
value, the InferenceService's wins."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from policyd.clients.renderer.merge import fold_into_parts, merge_component

from .builders import container, make_isvc, make_runtime, only, run, runner


def test_maps_merge_by_key_labels_annotations_and_node_selector() -> None:
    runtime_config = {
        "labels": {"logging-forward": "enabled", "team": "ml"},
        "annotations": {"prometheus.io/scrape": "true"},
        "nodeSelector": {"pool": "gpu", "zone": "a"},
    }
    isvc_component = {"labels": {"team": "search"}, "annotations": {"note": "x"}, "nodeSelector": {"zone": "b"}}
    merged = merge_component(runtime_config, isvc_component)
    assert merged["labels"] == {"logging-forward": "enabled", "team": "search"}
    assert merged["annotations"] == {"prometheus.io/scrape": "true", "note": "x"}
    assert merged["nodeSelector"] == {"pool": "gpu", "zone": "b"}


def test_runner_resource_requests_and_limits_merge_by_key() -> None:
    runtime_config = {
        "runner": runner(resources={"requests": {"cpu": "10", "memory": "30Gi"}, "limits": {"cpu": "10"}})
    }
    merged = merge_component(runtime_config, {"runner": {"resources": {"limits": {"memory": "40Gi"}}}})
    assert merged["runner"]["resources"] == {
        "requests": {"cpu": "10", "memory": "30Gi"},
        "limits": {"cpu": "10", "memory": "40Gi"},
    }


def test_env_merges_item_by_item_by_name() -> None:
    runtime_config = {
        "runner": runner(env=[{"name": "LOG_LEVEL", "value": "info"}, {"name": "HF_HOME", "value": "/tmp"}])
    }
    isvc_component = {"runner": {"env": [{"name": "EXTRA", "value": "1"}, {"name": "LOG_LEVEL", "value": "debug"}]}}
    assert merge_component(runtime_config, isvc_component)["runner"]["env"] == [
        {"name": "LOG_LEVEL", "value": "debug"},
        {"name": "HF_HOME", "value": "/tmp"},
        {"name": "EXTRA", "value": "1"},
    ]


def test_an_env_item_the_inferenceservice_sets_replaces_the_runtimes_whole() -> None:
    runtime_env = [{"name": "NODE_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.hostIP"}}}]
    merged = merge_component(
        {"runner": runner(env=runtime_env)}, {"runner": {"env": [{"name": "NODE_IP", "value": "1"}]}}
    )
    assert merged["runner"]["env"] == [{"name": "NODE_IP", "value": "1"}]


def test_volumes_merge_item_by_item_by_name() -> None:
    runtime_config = {
        "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory"}}, {"name": "cache", "emptyDir": {}}]
    }
    isvc_component = {"volumes": [{"name": "cache", "hostPath": {"path": "/cache"}}, {"name": "extra", "emptyDir": {}}]}
    assert merge_component(runtime_config, isvc_component)["volumes"] == [
        {"name": "dshm", "emptyDir": {"medium": "Memory"}},
        {"name": "cache", "hostPath": {"path": "/cache"}},
        {"name": "extra", "emptyDir": {}},
    ]


def test_ports_merge_item_by_item_by_container_port() -> None:
    runtime_config = {"runner": runner(ports=[{"containerPort": 8080, "name": "http1"}, {"containerPort": 9090}])}
    isvc_component = {"runner": {"ports": [{"containerPort": 8080, "name": "http"}, {"containerPort": 7070}]}}
    assert merge_component(runtime_config, isvc_component)["runner"]["ports"] == [
        {"containerPort": 8080, "name": "http"},
        {"containerPort": 9090},
        {"containerPort": 7070},
    ]


def test_volume_mounts_merge_item_by_item_by_mount_path() -> None:
    runtime_config = {"runner": runner(volumeMounts=[{"name": "dshm", "mountPath": "/dev/shm"}])}
    isvc_component = {
        "runner": {
            "volumeMounts": [{"name": "shm2", "mountPath": "/dev/shm"}, {"name": "cache", "mountPath": "/cache"}]
        }
    }
    assert merge_component(runtime_config, isvc_component)["runner"]["volumeMounts"] == [
        {"name": "shm2", "mountPath": "/dev/shm"},
        {"name": "cache", "mountPath": "/cache"},
    ]


@pytest.mark.parametrize("field", ["args", "command"])
def test_args_and_command_replace_the_runtimes_whole_list(field: str) -> None:
    runtime_config = {"runner": runner(**{field: ["--a=1", "--b=2"]})}
    merged = merge_component(runtime_config, {"runner": {field: ["--c=3"]}})
    assert merged["runner"][field] == ["--c=3"]


def test_tolerations_replace_the_runtimes_whole_list() -> None:
    gpu = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    spot = {"key": "spot", "operator": "Exists"}
    assert merge_component({"tolerations": [gpu]}, {"tolerations": [spot]})["tolerations"] == [spot]


def test_single_values_replace_the_runtimes_such_as_the_runner_image() -> None:
    merged = merge_component(
        {"runner": runner(), "minReplicas": 1, "hostNetwork": True}, {"runner": {"image": "mine:1"}, "minReplicas": 3}
    )
    assert merged["runner"]["image"] == "mine:1"
    assert merged["minReplicas"] == 3
    assert merged["hostNetwork"] is True


def test_a_runner_without_a_name_merges_into_the_runtimes_runner() -> None:
    merged = merge_component({"runner": runner(name="router")}, {"runner": {"image": "mine:1"}})
    assert merged["runner"]["name"] == "router"
    assert merged["runner"]["image"] == "mine:1"
    assert merged["runner"]["args"] == runner()["args"]


def test_ome_names_the_runner_ome_container_unless_named() -> None:
    merged = merge_component({"runner": {"image": "x"}, "leader": {"runner": {"image": "x"}}}, {})
    assert merged["runner"]["name"] == "ome-container"
    assert merged["leader"]["runner"]["name"] == "ome-container"


def test_leaders_and_workers_merge_the_same_way() -> None:
    runtime_config = {
        "leader": {"volumes": [{"name": "dshm", "emptyDir": {}}], "runner": runner(env=[{"name": "A", "value": "1"}])},
        "worker": {"size": 1, "runner": runner(args=["--x=1"])},
    }
    isvc_component = {
        "leader": {"volumes": [{"name": "cache", "emptyDir": {}}], "runner": {"env": [{"name": "B", "value": "2"}]}},
        "worker": {"size": 3, "runner": {"args": ["--y=2"]}},
    }
    merged = merge_component(runtime_config, isvc_component)
    assert [v["name"] for v in merged["leader"]["volumes"]] == ["dshm", "cache"]
    assert merged["leader"]["runner"]["env"] == [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]
    assert merged["worker"]["size"] == 3
    assert merged["worker"]["runner"]["args"] == ["--y=2"]


def test_a_null_in_the_inferenceservice_leaves_the_runtimes_value() -> None:
    assert merge_component({"runner": runner()}, {"runner": None})["runner"]["image"] == runner()["image"]


def test_merging_leaves_both_inputs_unchanged_and_shares_nothing_with_them() -> None:
    runtime_config: dict[str, Any] = {"runner": runner(env=[{"name": "A", "value": "1"}]), "volumes": [{"name": "v"}]}
    isvc_component: dict[str, Any] = {"runner": {"env": [{"name": "B", "value": "2"}]}, "labels": {"x": "y"}}
    before = copy.deepcopy((runtime_config, isvc_component))
    merged = merge_component(runtime_config, isvc_component)
    merged["runner"]["env"][0]["value"] = "changed"
    merged["volumes"][0]["name"] = "changed"
    merged["labels"]["x"] = "changed"
    assert (runtime_config, isvc_component) == before


def test_a_multinode_components_own_pod_fields_and_runner_lie_under_its_leader_and_worker() -> None:
    component = {
        "annotations": {"ome.io/deploymentMode": "MultiNode"},
        "nodeSelector": {"pool": "gpu"},
        "runner": {"name": "ome-container", "image": "mine:1"},
        "leader": {"runner": runner(), "nodeSelector": {"zone": "a"}},
        "worker": {"size": 1, "runner": runner(image="worker:1")},
    }
    folded = fold_into_parts(component)
    assert "runner" not in folded and "nodeSelector" not in folded
    assert folded["annotations"] == component["annotations"]
    assert folded["leader"]["nodeSelector"] == {"pool": "gpu", "zone": "a"}
    assert folded["leader"]["runner"]["image"] == runner()["image"]
    assert folded["worker"]["runner"]["image"] == "worker:1"
    assert folded["worker"]["nodeSelector"] == {"pool": "gpu"}


def test_ome_uses_a_config_only_for_the_components_the_inferenceservice_declares() -> None:
    runtime = make_runtime(
        engineConfig={"runner": runner()}, decoderConfig={"runner": runner()}, routerConfig={"runner": runner()}
    )
    result = run(make_isvc(engine={}), runtime)
    assert {o["metadata"]["name"] for o in result.objects} == {"svc-engine"}
    assert not result.errors


def test_inferenceservice_settings_on_top_reach_the_deployment() -> None:
    runtime = make_runtime(engineConfig={"labels": {"logging-forward": "enabled"}, "runner": runner()})
    isvc = make_isvc(engine={"labels": {"team": "search"}, "runner": {"args": ["--tp-size=1"]}})
    deployment = only(run(isvc, runtime))
    assert deployment["spec"]["template"]["metadata"]["labels"]["team"] == "search"
    assert deployment["spec"]["template"]["metadata"]["labels"]["logging-forward"] == "enabled"
    assert container(deployment)["args"] == ["--tp-size=1"]

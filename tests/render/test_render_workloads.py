"""The objects OME's controller creates for each component, in the mode policyd decided for it
(reconcilers/raw, deployment, service, hpa, pdb, lws, multinode; components/base.go, router.go)."""

from __future__ import annotations

from typing import Any

import pytest

from policyd.clients.renderer.names import truncated

from .builders import UID, container, make_isvc, make_runtime, of_kind, only, run, runner

MULTI_NODE = {"ome.io/deploymentMode": "MultiNode"}
OWNER = {
    "apiVersion": "ome.io/v1beta1",
    "kind": "InferenceService",
    "name": "svc",
    "uid": UID,
    "controller": True,
    "blockOwnerDeletion": True,
}
OME_LABELS = {
    "ome.io/inferenceservice": "svc",
    "component": "engine",
    "serving-runtime": "rt",
    "fine-tuned-serving": "false",
    "base-model-name": "llama",
    "base-model-size": "SMALL",
    "base-model-type": "Serving",
}


def _engine(**engine_config: Any) -> dict[str, Any]:
    return make_runtime(engineConfig={"runner": runner(), **engine_config})


def _objects(isvc: dict[str, Any], runtime: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The objects by kind, after checking there is one of each."""
    result = run(isvc, runtime)
    assert not result.errors, result.errors
    by_kind = {o["kind"]: o for o in result.objects}
    assert len(by_kind) == len(result.objects)
    return by_kind


def test_a_raw_deployment_component_is_a_deployment_service_hpa_and_pdb_in_that_order() -> None:
    result = run(make_isvc(engine={}), _engine())
    assert [o["kind"] for o in result.objects] == [
        "Deployment",
        "Service",
        "HorizontalPodAutoscaler",
        "PodDisruptionBudget",
    ]
    assert [o["apiVersion"] for o in result.objects] == ["apps/v1", "v1", "autoscaling/v2", "policy/v1"]
    for obj in result.objects:
        assert obj["metadata"]["name"] == "svc-engine"
        assert obj["metadata"]["namespace"] == "demo"
        assert obj["metadata"]["ownerReferences"] == [OWNER]


def test_every_raw_object_carries_the_inferenceservice_and_component_labels_then_omes_and_the_app_label() -> None:
    isvc = make_isvc(labels={"team": "search", "component": "mine"}, engine={"labels": {"tier": "gold"}})
    runtime = _engine(labels={"logging-forward": "enabled", "tier": "silver"})
    for obj in run(isvc, runtime).objects:
        assert obj["metadata"]["labels"] == {
            "team": "search",
            "tier": "gold",
            "logging-forward": "enabled",
            **OME_LABELS,
            "app": "svc-engine",
        }


def test_the_model_labels_and_annotations_come_from_the_base_model() -> None:
    isvc = make_isvc(engine={})
    result = run(isvc, _engine())
    deployment = only(result)
    assert deployment["metadata"]["annotations"] == {
        "ome.io/base-model-name": "llama",
        "ome.io/base-model-format": "",
        "ome.io/serving-runtime": "rt",
    }
    assert deployment["spec"]["template"]["metadata"]["annotations"] == deployment["metadata"]["annotations"]


def test_without_a_base_model_there_are_no_model_labels_annotations_or_volumes() -> None:
    deployment = only(run(make_isvc(model=False, engine={}), _engine()))
    assert not {"base-model-name", "base-model-size", "base-model-type"} & set(deployment["metadata"]["labels"])
    assert deployment["metadata"]["annotations"] == {"ome.io/serving-runtime": "rt"}
    pod = deployment["spec"]["template"]["spec"]
    assert "volumes" not in pod and "nodeSelector" not in pod
    assert "volumeMounts" not in container(deployment)


def test_the_inferenceservices_annotations_are_carried_over_except_those_ome_keeps_back() -> None:
    isvc = make_isvc(engine={"annotations": {"prometheus.io/scrape": "true"}})
    isvc["metadata"]["annotations"] = {
        "owner": "ann",
        "kubectl.kubernetes.io/last-applied-configuration": "{}",
        "autoscaling.knative.dev/min-scale": "1",
    }
    objects = _objects(isvc, _engine())
    for obj in objects.values():
        annotations = obj["metadata"]["annotations"]
        assert annotations["owner"] == "ann"
        assert "kubectl.kubernetes.io/last-applied-configuration" not in annotations
        assert "autoscaling.knative.dev/min-scale" not in annotations
    assert objects["Deployment"]["metadata"]["annotations"]["prometheus.io/scrape"] == "true"
    assert "prometheus.io/scrape" not in objects["Service"]["metadata"]["annotations"], "pod-only annotations"


def test_the_deployment_selects_its_pods_by_the_app_label_and_leaves_replicas_to_the_autoscaler() -> None:
    deployment = only(run(make_isvc(engine={"minReplicas": 2, "maxReplicas": 4}), _engine()))
    assert deployment["spec"]["selector"] == {"matchLabels": {"app": "svc-engine"}}
    template = deployment["spec"]["template"]["metadata"]
    assert template["labels"] == deployment["metadata"]["labels"]
    assert (template["name"], template["namespace"]) == ("svc-engine", "demo")
    assert "replicas" not in deployment["spec"]


def test_the_deployment_rolls_out_one_new_pod_before_stopping_an_old_one_with_omes_history_and_deadline() -> None:
    spec = only(run(make_isvc(engine={}), _engine()))["spec"]
    assert spec["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}}
    assert (spec["revisionHistoryLimit"], spec["progressDeadlineSeconds"]) == (10, 600)


def test_a_deployment_strategy_the_component_sets_is_kept() -> None:
    recreate = only(run(make_isvc(engine={"deploymentStrategy": {"type": "Recreate"}}), _engine()))
    assert recreate["spec"]["strategy"] == {"type": "Recreate"}
    rolling = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%"}}
    assert only(run(make_isvc(engine={"deploymentStrategy": rolling}), _engine()))["spec"]["strategy"] == rolling


def test_ome_writes_the_pod_and_container_defaults_itself() -> None:
    runtime = _engine(containers=[{"name": "proxy", "image": "proxy:1"}])
    pod = only(run(make_isvc(engine={}), runtime))["spec"]["template"]["spec"]
    assert {key: pod[key] for key in ("dnsPolicy", "restartPolicy", "terminationGracePeriodSeconds")} == {
        "dnsPolicy": "ClusterFirst",
        "restartPolicy": "Always",
        "terminationGracePeriodSeconds": 30,
    }
    assert (pod["securityContext"], pod["schedulerName"]) == ({}, "default-scheduler")
    for c in pod["containers"]:
        assert c["terminationMessagePath"] == "/dev/termination-log"
        assert c["terminationMessagePolicy"] == "File"
        assert c["imagePullPolicy"] == "IfNotPresent"


def test_set_pod_fields_are_not_replaced_by_the_defaults() -> None:
    runtime = _engine(dnsPolicy="ClusterFirstWithHostNet", terminationGracePeriodSeconds=0)
    pod = only(run(make_isvc(engine={}), runtime))["spec"]["template"]["spec"]
    assert (pod["dnsPolicy"], pod["terminationGracePeriodSeconds"]) == ("ClusterFirstWithHostNet", 0)


def test_ome_container_without_a_readiness_probe_gets_a_tcp_probe_on_its_first_port() -> None:
    ports = [{"containerPort": 30000, "name": "http"}, {"containerPort": 9090, "name": "metrics"}]
    probe = container(only(run(make_isvc(engine={}), _engine(runner=runner(ports=ports)))))["readinessProbe"]
    assert probe == {
        "tcpSocket": {"port": 30000},
        "timeoutSeconds": 1,
        "periodSeconds": 10,
        "successThreshold": 1,
        "failureThreshold": 3,
    }
    no_ports = container(only(run(make_isvc(engine={}), _engine())))["readinessProbe"]
    assert no_ports["tcpSocket"] == {"port": 8080}
    own = {"httpGet": {"path": "/health", "port": 8080}}
    assert (
        container(only(run(make_isvc(engine={}), _engine(runner=runner(readinessProbe=own)))))["readinessProbe"] == own
    )


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
    pod = only(run(make_isvc(model=False, engine=engine), make_runtime(engineConfig={})))["spec"]["template"]["spec"]
    assert set(pod) == {
        "containers",
        "nodeSelector",
        "dnsPolicy",
        "restartPolicy",
        "terminationGracePeriodSeconds",
        "securityContext",
        "schedulerName",
    }


def test_the_runner_follows_the_pods_other_containers() -> None:
    runtime = _engine(containers=[{"name": "proxy", "image": "x"}])
    containers = only(run(make_isvc(engine={}), runtime))["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["proxy", "ome-container"]


def test_a_container_with_the_runners_name_takes_the_runner_on_top() -> None:
    listed = {"name": "ome-container", "image": "old", "env": [{"name": "A", "value": "1"}], "workingDir": "/w"}
    runtime = _engine(containers=[listed, {"name": "proxy", "image": "x"}])
    containers = only(run(make_isvc(model=False, engine={}), runtime))["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["ome-container", "proxy"]
    assert (containers[0]["image"], containers[0]["workingDir"]) == (runner()["image"], "/w")
    assert containers[0]["env"][0] == {"name": "A", "value": "1"}


def test_the_model_is_a_hostpath_volume_mounted_read_only_in_the_runner_on_nodes_where_it_is_ready() -> None:
    deployment = only(run(make_isvc(engine={}), _engine(volumes=[{"name": "dshm", "emptyDir": {}}])))
    pod = deployment["spec"]["template"]["spec"]
    path = "/raid/models/meta/llama-3-2-3b-instruct"
    assert pod["volumes"] == [{"name": "dshm", "emptyDir": {}}, {"name": "llama", "hostPath": {"path": path}}]
    assert container(deployment)["volumeMounts"] == [{"name": "llama", "mountPath": path, "readOnly": True}]
    assert pod["nodeSelector"] == {"models.ome.io/clusterbasemodel.llama": "Ready"}


def test_the_router_gets_the_model_volume_but_no_mount_and_no_model_node_selector() -> None:
    runtime = _engine()
    runtime["spec"]["routerConfig"] = {"runner": runner(name="router")}
    result = run(make_isvc(engine={}, router={}), runtime)
    (router,) = [o for o in of_kind(result, "Deployment") if o["metadata"]["name"] == "svc-router"]
    pod = router["spec"]["template"]["spec"]
    assert [v["name"] for v in pod["volumes"]] == ["llama"]
    assert "volumeMounts" not in container(router, name="router") and "nodeSelector" not in pod


def test_the_router_runs_as_its_own_service_account_with_a_role_to_read_pods() -> None:
    runtime = _engine(routerConfig={})
    runtime["spec"]["routerConfig"] = {"runner": runner(name="router")}
    result = run(make_isvc(engine={}, router={}), runtime)
    router = [o for o in result.objects if o["metadata"]["name"] == "svc-router"]
    assert [o["kind"] for o in router] == [
        "ServiceAccount",
        "Role",
        "RoleBinding",
        "Deployment",
        "Service",
        "HorizontalPodAutoscaler",
        "PodDisruptionBudget",
    ]
    account, role, binding, deployment = router[:4]
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == "svc-router"
    assert role["rules"] == [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}]
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "svc-router"}
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "svc-router", "namespace": "demo"}]
    assert account["metadata"]["ownerReferences"] == [{**OWNER}]


def test_the_service_has_the_first_containers_ports() -> None:
    ports = [{"containerPort": 8080, "name": "http1", "protocol": "TCP"}, {"containerPort": 9090, "name": "metrics"}]
    service = _objects(make_isvc(engine={}), _engine(runner=runner(ports=ports)))["Service"]
    assert service["spec"] == {
        "type": "ClusterIP",
        "selector": {"app": "svc-engine"},
        "ports": [
            {"name": "http1", "port": 8080, "targetPort": 8080, "protocol": "TCP"},
            {"name": "metrics", "port": 9090, "targetPort": 9090, "protocol": "TCP"},
        ],
    }


def test_a_service_for_a_container_without_ports_listens_on_8080_named_after_the_container() -> None:
    service = _objects(make_isvc(engine={}), _engine())["Service"]
    assert service["spec"]["ports"] == [{"name": "ome-container", "port": 8080, "targetPort": 8080, "protocol": "TCP"}]


@pytest.mark.parametrize(
    ("asked", "given"), [("LoadBalancer", "LoadBalancer"), ("NodePort", "NodePort"), ("x", "ClusterIP")]
)
def test_the_service_type_annotation_picks_the_service_type(asked: str, given: str) -> None:
    isvc = make_isvc(engine={"annotations": {"ome.io/service-type": asked, "ome.io/load-balancer-ip": "10.0.0.9"}})
    spec = _objects(isvc, _engine())["Service"]["spec"]
    assert spec["type"] == given
    assert spec.get("loadBalancerIP") == ("10.0.0.9" if given == "LoadBalancer" else None)


def test_a_long_name_is_shortened_with_a_hash_in_the_app_label_and_the_service_name_only() -> None:
    isvc = make_isvc(engine={})
    isvc["metadata"]["name"] = "a-very-long-inference-service-name-that-goes-on-and-on-for-ever"
    objects = _objects(isvc, _engine())
    long_name = f"{isvc['metadata']['name']}-engine"
    short = truncated(long_name)
    assert len(short) == 63 and short.endswith(long_name[-54:]) and short[8] == "-" and short[0].isalpha()
    assert objects["Deployment"]["metadata"]["name"] == long_name
    assert objects["Deployment"]["spec"]["selector"]["matchLabels"] == {"app": short}
    assert objects["Service"]["metadata"]["name"] == short
    assert objects["HorizontalPodAutoscaler"]["metadata"]["name"] == long_name


def test_truncation_keeps_short_names_and_hashes_the_same_name_the_same_way() -> None:
    assert truncated("svc-engine") == "svc-engine"
    name = "x" * 70
    assert truncated(name) == truncated(name) != truncated("y" * 70)


def test_the_hpa_scales_the_deployment_on_cpu_at_80_percent_between_the_replica_counts() -> None:
    hpa = _objects(make_isvc(engine={"minReplicas": 2, "maxReplicas": 5}), _engine())["HorizontalPodAutoscaler"]
    assert hpa["spec"] == {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "svc-engine"},
        "minReplicas": 2,
        "maxReplicas": 5,
        "metrics": [
            {
                "type": "Resource",
                "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}},
            }
        ],
        "behavior": {},
    }


@pytest.mark.parametrize(
    ("component", "minimum", "maximum"),
    [({}, 1, 3), ({"minReplicas": 0}, 1, 3), ({"minReplicas": 4}, 4, 4), ({"maxReplicas": 7}, 1, 7)],
)
def test_replica_counts_default_as_omes_webhook_sets_them(
    component: dict[str, Any], minimum: int, maximum: int
) -> None:
    spec = _objects(make_isvc(engine=component), _engine())["HorizontalPodAutoscaler"]["spec"]
    assert (spec["minReplicas"], spec["maxReplicas"]) == (minimum, maximum)


def test_a_runtime_sets_replica_counts_the_inferenceservice_leaves_unset() -> None:
    spec = _objects(make_isvc(engine={}), _engine(minReplicas=2, maxReplicas=6))["HorizontalPodAutoscaler"]["spec"]
    assert (spec["minReplicas"], spec["maxReplicas"]) == (2, 6)


def test_the_router_scales_to_two_replicas_by_default() -> None:
    runtime = _engine(routerConfig={})
    runtime["spec"]["routerConfig"] = {"runner": runner(name="router")}
    result = run(make_isvc(engine={}, router={}), runtime)
    (hpa,) = [o for o in of_kind(result, "HorizontalPodAutoscaler") if o["metadata"]["name"] == "svc-router"]
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (1, 2)


def test_the_hpa_target_comes_from_the_annotation_else_scale_target_and_its_metric_from_scale_metric() -> None:
    isvc = make_isvc(engine={"scaleTarget": 60, "scaleMetric": "memory"})
    metric = _objects(isvc, _engine())["HorizontalPodAutoscaler"]["spec"]["metrics"][0]["resource"]
    assert metric == {"name": "memory", "target": {"type": "Utilization", "averageUtilization": 60}}
    isvc["metadata"]["annotations"] = {"ome.io/targetUtilizationPercentage": "45"}
    metric = _objects(isvc, _engine())["HorizontalPodAutoscaler"]["spec"]["metrics"][0]["resource"]
    assert metric["target"]["averageUtilization"] == 45


def test_an_external_autoscaler_class_gets_no_hpa() -> None:
    isvc = make_isvc(engine={"annotations": {"ome.io/autoscalerClass": "external"}})
    assert [o["kind"] for o in run(isvc, _engine()).objects] == ["Deployment", "Service", "PodDisruptionBudget"]


@pytest.mark.parametrize(
    ("annotations", "error"),
    [
        (
            {"ome.io/autoscalerClass": "keda"},
            "engine.annotations[ome.io/autoscalerClass]: keda: the renderer does not make KEDA ScaledObjects; "
            "use hpa or external",
        ),
        (
            {"ome.io/autoscalerClass": "kpa"},
            "engine.annotations[ome.io/autoscalerClass]: unknown autoscaler class type: kpa "
            "(one of hpa, keda, external)",
        ),
        (
            {"ome.io/targetUtilizationPercentage": "high"},
            "engine.annotations[ome.io/targetUtilizationPercentage]: must be a whole percentage above 0, got 'high'",
        ),
    ],
)
def test_an_autoscaler_the_renderer_cannot_make_is_an_error_naming_the_annotation(
    annotations: dict[str, str], error: str
) -> None:
    result = run(make_isvc(engine={"annotations": annotations}), _engine())
    assert (result.objects, result.errors) == ([], [error])


def test_the_pdb_allows_one_pod_down_unless_the_component_says_otherwise() -> None:
    pdb = _objects(make_isvc(engine={}), _engine())["PodDisruptionBudget"]
    assert pdb["spec"] == {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "svc-engine"}}}
    pdb = _objects(make_isvc(engine={"minAvailable": "50%"}), _engine())["PodDisruptionBudget"]
    assert pdb["spec"] == {"minAvailable": "50%", "selector": {"matchLabels": {"app": "svc-engine"}}}


def test_a_virtual_deployment_component_has_no_objects() -> None:
    result = run(make_isvc(engine={}, deploymentMode="VirtualDeployment"), _engine())
    assert (result.objects, result.errors) == ([], [])


@pytest.mark.parametrize("mode", ["OMENative", "RawDeployment"])
def test_a_single_node_component_renders_as_a_raw_deployment_in_omenative_too(mode: str) -> None:
    assert only(run(make_isvc(engine={}, deploymentMode=mode), _engine()))["metadata"]["name"] == "svc-engine"


def _multinode(**engine_config: Any) -> dict[str, Any]:
    return make_runtime(engineConfig={"annotations": MULTI_NODE, **engine_config})


def test_a_multinode_component_is_a_leaderworkerset_and_a_service() -> None:
    runtime = _multinode(
        leader={"volumes": [{"name": "dshm", "emptyDir": {}}], "runner": runner(image="leader:1")},
        worker={"size": 3, "hostIPC": True, "runner": runner(image="worker:1")},
    )
    result = run(make_isvc(engine={"minReplicas": 2}), runtime)
    assert [o["kind"] for o in result.objects] == ["LeaderWorkerSet", "Service"]
    lws = only(result, "LeaderWorkerSet")
    assert lws["apiVersion"] == "leaderworkerset.x-k8s.io/v1"
    assert lws["metadata"]["name"] == "lws-svc-engine"
    assert lws["metadata"]["labels"] == OME_LABELS
    assert lws["metadata"]["ownerReferences"] == [OWNER]
    spec = lws["spec"]
    assert spec["replicas"] == 2
    assert (spec["startupPolicy"], spec["networkConfig"]) == ("LeaderCreated", {"subdomainPolicy": "Shared"})
    assert spec["rolloutStrategy"] == {
        "type": "RollingUpdate",
        "rollingUpdateConfiguration": {"maxUnavailable": 1, "maxSurge": 1},
    }
    template = spec["leaderWorkerTemplate"]
    assert (template["size"], template["restartPolicy"]) == (4, "RecreateGroupOnPodRestart")
    assert container(lws, "leaderTemplate")["image"] == "leader:1"
    assert container(lws, "workerTemplate")["image"] == "worker:1"
    assert template["leaderTemplate"]["spec"]["volumes"][0] == {"name": "dshm", "emptyDir": {}}
    assert template["workerTemplate"]["spec"]["hostIPC"] is True
    assert "size" not in template["workerTemplate"]["spec"]


def test_leaders_are_labelled_app_and_ray_head_and_workers_lose_the_prometheus_annotations() -> None:
    scrape = {"prometheus.io/scrape": "true", "prometheus.io/port": "8080", "prometheus.io/path": "/metrics"}
    runtime = _multinode(annotations={**MULTI_NODE, **scrape}, runner=runner(), worker={"size": 1})
    template = only(run(make_isvc(engine={}), runtime), "LeaderWorkerSet")["spec"]["leaderWorkerTemplate"]
    leader, worker = template["leaderTemplate"]["metadata"], template["workerTemplate"]["metadata"]
    assert leader["labels"] == {**OME_LABELS, "app": "svc-engine", "ray.io/node-type": "head"}
    assert worker["labels"] == OME_LABELS
    assert scrape.items() <= leader["annotations"].items()
    assert not set(scrape) & set(worker["annotations"])
    assert (leader["name"], worker["namespace"]) == ("svc-engine", "demo")


def test_the_multinode_service_selects_leaders_by_the_ray_head_label() -> None:
    runtime = _multinode(runner=runner(ports=[{"containerPort": 30000, "name": "http"}]), worker={"size": 1})
    service = only(run(make_isvc(engine={}), runtime), "Service")
    assert service["metadata"]["name"] == "svc-engine"
    assert service["metadata"]["labels"] == OME_LABELS
    assert service["spec"]["selector"] == {"ray.io/node-type": "head"}
    assert service["spec"]["ports"] == [{"name": "http", "port": 30000, "targetPort": 30000, "protocol": "TCP"}]


def test_multinode_pods_get_omes_defaults_but_no_default_readiness_probe() -> None:
    runtime = _multinode(runner=runner(), worker={"size": 1})
    lws = only(run(make_isvc(engine={}), runtime), "LeaderWorkerSet")
    for key in ("leaderTemplate", "workerTemplate"):
        pod = lws["spec"]["leaderWorkerTemplate"][key]["spec"]
        assert pod["restartPolicy"] == "Always" and pod["schedulerName"] == "default-scheduler"
        assert "readinessProbe" not in container(lws, key)
        assert container(lws, key)["imagePullPolicy"] == "IfNotPresent"


def test_without_a_leader_the_components_own_pod_leads() -> None:
    runtime = _multinode(runner=runner(image="own:1"), worker={"size": 1, "runner": {"image": "worker:1"}})
    lws = only(run(make_isvc(engine={}), runtime), "LeaderWorkerSet")
    assert container(lws, "leaderTemplate")["image"] == "own:1"
    assert container(lws, "workerTemplate")["image"] == "worker:1"


def test_a_worker_without_a_size_gives_groups_of_one_leader() -> None:
    lws = only(run(make_isvc(engine={}), _multinode(runner=runner(), worker={})), "LeaderWorkerSet")
    assert lws["spec"]["leaderWorkerTemplate"]["size"] == 1


def test_a_runtime_mode_comes_ahead_of_spec_deployment_mode() -> None:
    runtime = _multinode(runner=runner(), worker={"size": 1})
    assert only(run(make_isvc(engine={}, deploymentMode="OMENative"), runtime), "LeaderWorkerSet")


def test_the_inferenceservices_own_mode_annotation_overrides_the_runtimes() -> None:
    isvc = make_isvc(engine={"annotations": {"ome.io/deploymentMode": "RawDeployment"}})
    assert only(run(isvc, _multinode(runner=runner())))["kind"] == "Deployment"


def test_a_router_policyd_finds_cannot_run_multinode_gets_policyds_error_and_the_others_still_render() -> None:
    runtime = make_runtime(
        engineConfig={"runner": runner()}, routerConfig={"annotations": MULTI_NODE, "runner": runner()}
    )
    result = run(make_isvc(engine={}, router={}, deploymentMode="OMENative"), runtime)
    assert {o["metadata"]["name"] for o in result.objects} == {"svc-engine"}
    assert result.errors == [
        "router: invalid deployment mode for router: MultiNode (a router runs only as a single-node component)"
    ]


def test_a_component_without_a_runner_or_containers_is_an_error_naming_it() -> None:
    result = run(make_isvc(engine={}, decoder={}), make_runtime(engineConfig={"runner": runner()}))
    assert result.errors == ["decoder: runtime declares no decoderConfig.runner and the InferenceService sets none"]
    assert {o["metadata"]["name"] for o in result.objects} == {"svc-engine"}


def test_a_component_without_a_runner_runs_its_first_container_as_ome_does() -> None:
    runtime = make_runtime(engineConfig={"containers": [{"name": "server", "image": "s:1", "args": ["{{.Name}}"]}]})
    deployment = only(run(make_isvc(model=False, engine={}), runtime))
    assert container(deployment, name="server")["args"] == ["svc"]


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
            "engine: MultiNode needs a worker: runtime declares no engineConfig.worker and the InferenceService "
            "sets none",
        ),
        ({"worker": {"size": -1, "runner": runner()}}, "engine.worker.size: must be a whole number >= 0, got -1"),
        (
            {"leader": {"volumes": []}, "worker": {"size": 1, "runner": runner()}},
            "engine.leader.runner: a leader needs a runner: runtime declares no engineConfig.leader.runner or "
            "engineConfig.runner and the InferenceService sets none",
        ),
        (
            {"leader": {"runner": runner()}, "worker": {"size": 1}},
            "engine.worker.runner: a worker needs a runner: runtime declares no engineConfig.worker.runner or "
            "engineConfig.runner and the InferenceService sets none",
        ),
    ],
)
def test_an_incomplete_multinode_component_is_an_error_naming_the_field(
    engine_config: dict[str, object], error: str
) -> None:
    assert run(make_isvc(engine={}), _multinode(**engine_config)).errors == [error]

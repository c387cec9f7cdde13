"""The InferenceService status OME's status reconciler writes (status_reconciler.go,
controller.go), from the renderer's real objects with the status their controllers give them."""

from __future__ import annotations

import copy
from typing import Any

from render.builders import make_isvc, make_runtime, run, runner

from policyd.clients.controller.observed import trimmed
from policyd.clients.controller.outcome import Condition
from policyd.clients.controller.readiness import Readiness, readiness, severity, status_fields

AVAILABLE = {
    "type": "Available",
    "status": "True",
    "reason": "MinimumReplicasAvailable",
    "message": "Deployment has minimum availability.",
}
UNAVAILABLE = {
    "type": "Available",
    "status": "False",
    "reason": "MinimumReplicasUnavailable",
    "message": "Deployment does not have minimum availability.",
}
PROGRESSING = {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable", "message": "progressed"}
LWS_AVAILABLE = {"type": "Available", "status": "True", "reason": "AllGroupsReady", "message": "All replicas are ready"}
LWS_PROGRESSING = {
    "type": "Progressing",
    "status": "True",
    "reason": "GroupsProgressing",
    "message": "Replicas are progressing",
}
MULTI_NODE = {"ome.io/deploymentMode": "MultiNode"}
SCHEDULER = "0/6 nodes are available: 4 Insufficient nvidia.com/gpu, 2 node(s) had untolerated taint."
INGRESS = Condition(
    "True", "IngressDisabled", "Ingress creation is disabled, using external service for access", "IngressReady"
)


def _isvc(generation: int = 3, status: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    isvc = make_isvc(**spec)
    isvc["metadata"]["generation"] = generation
    if status is not None:
        isvc["status"] = status
    return isvc


def _runtime(**configs: Any) -> dict[str, Any]:
    configs = {"engineConfig": {"runner": runner(ports=[{"name": "http", "containerPort": 30000}])}, **configs}
    return make_runtime(**configs)


def _multinode_runtime() -> dict[str, Any]:
    return make_runtime(engineConfig={"annotations": MULTI_NODE, "runner": runner(), "worker": {"size": 1}})


def _live(isvc: dict[str, Any], runtime: dict[str, Any], **conditions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rendered objects as the cluster shows them: each component's Deployment or
    LeaderWorkerSet with the conditions given for its component (none when not given), a
    Deployment at revision 2."""
    result = run(isvc, runtime)
    assert not result.errors, result.errors
    objects = copy.deepcopy(result.objects)
    for obj in objects:
        if obj["kind"] not in ("Deployment", "LeaderWorkerSet"):
            continue
        obj["metadata"]["creationTimestamp"] = "2025-06-01T10:00:00Z"
        if obj["kind"] == "Deployment":
            obj["metadata"].setdefault("annotations", {})["deployment.kubernetes.io/revision"] = "2"
        component = obj["metadata"]["labels"]["component"]
        obj["status"] = {"observedGeneration": 7, "conditions": conditions.get(component, [])}
    return objects


def _workload(objects: list[dict[str, Any]], kind: str, component: str = "engine") -> dict[str, Any]:
    (found,) = [o for o in objects if o["kind"] == kind and o["metadata"]["labels"]["component"] == component]
    return found


def _pod(
    workload: dict[str, Any],
    name: str,
    template: str = "",
    created: str = "2025-06-01T10:00:01Z",
    **status: Any,
) -> dict[str, Any]:
    """A pod of a Deployment, or of a LeaderWorkerSet's ``template``, labelled as its template says."""
    spec = workload["spec"]
    pod_template = spec["leaderWorkerTemplate"][template] if template else spec["template"]
    metadata = {"name": name, "namespace": "demo", "creationTimestamp": created}
    return {"metadata": {**metadata, "labels": dict(pod_template["metadata"]["labels"])}, "status": status}


def _unschedulable(workload: dict[str, Any], name: str, template: str = "") -> dict[str, Any]:
    scheduled = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": SCHEDULER}
    return _pod(workload, name, template, phase="Pending", conditions=[scheduled])


def _running(workload: dict[str, Any], name: str, created: str = "2025-06-01T10:00:01Z") -> dict[str, Any]:
    running = {"name": "ome-container", "state": {"running": {"startedAt": created}}}
    return _pod(workload, name, created=created, phase="Running", containerStatuses=[running])


def _condition(status: Readiness, type_: str) -> Condition:
    found = status.condition(type_)
    assert found is not None, f"no {type_} in {status.conditions}"
    return found


def test_engine_ready_is_the_engine_deployments_available_condition() -> None:
    isvc, runtime = _isvc(engine={}), _runtime()
    ready = readiness(isvc, _live(isvc, runtime, engine=[PROGRESSING, AVAILABLE]), [])
    assert _condition(ready, "EngineReady") == Condition(
        "True", "MinimumReplicasAvailable", "Deployment has minimum availability.", "EngineReady"
    )
    not_ready = readiness(isvc, _live(isvc, runtime, engine=[UNAVAILABLE]), [])
    assert _condition(not_ready, "EngineReady") == Condition(
        "False", "MinimumReplicasUnavailable", "Deployment does not have minimum availability.", "EngineReady"
    )


def test_ready_is_true_only_when_ingress_and_engine_are_ready() -> None:
    isvc, runtime = _isvc(engine={}), _runtime()
    ready = readiness(isvc, _live(isvc, runtime, engine=[AVAILABLE]), [])
    assert [c.type for c in ready.conditions] == ["EngineReady", "IngressReady", "Ready"]
    assert _condition(ready, "IngressReady") == INGRESS
    assert _condition(ready, "Ready") == Condition("True", "", "", "Ready")
    not_ready = readiness(isvc, _live(isvc, runtime, engine=[UNAVAILABLE]), [])
    assert _condition(not_ready, "IngressReady") == INGRESS
    assert _condition(not_ready, "Ready") == Condition(
        "False", "MinimumReplicasUnavailable", "Deployment does not have minimum availability.", "Ready"
    )


def test_ready_stays_true_whatever_runtime_ready_says() -> None:
    runtime_conditions = [
        {"type": "RuntimeReady", "status": "False", "reason": "RuntimeNotFound", "message": "gone"},
        {"type": "RuntimeDrifted", "status": "True", "reason": "SourceRuntimeChanged", "message": "changed"},
    ]
    isvc, runtime = _isvc(engine={}, status={"conditions": runtime_conditions}), _runtime()
    status = readiness(isvc, _live(isvc, runtime, engine=[AVAILABLE]), [])
    assert _condition(status, "Ready").status == "True"
    assert status.condition("RuntimeReady") is None and status.condition("RuntimeDrifted") is None


def test_an_engine_without_its_deployment_or_an_available_condition_yet_is_initializing() -> None:
    isvc, runtime = _isvc(engine={}), _runtime()
    initializing = Condition("Unknown", "Initializing", "engine component initializing", "EngineReady")
    for workloads in ([], _live(isvc, runtime)):
        status = readiness(isvc, workloads, [])
        assert _condition(status, "EngineReady") == initializing
        assert _condition(status, "Ready") == Condition(
            "Unknown", "Initializing", "engine component initializing", "Ready"
        )
    assert readiness(isvc, [], []).components == {"engine": {}}


def test_an_unschedulable_engine_pod_leaves_engine_ready_false_with_the_schedulers_reason() -> None:
    isvc, runtime = _isvc(engine={}), _runtime()
    objects = _live(isvc, runtime, engine=[UNAVAILABLE])
    deployment = _workload(objects, "Deployment")
    pods = [_running(deployment, "svc-engine-5d9c-a"), _unschedulable(deployment, "svc-engine-5d9c-b")]
    status = readiness(isvc, objects, pods)
    message = f"Deployment does not have minimum availability. Pod svc-engine-5d9c-b is unschedulable: {SCHEDULER}"
    assert _condition(status, "EngineReady") == Condition("False", "MinimumReplicasUnavailable", message, "EngineReady")
    assert _condition(status, "Ready") == Condition("False", "MinimumReplicasUnavailable", message, "Ready")


def test_an_available_engine_says_nothing_of_a_pod_the_scheduler_cannot_place() -> None:
    isvc, runtime = _isvc(engine={}), _runtime()
    objects = _live(isvc, runtime, engine=[AVAILABLE])
    status = readiness(isvc, objects, [_unschedulable(_workload(objects, "Deployment"), "svc-engine-5d9c-b")])
    assert _condition(status, "EngineReady").message == "Deployment has minimum availability."


def test_an_unschedulable_pod_of_an_engine_without_an_available_condition_makes_it_false() -> None:
    isvc, runtime = _isvc(engine={}), _runtime()
    objects = _live(isvc, runtime)
    status = readiness(isvc, objects, [_unschedulable(_workload(objects, "Deployment"), "svc-engine-5d9c-b")])
    message = f"Pod svc-engine-5d9c-b is unschedulable: {SCHEDULER}"
    assert _condition(status, "EngineReady") == Condition("False", "Unschedulable", message, "EngineReady")


def test_a_multinode_engine_is_ready_from_its_leaderworkersets_available_condition() -> None:
    isvc, runtime = _isvc(engine={}), _multinode_runtime()
    status = readiness(isvc, _live(isvc, runtime, engine=[LWS_AVAILABLE]), [])
    assert _condition(status, "EngineReady") == Condition(
        "True", "AllGroupsReady", "All replicas are ready", "EngineReady"
    )
    assert _condition(status, "Ready").status == "True"
    # OME reads the revision from an annotation no LeaderWorkerSet has
    assert status.components == {"engine": {"url": "http://svc-engine.demo.svc.cluster.local"}}


def test_a_multinode_engine_that_lost_availability_says_what_its_leaderworkerset_does_instead() -> None:
    isvc, runtime = _isvc(engine={}), _multinode_runtime()
    dropped = {**LWS_AVAILABLE, "status": "False"}  # LWS flips the status and keeps the rest
    updating = {
        "type": "UpdateInProgress",
        "status": "True",
        "reason": "GroupsUpdating",
        "message": "Rolling Upgrade is in progress",
    }
    status = readiness(isvc, _live(isvc, runtime, engine=[dropped, updating]), [])
    assert _condition(status, "EngineReady") == Condition(
        "False", "GroupsUpdating", "Rolling Upgrade is in progress", "EngineReady"
    )
    assert status.components == {"engine": {}}


def test_an_unschedulable_leader_leaves_a_multinode_engine_not_ready_with_the_schedulers_reason() -> None:
    isvc, runtime = _isvc(engine={}), _multinode_runtime()
    objects = _live(isvc, runtime, engine=[LWS_PROGRESSING])
    lws = _workload(objects, "LeaderWorkerSet")
    status = readiness(isvc, objects, [_unschedulable(lws, "lws-svc-engine-0", "leaderTemplate")])
    message = f"Pod lws-svc-engine-0 is unschedulable: {SCHEDULER}"
    assert _condition(status, "EngineReady") == Condition("False", "Unschedulable", message, "EngineReady")
    assert _condition(status, "Ready") == Condition("False", "Unschedulable", message, "Ready")


def test_decoder_and_router_conditions_are_present_only_when_declared() -> None:
    runtime = _runtime(decoderConfig={"runner": runner()}, routerConfig={"runner": runner()})
    engine_only = _isvc(engine={})
    status = readiness(engine_only, _live(engine_only, runtime, engine=[AVAILABLE]), [])
    assert [c.type for c in status.conditions] == ["EngineReady", "IngressReady", "Ready"]
    assert set(status.components) == {"engine"}
    disaggregated = _isvc(engine={}, decoder={}, router={})
    objects = _live(disaggregated, runtime, engine=[AVAILABLE], decoder=[AVAILABLE], router=[UNAVAILABLE])
    status = readiness(disaggregated, objects, [])
    assert [c.type for c in status.conditions] == [
        "EngineReady",
        "DecoderReady",
        "RouterReady",
        "IngressReady",
        "Ready",
    ]
    assert _condition(status, "DecoderReady").status == "True"
    assert _condition(status, "RouterReady") == Condition(
        "False", "MinimumReplicasUnavailable", "Deployment does not have minimum availability.", "RouterReady"
    )
    assert set(status.components) == {"engine", "decoder", "router"}


def test_ready_leaves_out_the_decoder_and_router_as_omes_condition_set_does() -> None:
    runtime = _runtime(decoderConfig={"runner": runner()}, routerConfig={"runner": runner()})
    isvc = _isvc(engine={}, decoder={}, router={})
    status = readiness(isvc, _live(isvc, runtime, engine=[AVAILABLE], decoder=[UNAVAILABLE]), [])
    assert _condition(status, "DecoderReady").status == "False"
    assert _condition(status, "RouterReady").status == "Unknown"
    assert _condition(status, "Ready").status == "True"
    assert [severity(c.type) for c in status.conditions] == ["", "Info", "Info", "", ""]


def test_url_is_the_external_services_address_with_the_engine_services_port() -> None:
    isvc, runtime = _isvc(engine={}), _runtime()
    status = readiness(isvc, _live(isvc, runtime), [])
    assert status.url == "http://svc.demo.svc.cluster.local:30000"
    assert status.address == {"url": "http://svc.demo.svc.cluster.local:30000"}


def test_url_takes_the_router_services_port_when_a_router_is_declared() -> None:
    runtime = _runtime(routerConfig={"runner": runner(ports=[{"containerPort": 8000}])})
    isvc = _isvc(engine={}, router={})
    assert readiness(isvc, _live(isvc, runtime), []).url == "http://svc.demo.svc.cluster.local:8000"


def test_url_port_is_8080_while_the_target_service_is_unknown() -> None:
    isvc = _isvc(engine={}, router={})
    assert readiness(isvc, [], []).url == "http://svc.demo.svc.cluster.local:8080"


def test_a_components_url_is_its_service_address_only_while_it_is_available() -> None:
    isvc, runtime = _isvc(engine={}), _runtime()
    available = readiness(isvc, _live(isvc, runtime, engine=[AVAILABLE]), [])
    assert available.components == {
        "engine": {"latestCreatedRevision": "2", "url": "http://svc-engine.demo.svc.cluster.local"}
    }
    unavailable = readiness(isvc, _live(isvc, runtime, engine=[UNAVAILABLE]), [])
    assert unavailable.components == {"engine": {"latestCreatedRevision": "2"}}


def test_the_newer_workload_is_the_components_while_the_old_modes_is_not_yet_deleted() -> None:
    isvc = _isvc(engine={})
    raw = _live(isvc, _runtime(), engine=[AVAILABLE])
    multinode = _live(isvc, _multinode_runtime(), engine=[LWS_PROGRESSING])
    lws = _workload(multinode, "LeaderWorkerSet")
    lws["metadata"]["creationTimestamp"] = "2025-06-02T08:00:00Z"
    assert _condition(readiness(isvc, raw + multinode, []), "EngineReady").reason == "Initializing"
    lws["metadata"]["creationTimestamp"] = "2025-05-30T08:00:00Z"
    assert _condition(readiness(isvc, raw + multinode, []), "EngineReady").reason == "MinimumReplicasAvailable"
    _workload(raw, "Deployment")["metadata"]["deletionTimestamp"] = "2025-06-02T08:00:01Z"
    assert _condition(readiness(isvc, raw + multinode, []), "EngineReady").reason == "Initializing"


def test_model_status_is_loaded_with_the_pod_count_once_ready() -> None:
    isvc, runtime = _isvc(engine={}), _runtime()
    objects = _live(isvc, runtime, engine=[AVAILABLE])
    deployment = _workload(objects, "Deployment")
    pods = [_running(deployment, "svc-engine-5d9c-a"), _running(deployment, "svc-engine-5d9c-b")]
    assert readiness(isvc, objects, pods).model_status == {
        "transitionStatus": "UpToDate",
        "modelRevisionStates": {"activeModelState": "Loaded", "targetModelState": "Loaded"},
        "modelCopies": {"failedCopies": 0, "totalCopies": 2},
    }


def test_model_status_is_pending_in_progress_without_pods_or_before_the_container_runs_ready() -> None:
    isvc, runtime = _isvc(engine={}), _runtime()
    objects = _live(isvc, runtime, engine=[UNAVAILABLE])
    pending = {
        "transitionStatus": "InProgress",
        "modelRevisionStates": {"activeModelState": "Pending", "targetModelState": "Pending"},
    }
    assert readiness(isvc, objects, []).model_status == pending
    deployment = _workload(objects, "Deployment")
    assert readiness(isvc, objects, [_unschedulable(deployment, "svc-engine-5d9c-a")]).model_status == pending
    assert readiness(isvc, objects, [_running(deployment, "svc-engine-5d9c-a")]).model_status == pending


def test_model_status_is_loading_while_the_storage_initializer_runs() -> None:
    isvc, runtime = _isvc(engine={}), _runtime()
    objects = _live(isvc, runtime, engine=[UNAVAILABLE])
    init = [{"name": "storage-initializer", "state": {"running": {}}}]
    pod = _pod(_workload(objects, "Deployment"), "svc-engine-5d9c-a", initContainerStatuses=init)
    status = readiness(isvc, objects, [pod]).model_status
    assert status is not None
    assert status["transitionStatus"] == "InProgress"
    assert status["modelRevisionStates"]["targetModelState"] == "Loading"


def test_a_crash_looping_engine_container_fails_to_load_with_its_last_termination() -> None:
    isvc, runtime = _isvc(engine={}), _runtime()
    objects = _live(isvc, runtime, engine=[UNAVAILABLE])
    deployment = _workload(objects, "Deployment")
    crashing = {
        "name": "ome-container",
        "state": {"waiting": {"reason": "CrashLoopBackOff"}},
        "lastState": {"terminated": {"reason": "Error", "exitCode": 1, "message": "CUDA out of memory"}},
    }
    older = _running(deployment, "svc-engine-5d9c-a", created="2025-06-01T09:00:00Z")
    newest = _pod(deployment, "svc-engine-7f1e-b", created="2025-06-01T11:00:00Z", containerStatuses=[crashing])
    assert readiness(isvc, objects, [older, newest]).model_status == {
        "transitionStatus": "BlockedByFailedLoad",
        "modelRevisionStates": {"activeModelState": "Pending", "targetModelState": "FailedToLoad"},
        "lastFailureInfo": {"reason": "ModelLoadFailed", "message": "CUDA out of memory", "exitCode": 1},
    }


def test_a_model_once_loaded_stays_active_while_a_new_revision_loads() -> None:
    loaded = {
        "transitionStatus": "UpToDate",
        "modelRevisionStates": {"activeModelState": "Loaded", "targetModelState": "Loaded"},
        "modelCopies": {"failedCopies": 0, "totalCopies": 2},
    }
    isvc, runtime = _isvc(engine={}, status={"modelStatus": loaded}), _runtime()
    objects = _live(isvc, runtime, engine=[UNAVAILABLE])
    pods = [_running(_workload(objects, "Deployment"), "svc-engine-7f1e-a")]
    assert readiness(isvc, objects, pods).model_status == {
        "transitionStatus": "InProgress",
        "modelRevisionStates": {"activeModelState": "Loaded", "targetModelState": "Pending"},
        "modelCopies": {"failedCopies": 0, "totalCopies": 2},
    }


def test_a_multinode_models_copies_are_its_groups() -> None:
    isvc, runtime = _isvc(engine={}), _multinode_runtime()
    objects = _live(isvc, runtime, engine=[LWS_AVAILABLE])
    lws = _workload(objects, "LeaderWorkerSet")
    pods = [
        _pod(lws, "lws-svc-engine-0", "leaderTemplate", phase="Running"),
        _pod(lws, "lws-svc-engine-0-1", "workerTemplate", phase="Running"),
    ]
    status = readiness(isvc, objects, pods).model_status
    assert status is not None
    assert status["modelCopies"] == {"failedCopies": 0, "totalCopies": 1}


def test_observed_generation_is_the_inferenceservices_generation_not_the_deployments() -> None:
    isvc, runtime = _isvc(generation=5, engine={}), _runtime()
    assert readiness(isvc, _live(isvc, runtime, engine=[AVAILABLE]), []).observed_generation == 5


def test_a_virtual_deployment_is_ready_at_the_inferenceservices_host() -> None:
    isvc = _isvc(engine={})
    isvc["metadata"]["annotations"] = {"ome.io/deploymentMode": "VirtualDeployment"}
    status = readiness(isvc, [], [])
    assert status.conditions == (
        Condition("True", "VirtualDeployment", "InferenceService is in VirtualDeployment mode", "Ready"),
    )
    assert status.url == "http://svc.demo.svc.cluster.local"
    assert status.components == {"predictor": {"url": "http://svc.demo.svc.cluster.local"}}
    assert status.model_status is None
    assert "modelStatus" not in status_fields(status, isvc)


def test_status_fields_are_the_url_address_components_model_status_and_observed_generation() -> None:
    isvc, runtime = _isvc(engine={}), _runtime()
    status = readiness(isvc, _live(isvc, runtime, engine=[AVAILABLE]), [])
    fields = status_fields(status, isvc)
    assert fields == {
        "url": "http://svc.demo.svc.cluster.local:30000",
        "address": {"url": "http://svc.demo.svc.cluster.local:30000"},
        "components": {"engine": {"latestCreatedRevision": "2", "url": "http://svc-engine.demo.svc.cluster.local"}},
        "modelStatus": {
            "transitionStatus": "InProgress",
            "modelRevisionStates": {"activeModelState": "Pending", "targetModelState": "Pending"},
        },
        "observedGeneration": 3,
    }
    written = {**isvc, "status": fields}
    assert status_fields(status, written) == {}


def test_status_fields_remove_what_is_gone_as_a_merge_patch() -> None:
    isvc, runtime = _isvc(engine={}), _runtime()
    was = {
        "url": "http://svc.demo.svc.cluster.local:30000",
        "components": {
            "engine": {"latestCreatedRevision": "2", "url": "http://svc-engine.demo.svc.cluster.local"},
            "router": {"url": "http://svc-router.demo.svc.cluster.local"},
        },
    }
    status = readiness(isvc, _live(isvc, runtime, engine=[UNAVAILABLE]), [])
    fields = status_fields(status, {**isvc, "status": was})
    assert "url" not in fields
    assert fields["components"] == {"engine": {"url": None}, "router": None}


def test_the_controller_keeps_of_each_object_all_that_readiness_reads() -> None:
    """observed.trimmed (what the controller holds of thousands of objects) drops specs but a
    Service's ports, managedFields and kubectl's last applied configuration: the status is the same."""
    runtime = _runtime(decoderConfig={"runner": runner()}, routerConfig={"runner": runner()})
    isvc = _isvc(engine={}, decoder={}, router={})
    objects = _live(isvc, runtime, engine=[UNAVAILABLE, PROGRESSING], decoder=[AVAILABLE], router=[UNAVAILABLE])
    for obj in objects:
        meta = obj["metadata"]
        meta["managedFields"] = [{"manager": "policyd-controller", "operation": "Apply", "fieldsV1": {"f:spec": {}}}]
        meta.setdefault("annotations", {})["kubectl.kubernetes.io/last-applied-configuration"] = "{}"
    engine, router = _workload(objects, "Deployment"), _workload(objects, "Deployment", "router")
    crashing = {
        "name": "ome-container",
        "state": {"waiting": {"reason": "CrashLoopBackOff"}},
        "lastState": {"terminated": {"reason": "Error", "exitCode": 1, "message": "CUDA out of memory"}},
    }
    pods = [
        _running(engine, "svc-engine-5d9c-a", created="2025-06-01T09:00:00Z"),
        _pod(engine, "svc-engine-7f1e-b", created="2025-06-01T11:00:00Z", containerStatuses=[crashing]),
        _unschedulable(router, "svc-router-1a2b-c"),
    ]
    for pod in pods:
        pod["spec"] = {"containers": [{"name": "ome-container", "image": "sglang"}]}
    whole = readiness(isvc, objects, pods)
    kept = readiness(isvc, [trimmed(o) for o in objects], [trimmed(p) for p in pods])
    assert kept == whole
    assert _condition(whole, "RouterReady").message.endswith(SCHEDULER)  # the pods were read
    for obj in (engine, pods[0]):
        assert "spec" not in trimmed(obj) and "managedFields" not in trimmed(obj)["metadata"]

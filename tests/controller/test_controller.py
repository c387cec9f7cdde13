"""The thin controller against the real daemon and renderer (subprocesses, real sockets).

No Kubernetes API server runs here; the cluster side is an in-memory Cluster with the
same interface as clients/controller/kube.py, which records what would be written."""

from __future__ import annotations

import copy
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import kubernetes_validate
import pytest
import yaml
from testkit.llama import MODEL_NAME, RUNTIME_NAME, llama_entry, model_manifest
from testkit.shared import REPO, RULES

from clients.conformance.processes import serving
from clients.controller.catalog_sync import CatalogSync
from clients.controller.cluster import Controller, Manifest
from clients.controller.outcome import Condition, Event
from clients.controller.reconcile import Reconciler
from policyd.contract import policy_pb2 as pb
from policyd.contract import policy_pb2_grpc, render_pb2_grpc

DEPLOY = REPO / "clients" / "controller" / "deploy"


@dataclass
class MemoryCluster:
    """What the controller wrote, by InferenceService name."""

    conditions: dict[str, Condition] = field(default_factory=dict)
    events: dict[str, list[Event]] = field(default_factory=dict)
    applied: list[tuple[dict[str, Any], Manifest]] = field(default_factory=list)
    isvcs: list[Manifest] = field(default_factory=list)

    def watch(self, kind: str) -> Iterator[tuple[str, Manifest]]:
        return iter(())

    def inference_services(self) -> list[Manifest]:
        return self.isvcs

    def set_condition(self, isvc: Manifest, condition: Condition) -> None:
        self.conditions[isvc["metadata"]["name"]] = condition

    def record_event(self, isvc: Manifest, event: Event) -> None:
        self.events.setdefault(isvc["metadata"]["name"], []).append(event)

    def apply(self, obj: Manifest, owner: Manifest) -> None:
        self.applied.append((dict(obj), owner))


@pytest.fixture(scope="module")
def stubs() -> Iterator[tuple[policy_pb2_grpc.PolicyServiceStub, render_pb2_grpc.RendererServiceStub]]:
    with (
        serving("policyd.server.main", ["--rules", str(RULES), "--log-level", "warning"], "127.0.0.1:0") as policy,
        serving("clients.renderer.main", [], "unix:{tmp}/render.sock") as renderer,
    ):
        p, r = grpc.insecure_channel(policy), grpc.insecure_channel(renderer)
        yield policy_pb2_grpc.PolicyServiceStub(p), render_pb2_grpc.RendererServiceStub(r)
        p.close()
        r.close()


def runtime(namespace: str, name: str = RUNTIME_NAME, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": "ServingRuntime",
        "metadata": {"name": name, "namespace": namespace, "resourceVersion": "7", "managedFields": [{}]},
        "spec": {
            "supportedModelFormats": [llama_entry(priority=1)],
            "engineConfig": {
                "runner": {
                    "name": "ome-container",
                    "image": "docker.io/lmsysorg/sglang:v0.5.5.post3-cu129-amd64",
                    "args": ["--model-path=$(MODEL_PATH)", "--served-model-name={{.Name}}"],
                    "resources": {"limits": {"nvidia.com/gpu": "1"}},
                }
            },
            **spec,
        },
        "status": {"observedGeneration": 1},
    }


def isvc(namespace: str, name: str = "llama", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}"},
        "spec": {"model": {"name": MODEL_NAME}, "engine": {"minReplicas": 1}, **spec},
    }


@pytest.fixture
def world(
    stubs: tuple[policy_pb2_grpc.PolicyServiceStub, render_pb2_grpc.RendererServiceStub],
) -> tuple[Controller, MemoryCluster]:
    cluster = MemoryCluster()
    controller = Controller(cluster, CatalogSync(stubs[0]), Reconciler(*stubs))
    controller.on_catalog_event("ADDED", model_manifest())
    return controller, cluster


def test_catalog_events_keep_policyds_catalog_in_sync(world: tuple[Controller, MemoryCluster]) -> None:
    controller, _ = world
    policy = controller.catalog.policy
    key = pb.ObjectKey(kind="ServingRuntime", namespace="sync", name=RUNTIME_NAME)
    controller.on_catalog_event("ADDED", runtime("sync"))
    stored = policy.GetObjects(pb.GetObjectsRequest(keys=[key])).objects[0].manifest
    assert '"status"' not in stored and "managedFields" not in stored  # the cluster's bookkeeping stays out
    controller.on_catalog_event("DELETED", runtime("sync"))
    assert policy.GetObjects(pb.GetObjectsRequest(keys=[key])).objects[0].manifest == ""


def test_inference_services_are_synced_into_the_catalog_for_what_if(world: tuple[Controller, MemoryCluster]) -> None:
    controller, _ = world
    policy = controller.catalog.policy
    key = pb.ObjectKey(kind="InferenceService", namespace="synced", name="llama")
    service = {**isvc("synced"), "status": {"conditions": []}}
    service["metadata"] = {**service["metadata"], "resourceVersion": "8", "generation": 2}
    controller.on_isvc_event("ADDED", service)
    stored = policy.GetObjects(pb.GetObjectsRequest(keys=[key])).objects[0].manifest
    assert '"status"' not in stored and "resourceVersion" not in stored and "generation" not in stored
    before = policy.GetStatus(pb.GetStatusRequest()).revisions.catalog_revision
    service["metadata"] = {**service["metadata"], "resourceVersion": "9"}  # a status write: nothing else changed
    controller.on_isvc_event("MODIFIED", service)
    assert policy.GetStatus(pb.GetStatusRequest()).revisions.catalog_revision == before
    controller.on_isvc_event("DELETED", service)
    assert policy.GetObjects(pb.GetObjectsRequest(keys=[key])).objects[0].manifest == ""


def test_a_runtime_the_webhook_refuses_never_enters_the_catalog(world: tuple[Controller, MemoryCluster]) -> None:
    controller, _ = world
    refused = runtime("refused", autoscalerPolicyRef={"name": "hpa"})
    assert controller.catalog.handle("ADDED", refused) is False
    key = pb.ObjectKey(kind="ServingRuntime", namespace="refused", name=RUNTIME_NAME)
    assert controller.catalog.policy.GetObjects(pb.GetObjectsRequest(keys=[key])).objects[0].manifest == ""


def test_an_auto_selected_runtime_is_ready_and_its_deployment_applied(world: tuple[Controller, MemoryCluster]) -> None:
    controller, cluster = world
    controller.on_catalog_event("ADDED", runtime("auto"))
    service = isvc("auto")
    controller.on_isvc_event("ADDED", service)
    assert cluster.conditions["llama"] == Condition("True", "RuntimeResolved", f"ServingRuntime {RUNTIME_NAME}")
    assert cluster.events == {}
    ((deployment, owner),) = [(obj, owner) for obj, owner in cluster.applied if obj["kind"] == "Deployment"]
    assert [obj["kind"] for obj, _ in cluster.applied] == [
        "Deployment",
        "Service",
        "HorizontalPodAutoscaler",
        "PodDisruptionBudget",
    ]
    assert deployment["metadata"]["name"] == "llama-engine"
    assert deployment["metadata"]["labels"]["serving-runtime"] == RUNTIME_NAME
    assert "--served-model-name=llama" in deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    assert owner is service


def test_no_matching_runtime_sets_runtime_ready_false_with_runtime_not_found(
    world: tuple[Controller, MemoryCluster],
) -> None:
    controller, cluster = world
    controller.on_isvc_event("ADDED", isvc("nothing-here"))
    condition = cluster.conditions["llama"]
    assert (condition.status, condition.reason) == ("False", "RuntimeNotFound")
    assert condition.message.startswith("no runtime found to support model safetensors with format safetensors")
    assert cluster.events["llama"] == [Event("Warning", "RuntimeNotFound", condition.message)]
    assert cluster.applied == []


def test_a_named_runtime_that_is_gone_gives_runtime_not_found(world: tuple[Controller, MemoryCluster]) -> None:
    controller, cluster = world
    controller.on_isvc_event("MODIFIED", isvc("gone", runtime={"name": "srt-deleted"}))
    message = "runtime srt-deleted not found in namespace gone or at cluster scope"
    assert cluster.conditions["llama"] == Condition("False", "RuntimeNotFound", message)
    assert cluster.events["llama"] == [Event("Warning", "RuntimeNotFound", message)]


def test_a_disabled_named_runtime_gives_a_runtime_validation_error(world: tuple[Controller, MemoryCluster]) -> None:
    controller, cluster = world
    controller.on_catalog_event("ADDED", runtime("disabled", disabled=True))
    controller.on_isvc_event("MODIFIED", isvc("disabled", runtime={"name": RUNTIME_NAME, "kind": "ServingRuntime"}))
    condition = cluster.conditions["llama"]
    assert (condition.status, condition.reason) == ("False", "RuntimeValidationError")
    assert "is disabled" in condition.message
    assert cluster.applied == []


@pytest.mark.parametrize(("auto_sync", "advisories"), [(True, 1), (False, 0)])
def test_a_named_runtime_without_support_records_an_advisory_unless_pinned(
    world: tuple[Controller, MemoryCluster], auto_sync: bool, advisories: int
) -> None:
    controller, cluster = world
    namespace = f"advisory-{auto_sync}".lower()
    other = copy.deepcopy(runtime(namespace))
    other["spec"]["supportedModelFormats"] = [llama_entry(modelArchitecture="Qwen2ForCausalLM")]
    controller.on_catalog_event("ADDED", other)
    named = {"name": RUNTIME_NAME, "kind": "ServingRuntime", "autoSync": auto_sync}
    controller.on_isvc_event("ADDED", isvc(namespace, runtime=named))
    events = [e for e in cluster.events.get("llama", []) if e.reason == "RuntimeCompatibilityAdvisory"]
    assert len(events) == advisories
    if events:
        assert events[0].type == "Warning"
        assert events[0].message.startswith(f"Runtime {RUNTIME_NAME} does not declare support for model {MODEL_NAME} (")
    assert cluster.conditions["llama"].status == "True"
    assert [obj["kind"] for obj, _ in cluster.applied if obj["kind"] == "Deployment"] == ["Deployment"]


def test_a_router_in_multinode_is_logged_without_an_event(
    world: tuple[Controller, MemoryCluster], caplog: pytest.LogCaptureFixture
) -> None:
    controller, cluster = world
    routed = runtime("routed", routerConfig={"annotations": {"ome.io/deploymentMode": "MultiNode"}})
    routed["spec"]["routerConfig"]["runner"] = {"name": "router", "image": "smg:v0.2.4"}
    controller.on_catalog_event("ADDED", routed)
    with caplog.at_level(logging.ERROR, logger="policyd.controller"):
        controller.on_isvc_event("ADDED", isvc("routed", router={"minReplicas": 1}))
    assert any(
        r.getMessage() == "Failed to reconcile component" and "invalid deployment mode for router" in str(r.__dict__)
        for r in caplog.records
    )
    assert cluster.events == {}
    assert {obj["metadata"]["name"] for obj, _ in cluster.applied} == {"llama-engine"}


def test_resync_decides_every_inference_service_again(world: tuple[Controller, MemoryCluster]) -> None:
    controller, cluster = world
    cluster.isvcs = [isvc("resync")]
    controller.resync()
    assert cluster.conditions["llama"].reason == "RuntimeNotFound"
    controller.on_catalog_event("ADDED", runtime("resync"))
    controller.resync()
    assert cluster.conditions["llama"].reason == "RuntimeResolved"


def test_the_accelerator_class_the_inference_service_selects_reaches_the_renderer(
    world: tuple[Controller, MemoryCluster],
) -> None:
    controller, cluster = world
    tuned = runtime("tuned")
    tuned["spec"]["supportedModelFormats"] = [
        llama_entry(acceleratorConfig={"nvidia-l40s": {"runtimeArgsOverride": ["--mem-frac=0.85"]}})
    ]
    tuned["spec"]["acceleratorRequirements"] = {"acceleratorClasses": ["nvidia-l40s"]}
    controller.on_catalog_event("ADDED", tuned)
    controller.on_isvc_event("ADDED", isvc("tuned", acceleratorSelector={"acceleratorClass": "nvidia-l40s"}))
    ((deployment, _),) = [(obj, owner) for obj, owner in cluster.applied if obj["kind"] == "Deployment"]
    assert "--mem-frac=0.85" in deployment["spec"]["template"]["spec"]["containers"][0]["args"]


@pytest.mark.parametrize("path", sorted(DEPLOY.glob("*.yaml")), ids=lambda p: p.name)
def test_the_shipped_manifests_are_valid_kubernetes(path: Path) -> None:
    for doc in yaml.safe_load_all(path.read_text()):
        kubernetes_validate.validate(doc, "1.32", strict=True)

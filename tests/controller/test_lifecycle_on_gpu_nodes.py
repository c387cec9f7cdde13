"""Seed 002's lifecycle driven with kubectl on the simulated GPU cluster: the real scheduler places
the engine's pods on fake GPU nodes, KWOK runs them, the Kubernetes controllers report the
Deployment's availability, and policy-controller reports the InferenceService as OME does; a
MultiNode engine's readiness from its LeaderWorkerSet's status."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from testkit.cluster import Cluster

from policyd.clients.renderer.names import model_node_label

from .manifests import (
    NAMED_ISVC,
    NAMED_RUNTIME,
    multinode_isvc,
    multinode_model,
    multinode_runtime,
    named_isvc,
    named_model,
    named_runtime,
)
from .support import World, eventually, running

ENGINE = f"{NAMED_ISVC}-engine"
GPU_NODES = ("h100-0", "h100-1", "l40s-0", "l40s-1")


@pytest.fixture
def ready_model(world: World, gpu_nodes: Cluster) -> Iterator[Cluster]:
    """The model on every GPU node, as the model agent labels a node where it is ready."""
    label = model_node_label(named_model()["metadata"]["name"], None)
    gpu_nodes.kubectl("label", "node", *GPU_NODES, f"{label}=Ready", "--overwrite")
    try:
        yield gpu_nodes
    finally:
        gpu_nodes.kubectl("label", "node", *GPU_NODES, f"{label}-")


def kubectl_apply(cluster: Cluster, manifest: dict[str, Any]) -> str:
    return cluster.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(manifest)).stdout


def condition(world: World, name: str, type_: str) -> dict[str, Any] | None:
    conditions = (world.isvc(name).get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == type_), None)


def test_spec_002_kubectl_wait_for_ready_returns_and_the_pods_run_on_gpu_nodes_with_the_runtimes_label(
    world: World, ready_model: Cluster
) -> None:
    cluster = ready_model
    world.apply(named_model())
    kubectl_apply(cluster, named_runtime())
    with running(world):
        assert kubectl_apply(cluster, named_isvc()).strip() == f"inferenceservice.ome.io/{NAMED_ISVC} created"
        cluster.kubectl(
            "wait", "--for=condition=Ready", f"inferenceservice/{NAMED_ISVC}", "-n", "llama-demo", "--timeout=120s"
        )
        columns = cluster.kubectl("get", "inferenceservice", NAMED_ISVC, "-n", "llama-demo").stdout.split("\n")
        shown = dict(zip(columns[0].split(), columns[1].split(), strict=False))
        assert shown["READY"] == "True"
        assert shown["URL"] == f"http://{NAMED_ISVC}.llama-demo.svc.cluster.local:8080"
        # the URL's Service: named after the InferenceService, selecting the engine's pods
        selector = cluster.kubectl(
            "get", "service", NAMED_ISVC, "-n", "llama-demo", "-o", "jsonpath={.spec.selector.component}"
        ).stdout  # fmt: skip
        assert selector == "engine"
        pods = cluster.kubectl(
            "get", "pods", "-n", "llama-demo", "-l", f"ome.io/inferenceservice={NAMED_ISVC}", "--no-headers",
            "-o", "custom-columns=COMPONENT:.metadata.labels.component,RUNTIME:.metadata.labels.serving-runtime,"
            "NODE:.spec.nodeName,PHASE:.status.phase",
        ).stdout.split("\n")  # fmt: skip
        (pod,) = [line.split() for line in pods if line]
        assert pod[:2] == ["engine", NAMED_RUNTIME] and pod[2] in GPU_NODES and pod[3] == "Running"
        status = world.isvc(NAMED_ISVC)["status"]
        assert {c["type"]: c["status"] for c in status["conditions"]}.items() >= {
            "EngineReady": "True",
            "IngressReady": "True",
            "Ready": "True",
            "RuntimeReady": "True",
        }.items()
        assert status["modelStatus"]["transitionStatus"] == "UpToDate"
        assert status["modelStatus"]["modelCopies"] == {"failedCopies": 0, "totalCopies": 1}
        assert status["observedGeneration"] == world.isvc(NAMED_ISVC)["metadata"]["generation"]

        # RuntimeReady doesn't count toward Ready: the runtime deleted, it stays Ready while its pods serve
        cluster.kubectl("delete", "clusterservingruntime", NAMED_RUNTIME)
        eventually(lambda: (c := condition(world, NAMED_ISVC, "RuntimeReady")) and c["reason"] == "RuntimeNotFound")
        assert condition(world, NAMED_ISVC, "Ready")["status"] == "True"  # type: ignore[index]


def test_an_engine_deployment_deleted_by_hand_is_back_within_10_seconds(world: World, ready_model: Cluster) -> None:
    cluster = ready_model
    world.apply(named_model())
    kubectl_apply(cluster, named_runtime())
    with running(world):
        kubectl_apply(cluster, named_isvc())
        cluster.kubectl("wait", "-n", "llama-demo", f"deployment/{ENGINE}", "--for=create", "--timeout=60s")
        uid = cluster.kubectl("get", "deployment", ENGINE, "-n", "llama-demo", "-o", "jsonpath={.metadata.uid}").stdout
        cluster.kubectl("delete", "deployment", ENGINE, "-n", "llama-demo", "--wait=false")

        def recreated() -> bool:
            shown = cluster.kubectl(
                "get", "deployment", ENGINE, "-n", "llama-demo", "-o", "jsonpath={.metadata.uid}", check=False
            )  # fmt: skip
            return shown.returncode == 0 and shown.stdout not in ("", uid)

        # seed 002's story: back within 10 s (by its watch, not at the next audit)
        eventually(recreated, timeout=10, what="the engine Deployment applied again")
        cluster.kubectl(
            "wait", "--for=condition=Ready", f"inferenceservice/{NAMED_ISVC}", "-n", "llama-demo", "--timeout=120s"
        )


def test_an_engine_whose_pods_cannot_be_scheduled_is_not_ready_with_the_schedulers_reason(
    world: World, ready_model: Cluster
) -> None:
    cluster = ready_model
    world.apply(named_model())
    runtime = copy.deepcopy(named_runtime())
    engine = runtime["spec"]["engineConfig"]
    engine["nodeSelector"] = {"nvidia.com/gpu.product": "NVIDIA-L40S"}  # nodes with 4 GPUs
    for amounts in engine["runner"]["resources"].values():
        amounts["nvidia.com/gpu"] = 8
    kubectl_apply(cluster, runtime)
    with running(world):
        kubectl_apply(cluster, named_isvc())
        engine_ready = eventually(
            # once the Deployment controller has judged it (before, the pod's reason alone)
            lambda: (
                (c := condition(world, NAMED_ISVC, "EngineReady"))
                and c["reason"] == "MinimumReplicasUnavailable"
                and "unschedulable" in c["message"]
                and c
            ),
            timeout=60,
            what="EngineReady saying the pod is unschedulable",
        )
        assert engine_ready["status"] == "False"
        assert "Insufficient nvidia.com/gpu" in engine_ready["message"]
        ready = condition(world, NAMED_ISVC, "Ready")
        assert ready is not None and (ready["status"], ready["reason"]) == ("False", "MinimumReplicasUnavailable")


def test_a_multinode_engine_is_ready_when_its_leaderworkerset_says_available(world: World, gpu_nodes: Cluster) -> None:
    """No LeaderWorkerSet controller runs here (its module is not served): the test writes the
    LeaderWorkerSet's status as that controller does once every group is ready."""
    world.apply(multinode_model())
    world.apply(multinode_runtime())
    with running(world):
        world.apply(multinode_isvc())
        initializing = eventually(
            lambda: (c := condition(world, "llama-3-70b", "EngineReady")) and c["reason"] == "Initializing" and c,
            what="EngineReady Initializing",
        )
        assert (initializing["status"], initializing["message"]) == ("Unknown", "engine component initializing")
        lws = "lws-llama-3-70b-engine"
        gpu_nodes.kubectl("wait", "-n", "llama-demo", f"leaderworkerset/{lws}", "--for=create", "--timeout=60s")
        available = {
            "type": "Available",
            "status": "True",
            "reason": "AllGroupsReady",
            "message": "All replicas are ready",
            "lastTransitionTime": "2026-01-01T00:00:00Z",
        }
        status = {"status": {"conditions": [available], "replicas": 1, "readyReplicas": 1, "updatedReplicas": 1}}
        gpu_nodes.kubectl(
            "patch", "leaderworkerset", lws, "-n", "llama-demo", "--subresource=status", "--type=merge",
            "-p", json.dumps(status),
        )  # fmt: skip
        gpu_nodes.kubectl(
            "wait", "--for=condition=Ready", "inferenceservice/llama-3-70b", "-n", "llama-demo", "--timeout=60s"
        )
        engine_ready = condition(world, "llama-3-70b", "EngineReady")
        assert engine_ready is not None
        assert (engine_ready["status"], engine_ready["reason"]) == ("True", "AllGroupsReady")

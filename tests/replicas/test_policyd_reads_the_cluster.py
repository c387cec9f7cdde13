"""policyd reads the cluster itself (``policyd --cluster``): ready only when in sync, any number of
replicas, never an empty answer. Three replicas watch the test control plane as a Deployment's
pods would; kubectl, the webhook and the controller use them as an operator's cluster does."""

from __future__ import annotations

import contextlib
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import grpc
import pytest
from controller.support import World, running
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from testkit.cluster import Cluster
from webhook.cluster_support import Kubectl, closed_port, registered, registrations
from webhook.support import running_webhook, serving_certs, unreachable_kubeconfig

from policyd.clients.policyctl.conformance.daemons import serving
from policyd.contract import policy_pb2 as pb
from policyd.contract import resources_pb2 as rpb

from .support import SERVING, Objects, Replica, eventually, isvc, model, replica, runtime

REPLICAS = 3


@pytest.fixture(scope="module")
def trio(kube_cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Replica]]:
    tmp = tmp_path_factory.mktemp("replicas")
    with contextlib.ExitStack() as stack:
        replicas = [
            stack.enter_context(replica(kube_cluster.kubeconfig, tmp / f"r{i}", "--log-level", "info"))
            for i in range(REPLICAS)
        ]
        yield replicas


@pytest.fixture
def objects(kube_cluster: Cluster) -> Iterator[Objects]:
    made = Objects(kube_cluster.api())
    try:
        yield made
    finally:
        made.clean()


def revisions(replicas: list[Replica]) -> set[str]:
    return {r.status().revisions.catalog_revision for r in replicas}


def same_catalog(replicas: list[Replica]) -> str:
    """The catalog revision every replica answers with, once they agree."""
    agreed = eventually(lambda: len(found := revisions(replicas)) == 1 and found, what="the replicas agree")
    (revision,) = agreed
    return revision


# --- ready only when in sync


def test_a_runtime_applied_with_kubectl_is_selected_by_every_replica_within_1s_at_p99_over_100_applies(
    trio: list[Replica], objects: Objects, kube_cluster: Cluster, tmp_path: Path
) -> None:
    namespace = objects.namespace("replicas-applies")
    objects.create(model())
    kubectl = Kubectl(kube_cluster.kubeconfig, tmp_path)
    subject = isvc(namespace)
    latencies = []
    for i in range(100):
        name = f"sglang-llama-{i}"
        kubectl.write("runtime.yaml", runtime(name, namespace, priority=i + 1))  # each outranks the one before
        ran = kubectl("apply", "-f", "runtime.yaml")
        assert ran.code == 0, ran.stderr
        objects.made.append(("servingruntimes", namespace, name))
        applied = time.monotonic()
        waiting = list(trio)
        while waiting:
            waiting = [r for r in waiting if r.first_choice(subject) != name]
            assert time.monotonic() - applied < 30, f"{name} not selected by {[r.address for r in waiting]}"
        latencies.append(time.monotonic() - applied)
    latencies.sort()
    p99 = latencies[98]
    assert p99 <= 1.0, f"p99 {p99:.3f}s (p50 {statistics.median(latencies):.3f}s)"


def test_a_replica_started_while_the_api_server_holds_1000_runtimes_is_not_serving_until_it_has_them_all(
    trio: list[Replica], objects: Objects, kube_cluster: Cluster, tmp_path: Path
) -> None:
    namespace = objects.namespace("replicas-thousand")
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda i: objects.create(runtime(f"rt-{i:04d}", namespace)), range(1000)))
    eventually(lambda: all(serving_runtimes(r) >= 1000 for r in trio), what="the trio holds the 1,000 runtimes")
    held = serving_runtimes(trio[0])
    whole = same_catalog(trio)
    with replica(kube_cluster.kubeconfig, tmp_path / "new", ready=False) as new:
        while True:
            # until it has them all it decides nothing rather than from a part of the catalog;
            # the first answer it gives is from the whole catalog
            try:
                answer = new.select(isvc(namespace))
            except grpc.RpcError as refused:
                assert refused.code() == grpc.StatusCode.UNAVAILABLE
                assert "policyd is listing the cluster" in (refused.details() or "")
                assert new.health() != SERVING or new.status().revisions.catalog_revision == whole
                continue
            assert answer.revisions.catalog_revision == whole
            break
        # health says SERVING only with the whole catalog behind it
        eventually(lambda: new.health() == SERVING, what="the new replica says SERVING")
        assert serving_runtimes(new) == held
        assert all(kind.synced for kind in new.status().kinds)
        assert same_catalog([*trio, new])


def serving_runtimes(r: Replica) -> int:
    (kind,) = [k for k in r.status().kinds if k.kind == "ServingRuntime"]
    return kind.objects


def test_a_replica_that_cannot_reach_the_api_server_is_not_serving_and_decides_nothing(tmp_path: Path) -> None:
    kubeconfig = unreachable_kubeconfig(tmp_path / "kubeconfig")
    with replica(kubeconfig, tmp_path / "lonely", ready=False) as lonely:
        status = eventually(lambda: (s := lonely.status()).stale_reason and s, what="the replica says it is stale")
        assert lonely.health() != SERVING
        assert status.catalog_source == "cluster"
        assert not any(kind.synced for kind in status.kinds)
        assert "Connection refused" in status.stale_reason
        with pytest.raises(grpc.RpcError) as refused:
            lonely.select(isvc("default"))
        assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
        assert (refused.value.details() or "").startswith("policyd is listing the cluster: ClusterServingRuntime")


def test_the_api_server_stopped_and_started_during_watches_loses_no_update(
    trio: list[Replica], objects: Objects, kube_cluster: Cluster, tmp_path: Path
) -> None:
    namespace = objects.namespace("replicas-restart")
    objects.create(model())
    for i in range(10):
        objects.create(runtime(f"before-{i}", namespace))
    eventually(lambda: all(r.status().runtimes >= 10 for r in trio), what="the trio has the runtimes")
    same_catalog(trio)
    kube_cluster.stop_apiserver()
    try:
        for r in trio:  # the last synced catalog keeps serving, and says since when it is stale
            status = eventually(lambda r=r: (s := r.status()).stale_since_unix_seconds and s, what="stale")
            assert status.stale_since_unix_seconds <= time.time()
            assert r.serving()
            assert r.first_choice(isvc(namespace)).startswith("before-")
        shown = policyctl(trio[0], "status")
        assert "CLUSTER (policyd --cluster): STALE since " in shown.stdout
        assert "(the last synced catalog serves)" in shown.stdout
        kube_cluster.compact_etcd()  # the watches' resourceVersions are gone: they list again
    finally:
        kube_cluster.up()
    # changed before the watches are back: they must come through the relist or the resumed watch
    for i in range(5):
        objects.delete("servingruntimes", namespace, f"before-{i}")
        objects.create(runtime(f"after-{i}", namespace))
    custom = client.CustomObjectsApi(kube_cluster.api())
    changed: Any = custom.get_namespaced_custom_object("ome.io", "v1beta1", namespace, "servingruntimes", "before-9")
    changed["spec"]["supportedModelFormats"][0]["priority"] = 7
    custom.replace_namespaced_custom_object("ome.io", "v1beta1", namespace, "servingruntimes", "before-9", changed)
    with replica(kube_cluster.kubeconfig, tmp_path / "fresh") as fresh:  # a fresh list of the cluster
        fresh_revision = fresh.status().revisions.catalog_revision
        assert fresh.first_choice(isvc(namespace)) == "before-9"
        eventually(lambda: revisions(trio) == {fresh_revision}, what="every replica equals a fresh list")
    for r in trio:
        status = r.status()
        assert status.stale_since_unix_seconds == 0 and not status.stale_reason
        assert any(kind.lists > 1 for kind in status.kinds), "no watch listed again after the compaction"


# --- what the catalog refuses, and what a watching policyd refuses


def test_objects_omes_webhook_would_refuse_are_kept_out_named_in_status_and_the_sync_goes_on(
    trio: list[Replica], objects: Objects
) -> None:
    namespace = objects.namespace("replicas-refused")
    refused = runtime("with-autoscaler", namespace)
    refused["spec"]["autoscalerPolicyRef"] = {"name": "llama-autoscaler"}
    objects.create(refused)
    objects.create(model())
    objects.create(runtime("fine", namespace))
    for r in trio:
        eventually(lambda r=r: r.first_choice(isvc(namespace)) == "fine", what="the runtime after it is served")
        status = r.status()
        (named,) = [o for o in status.refused if o.key.name == "with-autoscaler"]
        assert (named.key.kind, named.key.namespace) == ("ServingRuntime", namespace)
        assert "autoscalerPolicyRef is not allowed in runtime with-autoscaler" in named.message
        assert any(e.startswith(f"ServingRuntime/{namespace}/with-autoscaler: ") for e in status.catalog_errors)
        (kind,) = [k for k in status.kinds if k.kind == "ServingRuntime"]
        assert kind.refused >= 1
        logged = [e for e in r.logs() if e.get("object") == "with-autoscaler"]
        assert logged and logged[0]["kind"] == "ServingRuntime" and logged[0]["namespace"] == namespace
    objects.delete("servingruntimes", namespace, "with-autoscaler")
    for r in trio:
        eventually(lambda r=r: not any(o.key.name == "with-autoscaler" for o in r.status().refused), what="unnamed")


def test_a_policyd_that_watches_the_cluster_refuses_catalog_writes_saying_why(trio: list[Replica]) -> None:
    apply = pb.ApplyObjectsRequest(objects=[rpb.Object(manifest=json.dumps(model()))])
    with pytest.raises(grpc.RpcError) as refused:
        trio[0].policy.ApplyObjects(apply, timeout=10)
    assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "policyd reads its catalog from the cluster (--cluster): change the objects with kubectl" in (
        refused.value.details() or ""
    )
    delete = pb.DeleteObjectsRequest(keys=[pb.ObjectKey(kind="ClusterBaseModel", name="llama-3-2-3b-instruct")])
    with pytest.raises(grpc.RpcError) as refused:
        trio[0].policy.DeleteObjects(delete, timeout=10)
    assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION


# --- replicas behind the webhook and the controller


def test_killing_a_replica_with_sigkill_during_100_creates_through_the_webhook_denies_none(
    objects: Objects, kube_cluster: Cluster, tmp_path: Path
) -> None:
    namespace = objects.namespace("replicas-webhook")
    objects.create(model())
    objects.create(runtime("sglang-llama-3-2-3b", namespace))
    certs = serving_certs(tmp_path / "certs")
    probe = closed_port()
    with contextlib.ExitStack() as stack:
        stack.callback(probe.close)
        own = [stack.enter_context(replica(kube_cluster.kubeconfig, tmp_path / f"w{i}")) for i in range(REPLICAS)]
        for r in own:
            eventually(lambda r=r: r.first_choice(isvc(namespace)) == "sglang-llama-3-2-3b", what="synced")
        addresses = ",".join(r.address for r in own)
        webhook = stack.enter_context(
            running_webhook(addresses, certs.cert_dir, kubeconfig=kube_cluster.kubeconfig, log_level="warning")
        )
        label = ("policyd.test/replicas", "yes")
        configs = registrations(
            webhook.url, certs.ca.read_bytes(), "replicas", [namespace], label, probe.getsockname()[1]
        )
        stack.enter_context(registered(kube_cluster.api(), configs, "replicas", namespace))
        denied: list[str] = []
        for i in range(100):
            if i == 30:
                own[0].kill()  # mid-stream, with calls balanced over it
            body = isvc(namespace, f"llama-{i}")
            try:
                objects.create(body)
            except ApiException as err:
                denied.append(f"llama-{i}: {err.status} {err.body}")
        assert denied == []
        created: Any = client.CustomObjectsApi(kube_cluster.api()).list_namespaced_custom_object(
            "ome.io", "v1beta1", namespace, "inferenceservices"
        )
        assert len(created["items"]) == 100
        assert all(i["spec"]["engine"]["maxReplicas"] for i in created["items"])  # the defaulting webhook ran


def test_an_accelerator_class_applied_just_before_the_runtime_that_names_it_is_read_from_the_cluster(
    trio: list[Replica], objects: Objects, kube_cluster: Cluster, tmp_path: Path
) -> None:
    certs = serving_certs(tmp_path / "certs")
    probe = closed_port()
    label = ("policyd.test/replicas-classes", "yes")
    namespace = objects.namespace("replicas-classes")
    with contextlib.ExitStack() as stack:
        stack.callback(probe.close)
        addresses = ",".join(r.address for r in trio)
        webhook = stack.enter_context(
            running_webhook(addresses, certs.cert_dir, kubeconfig=kube_cluster.kubeconfig, log_level="warning")
        )
        configs = registrations(
            webhook.url, certs.ca.read_bytes(), "classes", [namespace], label, probe.getsockname()[1]
        )
        stack.enter_context(registered(kube_cluster.api(), configs, "classes", namespace))
        accelerator = {
            "apiVersion": "ome.io/v1beta1",
            "kind": "AcceleratorClass",
            "metadata": {"name": "nvidia-h100-replicas"},
            "spec": {
                "vendor": "nvidia",
                "capabilities": {"memoryGB": "80Gi"},
                "discovery": {"nodeSelector": {"nvidia.com/gpu.product": "H100"}},
            },
        }
        named_ = "srt-on-h100"
        named = runtime(named_, "")
        del named["metadata"]["namespace"]
        named["kind"] = "ClusterServingRuntime"
        named["metadata"]["labels"] = {label[0]: label[1]}
        named["spec"]["acceleratorRequirements"] = {"acceleratorClasses": ["nvidia-h100-replicas"]}
        kubectl = Kubectl(kube_cluster.kubeconfig, tmp_path / "kubectl")
        ran = kubectl.apply("runtime.yaml", accelerator, named)
        objects.made += [("acceleratorclasses", "", "nvidia-h100-replicas"), ("clusterservingruntimes", "", named_)]
        assert ran.code == 0, ran.stderr
        assert "clusterservingruntime.ome.io/srt-on-h100 created" in ran.stdout


def test_the_controller_pushes_nothing_to_replicas_that_watch_and_decides_on_what_it_has_seen(
    trio: list[Replica], kube_cluster: Cluster, tmp_path: Path
) -> None:
    with serving("policyd.clients.renderer.main", [], "unix:{tmp}/render.sock") as renderer:
        world = World(kube_cluster, ",".join(r.address for r in trio), renderer, "replicas-controller", tmp_path)
        try:
            with running(world) as controller:
                world.apply(model())
                world.apply(runtime("sglang-llama-3-2-3b", world.namespace))
                named = isvc(world.namespace)
                named["spec"]["runtime"] = {"name": "sglang-llama-3-2-3b"}  # it follows its runtime (spec 002)
                world.apply(named)
                ready = eventually(lambda: world.runtime_ready("llama-3-2-3b-instruct"), what="RuntimeReady")
                eventually(
                    lambda: (world.runtime_ready("llama-3-2-3b-instruct") or {}).get("status") == "True",
                    what="RuntimeReady True",
                )
                assert ready
                world.delete("ServingRuntime", "sglang-llama-3-2-3b")
                gone = eventually(
                    lambda: (c := world.runtime_ready("llama-3-2-3b-instruct")) and c["status"] == "False" and c,
                    what="RuntimeReady False once the runtime is deleted",
                )
                assert gone["reason"] == "RuntimeNotFound"
                assert controller.logged("watches the cluster itself: following it, pushing nothing")
                assert not controller.logged("policyd refused")
        finally:
            world.clean()


def policyctl(target: Replica, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "policyd.clients.policyctl.main", "--address", target.address, *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_policyctl_status_shows_each_kind_synced_with_its_objects_and_resource_version(trio: list[Replica]) -> None:
    shown = policyctl(trio[0], "status")
    assert shown.returncode == 0, shown.stderr
    assert "CLUSTER (policyd --cluster): IN SYNC" in shown.stdout
    rows = shown.stdout.split("KIND ")[1].splitlines()[1:7]
    assert [row.split()[0] for row in rows] == [
        "ClusterServingRuntime",
        "ServingRuntime",
        "ClusterBaseModel",
        "BaseModel",
        "InferenceService",
        "AcceleratorClass",
    ]
    assert all(row.split()[1] == "yes" and row.split()[4].isdigit() for row in rows)
    as_json = json.loads(policyctl(trio[0], "status", "-o", "json").stdout)
    assert as_json["catalogSource"] == "cluster"
    assert [k["synced"] for k in as_json["kinds"]] == [True] * 6

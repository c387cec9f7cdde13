"""Faults an operator meets: a watch that expires, an API server restart, a controller restart,
policyd down and back, another field manager, two controllers at once. The controller never
stops on them; it retries and reports."""

from __future__ import annotations

import contextlib
import copy
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import grpc
from testkit.shared import RULES

from policyd.clients.policyctl.conformance.daemons import serving
from policyd.contract import policy_pb2 as pb
from policyd.contract import policy_pb2_grpc

from .manifests import (
    AUTO_ISVC,
    NAMED_ISVC,
    NAMED_RUNTIME,
    auto_isvc,
    auto_model,
    auto_runtime,
    named_isvc,
    named_model,
    named_runtime,
)
from .support import World, as_written, eventually, running

ENGINE = ("Deployment", f"{NAMED_ISVC}-engine")


def reason(world: World, name: str) -> str | None:
    condition = world.runtime_ready(name)
    return condition["reason"] if condition else None


def in_policyd(address: str, kind: str, name: str, namespace: str = "") -> bool:
    with grpc.insecure_channel(address) as channel:
        key = pb.ObjectKey(kind=kind, namespace=namespace, name=name)
        reply = policy_pb2_grpc.PolicyServiceStub(channel).GetObjects(pb.GetObjectsRequest(keys=[key]))
        return bool(reply.objects[0].manifest)


def serving_named(world: World) -> None:
    world.apply(named_model())
    world.apply(named_runtime())
    world.apply(named_isvc())
    eventually(lambda: reason(world, NAMED_ISVC) == "RuntimeResolved", what="RuntimeResolved")


def test_a_runtime_deleted_while_the_watch_was_gone_leaves_policyds_catalog_after_410_gone(world: World) -> None:
    with running(world) as controller:
        serving_named(world)
        assert in_policyd(world.policyd, "ClusterServingRuntime", NAMED_RUNTIME)
        os.kill(controller.proc.pid, signal.SIGSTOP)  # the controller sees nothing from here on
        try:
            world.delete("ClusterServingRuntime", NAMED_RUNTIME)
            world.apply(auto_runtime())  # more history after the deletion
            world.cluster.stop_apiserver()  # the controller's watches break...
            world.cluster.compact_etcd()  # ...and the history they would resume from is gone
            world.cluster.up()
        finally:
            os.kill(controller.proc.pid, signal.SIGCONT)
        # resuming from its resourceVersion gets 410 Gone: the watch lists again, without the runtime
        # on a loaded machine the API server, its controllers and the watches all come back at once
        eventually(lambda: controller.logged("listed again after a watch gap"), timeout=120, what="a relisting")
        eventually(lambda: not in_policyd(world.policyd, "ClusterServingRuntime", NAMED_RUNTIME), what="deleted")
        eventually(lambda: reason(world, NAMED_ISVC) == "RuntimeNotFound", what="RuntimeNotFound")
        assert controller.proc.poll() is None


def test_the_api_server_restarting_mid_run_is_ridden_out(world: World) -> None:
    # a restart within the lease's renew deadline (40 s of a 60 s lease; a loaded machine may take
    # several seconds to start kube-apiserver): one longer stops the leader, as a test below says
    with running(world, "--lease-duration", "60") as controller:
        serving_named(world)
        world.cluster.restart_apiserver()
        world.apply(auto_model())
        world.apply(auto_runtime())
        world.apply(auto_isvc())  # a change after the restart: the watches are back
        eventually(lambda: reason(world, AUTO_ISVC) == "RuntimeResolved", timeout=60, what="RuntimeResolved")
        assert controller.proc.poll() is None


def _cluster_done_with(world: World, names: tuple[str, ...]) -> bool:
    """The cluster's controllers have nothing more to say of these InferenceServices' workloads
    (readiness reads them; what they say later is news, not a rewrite): each pod unschedulable or
    Ready (the cluster may have fake nodes from other tests), and each Deployment's status of its
    generation, Available and done progressing once all its pods are Ready."""
    for name in names:
        selector = f"ome.io/inferenceservice={name}"
        pods = world.core.list_namespaced_pod(world.namespace, label_selector=selector).items
        conditions = [{c.type: c.status for c in pod.status.conditions or []} for pod in pods]
        if not pods or any(c.get("PodScheduled") != "False" and c.get("Ready") != "True" for c in conditions):
            return False
        all_ready = all(c.get("Ready") == "True" for c in conditions)
        for (kind, _), item in world.workloads(name).items():
            if kind != "Deployment":
                continue
            status = item.get("status") or {}
            if status.get("observedGeneration") != item["metadata"]["generation"]:
                return False
            reported = {c["type"]: c for c in status.get("conditions") or []}
            if not {"Available", "Progressing"} <= set(reported):
                return False
            done = (
                reported["Available"]["status"] == "True"
                and reported["Progressing"]["reason"] == "NewReplicaSetAvailable"
                and status.get("availableReplicas") == item["spec"]["replicas"]
            )
            if all_ready and not done:
                return False
    return True


def _unchanged_for(world: World, names: tuple[str, ...], seconds: float) -> bool:
    versions = [world.isvc(name)["metadata"]["resourceVersion"] for name in names]
    time.sleep(seconds)
    return versions == [world.isvc(name)["metadata"]["resourceVersion"] for name in names]


def test_a_restarted_controller_rewrites_nothing(world: World) -> None:
    unsupported = copy.deepcopy(named_runtime())
    unsupported["spec"]["supportedModelFormats"][0]["modelArchitecture"] = "Qwen2ForCausalLM"
    world.apply(named_model())
    world.apply(unsupported)
    world.apply(auto_model())
    world.apply(auto_runtime())
    with running(world):
        world.apply(named_isvc())
        world.apply(auto_isvc())
        eventually(lambda: world.events(NAMED_ISVC, "RuntimeCompatibilityAdvisory"), what="the advisory")
        eventually(lambda: reason(world, AUTO_ISVC) == "RuntimeResolved", what="RuntimeResolved")
        eventually(lambda: ENGINE in world.workloads(NAMED_ISVC))
        eventually(lambda: world.workloads(AUTO_ISVC), what="the auto-selected workloads")
        # the cluster's controllers, then the first controller, done with both: a status written
        # after either is not the second controller's rewrite
        eventually(lambda: _cluster_done_with(world, (NAMED_ISVC, AUTO_ISVC)), what="their workloads settled")
        eventually(lambda: _unchanged_for(world, (NAMED_ISVC, AUTO_ISVC), seconds=1.5), what="both settled")
    before = {name: world.isvc(name)["metadata"]["resourceVersion"] for name in (NAMED_ISVC, AUTO_ISVC)}
    workloads = {k: as_written(v) for n in before for k, v in world.workloads(n).items()}
    events = {(e.metadata.name, e.count) for n in before for e in world.events(n)}
    statuses = {name: world.isvc(name)["status"] for name in before}
    with running(world):
        # reconciled in turn after the two it found: once this one is done, so are they
        later = auto_isvc()
        later["metadata"]["name"] = "later"
        world.apply(later)
        eventually(lambda: reason(world, "later") == "RuntimeResolved", what="the new InferenceService")
        assert {name: world.isvc(name)["status"] for name in before} == statuses
        assert {name: world.isvc(name)["metadata"]["resourceVersion"] for name in before} == before
        assert {k: as_written(v) for n in before for k, v in world.workloads(n).items()} == workloads
        assert {(e.metadata.name, e.count) for n in before for e in world.events(n)} == events


def _pid_serving(address: str) -> int:
    """The renderer process serving ``address`` (the module's own)."""
    for proc in Path("/proc").iterdir():
        with contextlib.suppress(OSError):
            args = (proc / "cmdline").read_bytes().split(b"\0")
            if b"policyd.clients.renderer.main" in args and address.encode() in args:
                return int(proc.name)
    raise LookupError(f"no renderer serving {address}")


def _unread_at(socket_path: str) -> int:
    """Bytes sent to ``socket_path`` its stopped server has not read."""
    lines = subprocess.run(["ss", "-xan"], capture_output=True, text=True, check=True).stdout.splitlines()[1:]
    return sum(int(line.split()[2]) for line in lines if socket_path in line)


def test_a_controller_stopped_in_the_middle_of_a_reconcile_finishes_it_rather_than_writing_unknown(
    world: World,
) -> None:
    """SIGTERM while a render is in progress: the key finishes before the connections close (an
    RPC cut short by closing its channel would be written as RuntimeReady Unknown, which the next
    controller rewrites). The renderer stops once the controller's connection to it is up: a
    connection attempt to a stopped process is given 2 s (policyd/clients/channels.py), a call sent on an
    open connection waits for its answer."""
    world.apply(auto_model())
    world.apply(auto_runtime())
    first = auto_isvc()
    first["metadata"]["name"] = "first"
    renderer = _pid_serving(world.renderer)
    with running(world) as controller:
        world.apply(first)
        eventually(lambda: reason(world, "first") == "RuntimeResolved", what="the first render")
        os.kill(renderer, signal.SIGSTOP)
        try:
            socket_path = world.renderer.removeprefix("unix:")
            unread = _unread_at(socket_path)  # the connection's own frames the renderer had not read yet
            world.apply(auto_isvc())
            eventually(lambda: _unread_at(socket_path) > unread, what="a render waiting for the renderer")
            controller.proc.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                controller.proc.wait(timeout=5)  # what closing the connections at once would have done
        finally:
            os.kill(renderer, signal.SIGCONT)
        assert controller.proc.wait(timeout=30) == 0
    condition = world.runtime_ready(AUTO_ISVC)
    assert condition is not None and (condition["status"], condition["reason"]) == ("True", "RuntimeResolved")
    assert controller.logged("stopped")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def test_policyd_down_is_reported_in_status_and_retried_until_it_is_back(world: World) -> None:
    address = f"127.0.0.1:{free_port()}"
    args = ["--rules", str(RULES), "--log-level", "warning"]
    with contextlib.ExitStack() as first, running(world, policyd=address) as controller:
        first.enter_context(serving("policyd.daemon.main", args, address))
        serving_named(world)
        first.close()  # policyd stops
        world.apply(auto_model())
        world.apply(auto_runtime())
        world.apply(auto_isvc())
        condition = eventually(lambda: world.runtime_ready(AUTO_ISVC), what="RuntimeReady")
        assert (condition["status"], condition["reason"]) == ("Unknown", "PolicyUnavailable")
        assert condition["message"].startswith(f"policyd at {address}: UNAVAILABLE")
        eventually(lambda: controller.logged("retrying in"), what="the retry logged")  # after the status it wrote
        with serving("policyd.daemon.main", args, address):  # back, with an empty catalog
            # every InferenceService, not only the one retried first: each may have been told
            # PolicyUnavailable while policyd was away, and each is decided again once it is back
            for name in (AUTO_ISVC, NAMED_ISVC):
                eventually(lambda n=name: reason(world, n) == "RuntimeResolved", what=f"{name} RuntimeResolved")
            assert in_policyd(address, "ClusterServingRuntime", NAMED_RUNTIME)
            assert controller.proc.poll() is None


def test_a_field_another_manager_owns_is_left_to_it_and_the_conflict_reported(world: World) -> None:
    with running(world) as controller:
        serving_named(world)
        deployment = eventually(lambda: world.workloads(NAMED_ISVC).get(ENGINE), what="the engine")
        container = deployment["spec"]["template"]["spec"]["containers"][0]["name"]
        # someone pins the image with their own apply
        theirs = {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": ENGINE[1], "namespace": world.namespace},
            "spec": {
                "template": {"spec": {"containers": [{"name": container, "image": "registry.local/sglang:pinned"}]}}
            },
        }
        world.apply(theirs, manager="platform-team")
        newer = named_runtime()
        newer["spec"]["engineConfig"]["runner"]["image"] = "docker.io/lmsysorg/sglang:v0.5.6"
        world.apply(newer)  # rolls out to the InferenceService that names it: the image conflicts
        (event,) = eventually(lambda: world.events(NAMED_ISVC, "WorkloadConflict"), what="the conflict event")
        assert event.type == "Warning"
        assert f"Deployment {ENGINE[1]}" in event.message and "platform-team" in event.message
        image = world.workloads(NAMED_ISVC)[ENGINE]["spec"]["template"]["spec"]["containers"][0]["image"]
        assert image == "registry.local/sglang:pinned"
        assert eventually(lambda: controller.logged("WorkloadConflict") or controller.logged("conflict with"))
        assert reason(world, NAMED_ISVC) == "RuntimeResolved"


def test_of_two_controllers_one_acts_and_the_other_takes_over_when_it_stops(world: World) -> None:
    unsupported = copy.deepcopy(named_runtime())
    unsupported["spec"]["supportedModelFormats"][0]["modelArchitecture"] = "Qwen2ForCausalLM"
    world.apply(named_model())
    world.apply(unsupported)
    first = world.start_controller()
    eventually(lambda: first.logged("leading"), what="the first leads")
    second = world.start_controller()
    eventually(lambda: second.logged("the lease"), what="the second campaigns")
    world.apply(named_isvc())
    (event,) = eventually(lambda: world.events(NAMED_ISVC, "RuntimeCompatibilityAdvisory"), what="the advisory")
    assert event.reporting_instance.endswith(f"_{first.proc.pid}")
    assert not second.logged("leading")
    assert first.stop() == 0  # gives the lease up
    eventually(lambda: second.logged("leading"), what="the second takes over")
    world.apply(auto_model())
    world.apply(auto_runtime())
    world.apply(auto_isvc())
    eventually(lambda: reason(world, AUTO_ISVC) == "RuntimeResolved", what="the second acts")
    assert second.stop() == 0


def test_a_standby_started_while_the_api_server_is_down_keeps_campaigning_and_leads_once_it_is_back(
    world: World,
) -> None:
    world.apply(named_model())
    world.apply(named_runtime())
    world.cluster.stop_apiserver()
    try:
        controller = world.start_controller()
        # the library's lock let a refused connection out of the election thread, which died
        eventually(lambda: controller.logged("could not read the lease"), what="a failed try logged")
        eventually(lambda: len(controller.logged("could not read the lease")) >= 2, what="another try")
    finally:
        world.cluster.up()
    eventually(lambda: controller.logged("leading"), timeout=60, what="it leads once the API server is back")
    world.apply(named_isvc())
    eventually(lambda: reason(world, NAMED_ISVC) == "RuntimeResolved", timeout=60, what="it acts")
    assert not controller.logged("Traceback")
    assert controller.stop() == 0


def test_a_leader_that_cannot_renew_its_lease_stops_acting(world: World) -> None:
    controller = world.start_controller()
    eventually(lambda: controller.logged("leading"), what="it leads")
    world.cluster.stop_apiserver()
    try:
        # --lease-duration 3: it renews within 2 s or stops, before a standby may take the lease
        code = eventually(lambda: controller.proc.poll(), timeout=60, what="the leader stops")
    finally:
        world.cluster.up()
    assert code == 1
    assert controller.logged("lost the lease: stopping so that only the new leader acts")
    assert not controller.logged("Traceback")

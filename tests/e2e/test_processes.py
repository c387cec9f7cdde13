"""policyd --processes 2: both worker processes answer on one port, and a catalog change one
of them acknowledged is in every answer that follows, whichever process serves it; each also
answers on an endpoint of its own (GetStatus lists them), over which a client balances its
calls; with --cpu-affinity on, each worker runs on a CPU of its own."""

from __future__ import annotations

import json
import os
import signal
import socket
import time
import urllib.request
from pathlib import Path

import grpc
from testkit.llama import model_manifest

from policyd.clients.channels import target_of
from policyd.clients.policyctl.conformance.daemons import serving
from policyd.contract import policy_pb2 as pb
from policyd.contract import policy_pb2_grpc
from policyd.contract import resources_pb2 as rpb

from .support import policyctl

CONNECTIONS = 8


def _free_ports(n: int) -> int:
    """The first of ``n`` consecutive free ports (metrics: one per worker)."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            first = s.getsockname()[1]
        try:
            for port in range(first, first + n):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", port))
            return first
        except OSError:
            continue
    raise AssertionError("no free ports")


def _calls(port: int) -> float:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    return sum(float(line.split()[-1]) for line in text.splitlines() if line.startswith("policyd_calls_total{"))


def _runtime(name: str) -> rpb.Object:
    doc = {
        "apiVersion": "ome.io/v1beta1",
        "kind": "ClusterServingRuntime",
        "metadata": {"name": name},
        "spec": {
            "supportedModelFormats": [
                {
                    "modelFormat": {"name": "safetensors", "version": "1.0.0"},
                    "modelFramework": {"name": "transformers", "version": "4.45.0.dev0"},
                    "modelArchitecture": "LlamaForCausalLM",
                    "autoSelect": True,
                }
            ]
        },
    }
    return rpb.Object(manifest=json.dumps(doc))


def test_every_process_answers_with_every_change_acknowledged_before(tmp_path: Path) -> None:
    metrics = _free_ports(2)
    args = ["--processes", "2", "--metrics-port", str(metrics), "--log-level", "warning"]
    args += ["--parse-cache", "", "--catalog", str(tmp_path)]
    with serving("policyd.daemon.main", args, "127.0.0.1:0") as address:
        options = [("grpc.use_local_subchannel_pool", 1)]  # a connection each, spread by the kernel
        channels = [grpc.insecure_channel(address, options=options) for _ in range(CONNECTIONS)]
        stubs = [policy_pb2_grpc.PolicyServiceStub(c) for c in channels]
        model = rpb.Object(manifest=json.dumps(model_manifest()))
        stubs[0].ApplyObjects(pb.ApplyObjectsRequest(objects=[model]))
        for i in range(12):
            writer = stubs[i % CONNECTIONS]
            applied = writer.ApplyObjects(pb.ApplyObjectsRequest(objects=[_runtime(f"rt-{i}")]))
            for stub in stubs:
                status = stub.GetStatus(pb.GetStatusRequest())
                assert status.revisions.catalog_revision == applied.catalog_revision
                key = pb.ObjectKey(kind="ClusterServingRuntime", name=f"rt-{i}")
                assert stub.GetObjects(pb.GetObjectsRequest(keys=[key])).objects[0].manifest
        gone = stubs[3].DeleteObjects(
            pb.DeleteObjectsRequest(keys=[pb.ObjectKey(kind="ClusterServingRuntime", name="rt-0")])
        )
        assert gone.deleted == 1
        for stub in stubs:
            assert stub.GetStatus(pb.GetStatusRequest()).runtimes == 11
        assert _calls(metrics) > 0 and _calls(metrics + 1) > 0, "both processes served calls"
        for c in channels:
            c.close()


def _workers(address: str) -> list[int]:
    """The worker processes serving ``address`` (their command lines name it)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"--journal" in cmd and address.encode() in cmd:
            found.append(int(entry.name))
    return found


def _masks(pid: int) -> set[frozenset[int]]:
    """The CPUs each thread of ``pid`` may run on."""
    out = set()
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            out.add(frozenset(os.sched_getaffinity(int(task))))
        except ProcessLookupError:  # a thread that ended meanwhile
            continue
    return out


def test_cpu_affinity_on_runs_each_worker_on_a_cpu_of_its_own(tmp_path: Path) -> None:
    cpus = sorted(os.sched_getaffinity(0))
    args = ["--processes", "2", "--cpu-affinity", "on", "--log-level", "warning"]
    args += ["--parse-cache", "", "--catalog", str(tmp_path)]
    with serving("policyd.daemon.main", args, "127.0.0.1:0") as address:
        masks = [_masks(pid) for pid in _workers(address)]
    assert len(masks) == 2 and all(len(m) == 1 and len(min(m)) == 1 for m in masks), masks  # each thread, one CPU
    assert sorted(min(min(m)) for m in masks) == [cpus[0], cpus[1 % len(cpus)]]


def _own_endpoint(pid: int) -> str:
    cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    return cmd[cmd.index(b"--own-listen") + 1].decode()


def test_each_process_has_an_endpoint_of_its_own_and_a_client_balancing_over_them_uses_every_process(
    tmp_path: Path,
) -> None:
    metrics = _free_ports(2)
    args = ["--processes", "2", "--metrics-port", str(metrics), "--log-level", "warning"]
    args += ["--parse-cache", "", "--catalog", str(tmp_path)]
    with serving("policyd.daemon.main", args, "127.0.0.1:0") as address:
        with grpc.insecure_channel(address) as c:
            endpoints = list(policy_pb2_grpc.PolicyServiceStub(c).GetStatus(pb.GetStatusRequest()).endpoints)
        workers = _workers(address)
        assert sorted(endpoints) == sorted(_own_endpoint(pid) for pid in workers) and address not in endpoints
        target, options = target_of(",".join(endpoints))
        with grpc.insecure_channel(target, options=options) as balanced:
            stub = policy_pb2_grpc.PolicyServiceStub(balanced)
            # round_robin balances over the subchannels that are READY: until both are, the
            # first one connected takes every call (a loaded machine saw [18, 2])
            start = [_calls(metrics), _calls(metrics + 1)]
            deadline = time.monotonic() + 60
            while min(_calls(metrics) - start[0], _calls(metrics + 1) - start[1]) < 1:
                assert time.monotonic() < deadline, "a process never served through the balancing channel"
                stub.GetStatus(pb.GetStatusRequest())
            before = [_calls(metrics), _calls(metrics + 1)]
            for _ in range(20):
                stub.GetStatus(pb.GetStatusRequest())
        served = [_calls(metrics) - before[0], _calls(metrics + 1) - before[1]]
        assert min(served) >= 5, f"calls each process served: {served}"
        listed = policyctl("status", address=",".join(endpoints))
        assert listed.returncode == 0 and ",".join(endpoints) in listed.stdout, listed.stderr

        # a worker started again serves its endpoint again: the supervisor holds the port
        mine = _own_endpoint(workers[0])
        os.kill(workers[0], signal.SIGKILL)
        deadline = time.monotonic() + 60
        while True:
            try:
                with grpc.insecure_channel(mine) as c:
                    policy_pb2_grpc.PolicyServiceStub(c).GetStatus(pb.GetStatusRequest(), timeout=2)
                break
            except grpc.RpcError:
                assert time.monotonic() < deadline, f"{mine} did not serve again"
                time.sleep(0.2)
        assert workers[0] not in _workers(address)


def _parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[1])


def test_the_workers_of_a_supervisor_that_is_killed_stop_rather_than_serve_on(tmp_path: Path) -> None:
    args = ["--processes", "2", "--log-level", "warning", "--parse-cache", "", "--catalog", str(tmp_path)]
    with serving("policyd.daemon.main", args, "127.0.0.1:0") as address:
        workers = _workers(address)
        (supervisor,) = {_parent(pid) for pid in workers}
        os.kill(supervisor, signal.SIGKILL)  # it cannot stop them: SIGTERM never reaches them
        deadline = time.monotonic() + 60
        while _workers(address):
            assert time.monotonic() < deadline, f"workers {_workers(address)} outlived their supervisor by 60 s"
            time.sleep(0.2)

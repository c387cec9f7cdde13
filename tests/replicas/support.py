"""policyd replicas that read the cluster themselves (``policyd --cluster``), as processes on real
sockets against the test control plane, and the OME objects the tests give them."""

from __future__ import annotations

import contextlib
import copy
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import grpc
import yaml
from grpc_health.v1 import health_pb2, health_pb2_grpc
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from testkit.shared import REPO

from policyd.contract import policy_pb2 as pb
from policyd.contract import policy_pb2_grpc
from policyd.contract import resources_pb2 as rpb

T = TypeVar("T")
EXAMPLES = REPO / "examples"
SERVING = health_pb2.HealthCheckResponse.SERVING
STOP_SECONDS = 60.0


def eventually(check: Callable[[], T], timeout: float = 60.0, what: str = "", every: float = 0.05) -> T:
    """``check()``'s first truthy result, polling until ``timeout`` (sized for a loaded 2-core machine)."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout}s: {what or check} (last: {result!r})")
        time.sleep(every)


@dataclass
class Replica:
    proc: subprocess.Popen[bytes]
    address: str
    log_path: Path

    def __post_init__(self) -> None:
        self.channel = grpc.insecure_channel(self.address)
        self.policy = policy_pb2_grpc.PolicyServiceStub(self.channel)
        self._health = health_pb2_grpc.HealthStub(self.channel)

    def health(self) -> int | None:
        """gRPC health's status, None when the process does not answer."""
        try:
            return int(self._health.Check(health_pb2.HealthCheckRequest(), timeout=5).status)
        except grpc.RpcError:
            return None

    def serving(self) -> bool:
        return self.health() == SERVING

    def status(self) -> pb.GetStatusResponse:
        reply: pb.GetStatusResponse = self.policy.GetStatus(pb.GetStatusRequest(), timeout=10)
        return reply

    def select(self, isvc: dict[str, Any]) -> pb.SelectResponse:
        request = pb.SelectRequest(inference_service=rpb.InferenceServiceInput(manifest=json.dumps(isvc)))
        reply: pb.SelectResponse = self.policy.Select(request, timeout=10)
        return reply

    def first_choice(self, isvc: dict[str, Any]) -> str:
        """The runtime Select ranks first, or "" (none selectable, or no answer yet)."""
        try:
            ranking = self.select(isvc).ranking
        except grpc.RpcError:
            return ""
        return ranking[0].name if ranking else ""

    def logs(self) -> list[dict[str, Any]]:
        lines = self.log_path.read_text(errors="replace").splitlines()
        return [json.loads(line) for line in lines if line.startswith("{")]

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self) -> None:
        self.channel.close()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=STOP_SECONDS)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()


@contextlib.contextmanager
def replica(kubeconfig: Path, tmp: Path, *extra: str, ready: bool = True, timeout: float = 120.0) -> Iterator[Replica]:
    """``policyd --cluster`` for the block; with ``ready``, yielded once its health says SERVING."""
    tmp.mkdir(parents=True, exist_ok=True)
    ready_file, log_path = tmp / "ready", tmp / "policyd.log"
    ready_file.unlink(missing_ok=True)
    command = [sys.executable, "-m", "policyd.daemon.main", "--cluster", "--kubeconfig", str(kubeconfig)]
    command += ["--listen", "127.0.0.1:0", "--ready-file", str(ready_file), *extra]
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    with log_path.open("ab") as log:
        proc = subprocess.Popen(command, stdout=log, stderr=log, env=env, start_new_session=True)
    started: Replica | None = None
    try:
        address = eventually(
            lambda: (ready_file.exists() and ready_file.read_text()) or _exited(proc, log_path),
            timeout,
            "policyd bound its address",
        )
        started = Replica(proc, address, log_path)
        if ready:
            eventually(started.serving, timeout, f"policyd at {address} SERVING")
        yield started
    finally:
        if started is not None:
            started.stop()
        else:
            proc.kill()
            proc.wait()


def _exited(proc: subprocess.Popen[bytes], log_path: Path) -> str:
    if proc.poll() is not None:
        raise AssertionError(f"policyd exited {proc.returncode}:\n{log_path.read_text()[-3000:]}")
    return ""


# --- objects


def example(file: str, kind: str, name: str) -> dict[str, Any]:
    for doc in yaml.safe_load_all((EXAMPLES / file).read_text()):
        if doc and doc["kind"] == kind and doc["metadata"]["name"] == name:
            found: dict[str, Any] = doc
            return found
    raise LookupError(f"examples/{file} has no {kind} {name}")


def model() -> dict[str, Any]:
    return example("catalog/models.yaml", "ClusterBaseModel", "llama-3-2-3b-instruct")


def runtime(name: str, namespace: str, priority: int = 1) -> dict[str, Any]:
    """examples' ServingRuntime for llama-3-2-3b, renamed, at ``priority`` (the highest ranks first)."""
    doc = copy.deepcopy(example("catalog/llama-runtimes.yaml", "ServingRuntime", "sglang-llama-3-2-3b"))
    doc["metadata"] = {"name": name, "namespace": namespace}
    doc["spec"]["supportedModelFormats"][0]["priority"] = priority
    return doc


def isvc(namespace: str, name: str = "llama-3-2-3b-instruct") -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load((EXAMPLES / "inferenceservices" / "llama-3-2-3b.yaml").read_text())
    doc["metadata"] = {"name": name, "namespace": namespace}
    return doc


class Objects:
    """OME objects made through the API server, all deleted at ``clean`` (no namespace or garbage
    collector runs beside the test API server)."""

    def __init__(self, api: client.ApiClient) -> None:
        self.custom = client.CustomObjectsApi(api)
        self.core = client.CoreV1Api(api)
        self.made: list[tuple[str, str, str]] = []  # plural, namespace, name

    def namespace(self, name: str) -> str:
        with contextlib.suppress(ApiException):
            self.core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
        return name

    def create(self, doc: dict[str, Any]) -> dict[str, Any]:
        plural = doc["kind"].lower() + "s"
        meta = doc["metadata"]
        if "namespace" in meta:
            made: dict[str, Any] = self.custom.create_namespaced_custom_object(
                "ome.io", "v1beta1", meta["namespace"], plural, doc
            )
        else:
            made = self.custom.create_cluster_custom_object("ome.io", "v1beta1", plural, doc)
        self.made.append((plural, meta.get("namespace", ""), meta["name"]))
        return made

    def delete(self, plural: str, namespace: str, name: str) -> None:
        with contextlib.suppress(ApiException):
            if namespace:
                self.custom.delete_namespaced_custom_object("ome.io", "v1beta1", namespace, plural, name)
            else:
                self.custom.delete_cluster_custom_object("ome.io", "v1beta1", plural, name)

    def clean(self) -> None:
        for plural, namespace, name in reversed(self.made):
            self.delete(plural, namespace, name)
        self.made.clear()

"""What the admission webhooks cost a user and the API server: a test control plane of its own
(tests/cluster/up.sh), policyd, the renderer and the controller keeping policyd's catalog, and
policy-webhook registered as OME's shipped webhook configurations (clientConfig.url on 127.0.0.1,
a CA of its own), all measured in one run.

    python benchmarks/webhook.py [--applies 30] [--reviews 400] [--keep DIR]

- kubectl apply: ``kubectl apply -f`` of spec 002's InferenceService (a new name each time, the
  real kubectl of tests/cluster/bin) into a namespace the webhooks select and into one they do
  not, alternated, so both meet the machine as it is; the median of each and their ratio
  (goal: <= 1.5);
- review: AdmissionReviews of InferenceServices (a new name and uid each, built beforehand) POSTed
  straight to the webhook's validating and mutating paths over one keep-alive HTTPS connection,
  each just after an empty policyd RPC (grpc health Check, the one benchmarks/scale.py uses) on
  the same daemon; p50 of each and the p50 of review / empty (goal for the validating review:
  <= 2). Two clients send them: the API server's is Go's net/http, whose own cost is a few
  microseconds, so the goal is judged with a minimal one (the request's bytes made beforehand,
  the answer read by its Content-Length); Python's http.client, which parses the answer's
  headers with the email package, is printed beside it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import ssl
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from kubernetes import client, config

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
os.environ.setdefault("POLICYD_SHARED", str(ROOT.parent / "shared"))

from controller.manifests import named_isvc, named_model, named_runtime  # noqa: E402
from testkit.cluster import control_plane  # noqa: E402
from testkit.shared import RULES  # noqa: E402
from webhook.cluster_support import Kubectl, closed_port, registered, registrations  # noqa: E402
from webhook.support import PATHS, admission_review, running_webhook, serving_certs  # noqa: E402

from policyd.clients.policyctl.conformance.daemons import serving  # noqa: E402
from policyd.contract import policy_pb2 as pb  # noqa: E402
from policyd.contract import policy_pb2_grpc  # noqa: E402

WITH, WITHOUT = "webhook-bench", "webhook-bench-none"  # the namespace the webhooks select, and not
SUFFIX = "bench"
GOAL_APPLY, GOAL_REVIEW = 1.5, 2.0


@contextlib.contextmanager
def controller(kubeconfig: Path, policyd: str, renderer: str, log: Path) -> Iterator[subprocess.Popen[bytes]]:
    args = [sys.executable, "-m", "policyd.clients.controller.main", "--kubeconfig", str(kubeconfig)]
    args += ["--policyd", policyd, "--renderer", renderer, "--leader-election-namespace", WITH]
    args += ["--lease-duration", "3", "--log-level", "warning"]
    with log.open("wb") as out:
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT)
    try:
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def wait_until(check: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise SystemExit(f"not within {timeout}s: {what}")
        time.sleep(0.2)


def in_catalog(policyd: str, kind: str, name: str) -> bool:
    with grpc.insecure_channel(policyd) as channel:
        key = pb.ObjectKey(kind=kind, name=name)
        reply = policy_pb2_grpc.PolicyServiceStub(channel).GetObjects(pb.GetObjectsRequest(keys=[key]))
    return bool(reply.objects[0].manifest)


def isvc(name: str, namespace: str) -> dict[str, Any]:
    doc = named_isvc()
    doc["metadata"] = {"name": name, "namespace": namespace}
    return doc


class MinimalClient:
    """One keep-alive HTTPS connection that sends requests made beforehand and reads each answer
    by its Content-Length: a client costing about what the API server's does."""

    def __init__(self, url: str, ca: Path) -> None:
        host, _, port = url.removeprefix("https://").rpartition(":")
        context = ssl.create_default_context(cafile=str(ca))
        self.sock = context.wrap_socket(socket.create_connection((host, int(port)), timeout=30), server_hostname=host)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.host = f"{host}:{port}"

    def request(self, path: str, body: bytes) -> bytes:
        head = f"POST {path} HTTP/1.1\r\nHost: {self.host}\r\nContent-Type: application/json\r\n"
        return f"{head}Content-Length: {len(body)}\r\n\r\n".encode() + body

    def send(self, request: bytes) -> tuple[int, bytes]:
        self.sock.sendall(request)
        data = b""
        while b"\r\n\r\n" not in data:
            data += self._recv()
        head, _, body = data.partition(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        length = next(int(line.split(b":")[1]) for line in lines if line.lower().startswith(b"content-length:"))
        while len(body) < length:
            body += self._recv()
        return int(lines[0].split()[1]), body

    def _recv(self) -> bytes:
        chunk = self.sock.recv(65536)
        if not chunk:
            raise SystemExit("the webhook closed the connection")
        return chunk

    def close(self) -> None:
        self.sock.close()


def p50(samples: list[float]) -> float:
    return statistics.median(samples)


def measure(args: argparse.Namespace, directory: Path) -> dict[str, float]:
    figures: dict[str, float] = {}
    kubeconfig = directory / "kubeconfig"
    api = config.new_client_from_config(str(kubeconfig))  # type: ignore[no-untyped-call]
    core = client.CoreV1Api(api)
    for namespace in (WITH, WITHOUT):
        core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace)))
    kubectl = Kubectl(kubeconfig, directory / "kubectl")
    certs = serving_certs(directory / "webhook-certs")
    probe = closed_port()
    with contextlib.ExitStack() as stack:
        stack.callback(probe.close)
        policyd = stack.enter_context(
            serving("policyd.daemon.main", ["--rules", str(RULES), "--log-level", "error"], "127.0.0.1:0")
        )
        renderer = stack.enter_context(serving("policyd.clients.renderer.main", [], "unix:{tmp}/render.sock"))
        stack.enter_context(controller(kubeconfig, policyd, renderer, directory / "controller.log"))
        hook = stack.enter_context(running_webhook(policyd, certs.cert_dir, kubeconfig=kubeconfig, log_level="warning"))
        configs = registrations(hook.url, certs.ca.read_bytes(), SUFFIX, [WITH], None, probe.getsockname()[1])
        stack.enter_context(registered(api, configs, SUFFIX, "default"))
        # spec 002's model and runtime, in policyd's catalog through the controller: the steady state
        ran = kubectl.apply("catalog.yaml", named_model(), named_runtime())
        if ran.code:
            raise SystemExit(f"kubectl apply of the catalog failed: {ran.stderr}")
        synced = [(doc["kind"], doc["metadata"]["name"]) for doc in (named_model(), named_runtime())]
        for kind, name in synced:
            wait_until(lambda kind=kind, name=name: in_catalog(policyd, kind, name), 60, f"{kind} {name} synced")

        # (1) kubectl apply with the webhooks and without, alternated
        timed: dict[str, list[float]] = {WITH: [], WITHOUT: []}
        for i in range(-2, args.applies):  # two warm-up pairs
            for namespace in (WITH, WITHOUT) if i % 2 else (WITHOUT, WITH):
                ran = kubectl.apply(f"isvc-{namespace}.yaml", isvc(f"bench-{i + 2}", namespace))
                if ran.code or ran.stderr:
                    raise SystemExit(f"kubectl apply into {namespace}: {ran.code} {ran.stderr}")
                if i >= 0:
                    timed[namespace].append(ran.seconds)
        figures["kubectl apply, webhooks ms"] = p50(timed[WITH]) * 1e3
        figures["kubectl apply, no webhooks ms"] = p50(timed[WITHOUT]) * 1e3
        figures["kubectl apply ratio"] = (
            figures["kubectl apply, webhooks ms"] / figures["kubectl apply, no webhooks ms"]
        )

        # (2) reviews straight to the webhook beside an empty RPC, requests built beforehand
        # a new name and uid for every review, of each client: policyd's decision cache never answers
        bodies = {
            (path, client): [
                json.dumps(
                    admission_review(isvc(f"review-{path[1]}-{client}-{i}", WITH), uid=str(uuid.uuid4()))
                ).encode()
                for i in range(args.reviews + 20)
            ]
            for path in (PATHS["inferenceservice"], PATHS["defaulter"])
            for client in ("minimal", "http")
        }
        web = hook.client(certs.ca)
        stack.callback(web.close)
        lean = MinimalClient(hook.url, certs.ca)
        stack.callback(lean.close)
        channel = grpc.insecure_channel(policyd)
        stack.callback(channel.close)
        health = health_pb2_grpc.HealthStub(channel)
        check = health_pb2.HealthCheckRequest()

        def by_http_client(path: str, body: bytes) -> tuple[int, bytes]:
            reply = web.post(path, body)
            return reply.status, reply.body

        for path, label in ((PATHS["inferenceservice"], "validating"), (PATHS["defaulter"], "mutating")):
            sent = {
                "": [lean.request(path, body) for body in bodies[path, "minimal"]],
                ", http.client": bodies[path, "http"],
            }
            for client_name, post in (
                ("", lean.send),
                (", http.client", lambda body, path=path: by_http_client(path, body)),
            ):
                samples = []
                for i, request in enumerate(sent[client_name]):
                    start = time.perf_counter()
                    health.Check(check)
                    between = time.perf_counter()
                    status, answer = post(request)
                    end = time.perf_counter()
                    if status != 200 or not json.loads(answer)["response"]["allowed"]:
                        raise SystemExit(f"{label} review {i}: {status} {answer[:500]!r}")
                    if i >= 20:  # warm-up
                        samples.append((end - between, between - start))
                figures[f"{label} review{client_name} ms"] = p50([t for t, _ in samples]) * 1e3
                figures[f"empty RPC beside the {label} review{client_name} ms"] = p50([e for _, e in samples]) * 1e3
                figures[f"{label} review / empty RPC{client_name}"] = p50([t for t, _ in samples]) / p50(
                    [e for _, e in samples]
                )
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--applies", type=int, default=30, help="kubectl applies timed in each namespace")
    parser.add_argument("--reviews", type=int, default=400, help="reviews timed on each webhook path")
    parser.add_argument("--keep", type=Path, help="the control plane's directory (default: a new temporary one)")
    args = parser.parse_args()
    load = os.getloadavg()
    with control_plane(args.keep, "policyd-webhook-bench-") as directory:
        figures = measure(args, directory)
    print(f"\nload average before: {load[0]:.1f}, after: {os.getloadavg()[0]:.1f} ({os.cpu_count()} cores)")
    for key, value in figures.items():
        print(f"{key:42}{value:>10.2f}")
    apply_ratio, review_ratio = figures["kubectl apply ratio"], figures["validating review / empty RPC"]
    print(
        f"{'goal: kubectl apply ratio <= ' + str(GOAL_APPLY):42}{'met' if apply_ratio <= GOAL_APPLY else 'NOT met':>10}"
    )
    print(
        f"{'goal: validating review p50 <= ' + str(GOAL_REVIEW) + ' x empty':42}"
        f"{'met' if review_ratio <= GOAL_REVIEW else 'NOT met':>10}"
    )


if __name__ == "__main__":
    main()

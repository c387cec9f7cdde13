"""What read-only callers cost policyd's memory, and whether the webhook's calls still answer
while others send large request catalogs.

    python benchmarks/request_memory.py [--calls 100] [--readers 8] [--catalog-mb 9] [--root DIR]

The daemon runs as a subprocess (bundled rules, empty catalog) on a loopback port; RSS is read
from /proc. Figures:

- Decide with a never-seen runtime of 1,000 supportedModelFormats entries in its request catalog,
  ``--calls`` times: RSS after ÷ before, and MB a call;
- Simulate and Lint with distinct rule files (the bundled rules, a comment apart), a fifth as many
  (at least 12);
- ``--readers`` threads sending Decide with a request catalog of ``--catalog-mb`` MB for 20 s while
  an Admit without one (the webhook's, 4 s deadline) is sent every 0.2 s: the Admits that failed,
  their latency ÷ an empty RPC's (health Check) before the readers started, the readers' calls
  answered and refused (RESOURCE_EXHAUSTED), and RSS at the peak and 5 s after.

``--root`` runs the daemon of another checkout (say a git worktree of an earlier commit), for a
before/after on one machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import grpc
import yaml
from grpc_health.v1 import health_pb2, health_pb2_grpc

from policyd.contract import policy_pb2 as pb
from policyd.contract import policy_pb2_grpc
from policyd.contract import resources_pb2 as rpb

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
MODEL = next(
    doc
    for doc in yaml.safe_load_all((EXAMPLES / "catalog/models.yaml").read_text())
    if doc["metadata"]["name"] == "llama-3-2-3b-instruct"
)
ISVC = yaml.safe_load((EXAMPLES / "inferenceservices/llama-3-2-3b.yaml").read_text())


def entry(priority: int) -> dict[str, Any]:
    return {
        "modelFormat": {"name": "safetensors", "version": "1.0.0"},
        "modelFramework": {"name": "transformers", "version": "4.45.0.dev0"},
        "modelArchitecture": "LlamaForCausalLM",
        "autoSelect": True,
        "priority": priority,
    }


def runtime(name: str, entries: int, args: int = 0) -> rpb.Object:
    runner = {"name": "ome-container", "image": f"sglang:{name}", "args": [f"--a{j}=" + "x" * 60 for j in range(args)]}
    doc = {
        "apiVersion": "ome.io/v1beta1",
        "kind": "ClusterServingRuntime",
        "metadata": {"name": name},
        "spec": {"supportedModelFormats": [entry(1 + j) for j in range(entries)], "engineConfig": {"runner": runner}},
    }
    return rpb.Object(manifest=json.dumps(doc))


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def start(root: Path, tmp: Path) -> tuple[subprocess.Popen[bytes], str]:
    ready = tmp / "ready"
    env = {**os.environ, "PYTHONPATH": str(root)}
    cmd = [sys.executable, "-m", "policyd.daemon.main", "--listen", "127.0.0.1:0", "--ready-file", str(ready)]
    proc = subprocess.Popen([*cmd, "--log-level", "error"], cwd=root, env=env, start_new_session=True)
    while not (ready.exists() and ready.read_text()):
        if proc.poll() is not None:
            raise SystemExit("policyd did not start")
        time.sleep(0.05)
    return proc, ready.read_text()


def isvc() -> rpb.InferenceServiceInput:
    return rpb.InferenceServiceInput(manifest=json.dumps(ISVC))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--calls", type=int, default=100)
    p.add_argument("--readers", type=int, default=8)
    p.add_argument("--catalog-mb", type=float, default=9)
    p.add_argument("--root", type=Path, default=ROOT)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        proc, address = start(args.root.resolve(), Path(tmp))
        try:
            run(proc.pid, address, args)
        finally:
            proc.terminate()
            proc.wait(60)


def run(pid: int, address: str, args: argparse.Namespace) -> None:
    options = [("grpc.max_send_message_length", 64 << 20), ("grpc.max_receive_message_length", 64 << 20)]
    channel = grpc.insecure_channel(address, options=options)
    stub = policy_pb2_grpc.PolicyServiceStub(channel)
    health = health_pb2_grpc.HealthStub(channel)
    model = rpb.Object(manifest=json.dumps(MODEL))

    def decide(i: int) -> None:
        catalog = pb.RequestCatalog(objects=[model, runtime(f"never-seen-{i}", 1000)])
        stub.Decide(pb.DecideRequest(inference_service=isvc(), catalog=catalog), timeout=120)

    for i in range(5):
        decide(-1 - i)
    before = rss_mb(pid)
    for i in range(args.calls):
        decide(i)
    after = rss_mb(pid)
    print(
        f"Decide, never-seen runtime ({len(runtime('x', 1000).manifest) >> 10} KiB) x {args.calls}: "
        f"RSS {before:.0f} -> {after:.0f} MB ({after / before:.2f}x, {(after - before) / args.calls:.2f} MB a call)"
    )

    rules = sorted((ROOT / "rules").glob("*.yaml"))
    variants = max(12, args.calls // 5)
    before = rss_mb(pid)
    for n in range(variants):
        files = [pb.RuleFile(name=r.name, content=r.read_text()) for r in rules]
        files[0].content += f"\n# variant {n}\n"
        if n % 2:
            stub.Lint(pb.LintRequest(rules=files), timeout=120)
        else:
            stub.Simulate(pb.SimulateRequest(rules=files, inference_services=[isvc()]), timeout=120)
    after = rss_mb(pid)
    print(
        f"Simulate/Lint, distinct rules x {variants}: RSS {before:.0f} -> {after:.0f} MB "
        f"({after / before:.2f}x, {(after - before) / variants:.2f} MB a call)"
    )

    empty = []
    for _ in range(50):
        started = time.perf_counter()
        health.Check(health_pb2.HealthCheckRequest(), timeout=10)
        empty.append(time.perf_counter() - started)
    per = max(1, int(args.catalog_mb * (1 << 20) / len(runtime("x", 0, 600).manifest)))
    bulk = [runtime(f"bulk-{j}", 1, 600) for j in range(per)]
    heavy = pb.DecideRequest(inference_service=isvc(), catalog=pb.RequestCatalog(objects=[model, *bulk]))
    sent = iter(range(1 << 30))
    stop = threading.Event()
    outcomes: dict[str, int] = {}
    lock = threading.Lock()

    def reader() -> None:
        while not stop.is_set():
            request = pb.DecideRequest()
            request.CopyFrom(heavy)
            request.catalog.objects.append(runtime(f"distinct-{next(sent)}", 1))  # nothing answered from a cache
            try:
                stub.Decide(request, timeout=30)
                code = "OK"
            except grpc.RpcError as err:
                code = err.code().name
            with lock:
                outcomes[code] = outcomes.get(code, 0) + 1

    threads = [threading.Thread(target=reader) for _ in range(args.readers)]
    for t in threads:
        t.start()
    admit = pb.AdmitRequest(object=rpb.Object(manifest=json.dumps(ISVC)))
    latencies, failed, peak = [], 0, 0.0
    ends = time.monotonic() + 20
    while time.monotonic() < ends:
        started = time.perf_counter()
        try:
            stub.Admit(admit, timeout=4)
            latencies.append(time.perf_counter() - started)
        except grpc.RpcError:
            failed += 1
        peak = max(peak, rss_mb(pid))
        time.sleep(0.2)
    stop.set()
    for t in threads:
        t.join()
    time.sleep(5)
    base = statistics.median(empty)
    print(f"{args.readers} readers, request catalog {heavy.ByteSize() / 1e6:.1f} MB: their calls {outcomes}")
    if latencies:
        print(
            f"  Admit meanwhile: {len(latencies)} answered, {failed} failed; ÷ empty RPC ({base * 1e3:.2f} ms): "
            f"p50 {statistics.median(latencies) / base:.1f}x, max {max(latencies) / base:.1f}x"
        )
    else:
        print(f"  Admit meanwhile: none answered, {failed} failed")
    print(f"  RSS peak {peak:.0f} MB, 5 s after {rss_mb(pid):.0f} MB")


if __name__ == "__main__":
    main()

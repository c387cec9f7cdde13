"""Rules reload cost: how long building the default rules takes, and Select latency
while the rules are reloaded repeatedly ÷ steady-state Select latency (one run,
same daemon, same request).

    python benchmarks/reload.py [--builds 20] [--seconds 5]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import threading
import time
from pathlib import Path

import grpc

from policyd.clients.policyctl.conformance.daemons import serving
from policyd.contract import policy_pb2 as pb
from policyd.contract import policy_pb2_grpc
from policyd.contract import resources_pb2 as rpb
from policyd.policy.revision import build_revision

ROOT = Path(__file__).resolve().parents[1]
CATALOG = Path(os.environ.get("POLICYD_SHARED") or ROOT.parent / "shared") / "data" / "ome-catalog"
MODEL = {
    "apiVersion": "ome.io/v1beta1",
    "kind": "ClusterBaseModel",
    "metadata": {"name": "llama-3-2-1b-instruct"},
    "spec": {
        "modelFormat": {"name": "safetensors", "version": "1.0.0"},
        "modelFramework": {"name": "transformers", "version": "4.45.0.dev0"},
        "modelArchitecture": "LlamaForCausalLM",
        "modelParameterSize": "1.24B",
    },
}
ISVC = {
    "apiVersion": "ome.io/v1beta1",
    "kind": "InferenceService",
    "metadata": {"name": "llama", "namespace": "default"},
    "spec": {"model": {"name": "llama-3-2-1b-instruct"}, "engine": {"minReplicas": 1}},
}


def p50_p99(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--builds", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--interval", type=float, default=0.25, help="seconds between rule edits")
    args = parser.parse_args()

    builds = []
    for _ in range(args.builds):
        start = time.perf_counter()
        revision = build_revision(ROOT / "rules")
        builds.append(time.perf_counter() - start)
    b50, b99 = p50_p99(builds)
    what = f"{len(revision.policy.rules)} rules, {revision.tests_run} rule tests"
    print(f"build default rules ({what}): p50 {b50 * 1e3:.1f} ms, p99 {b99 * 1e3:.1f} ms")

    with tempfile.TemporaryDirectory() as tmp:
        rules = Path(tmp)
        for f in (ROOT / "rules").glob("*.yaml"):
            shutil.copy(f, rules)
        daemon = ["--rules", str(rules), "--catalog", str(CATALOG), "--watch-interval", "0.05", "--log-level", "error"]
        with serving("policyd.daemon.main", daemon, "127.0.0.1:0") as address:
            channel = grpc.insecure_channel(address)
            stub = policy_pb2_grpc.PolicyServiceStub(channel)
            stub.ApplyObjects(pb.ApplyObjectsRequest(objects=[rpb.Object(manifest=json.dumps(MODEL))]))
            request = pb.SelectRequest(inference_service=rpb.InferenceServiceInput(manifest=json.dumps(ISVC)))

            def measure(seconds: float) -> tuple[list[float], set[str]]:
                samples, revisions = [], set()
                stop = time.perf_counter() + seconds
                while time.perf_counter() < stop:
                    start = time.perf_counter()
                    reply = stub.Select(request)
                    samples.append(time.perf_counter() - start)
                    revisions.add(reply.revisions.rules_revision)
                return samples, revisions

            measure(0.5)
            steady, _ = measure(args.seconds)
            stop = threading.Event()
            target = rules / "messages.yaml"
            original = target.read_text()

            def edit() -> None:
                i = 0
                while not stop.wait(args.interval):
                    i += 1
                    target.write_text(original + f"\n# edit {i}\n")

            editor = threading.Thread(target=edit)
            editor.start()
            during, revisions = measure(args.seconds)
            stop.set()
            editor.join()
            channel.close()
    s50, s99 = p50_p99(steady)
    d50, d99 = p50_p99(during)
    print(f"Select steady: p50 {s50 * 1e3:.3f} ms, p99 {s99 * 1e3:.3f} ms")
    what = f"every {args.interval}s, {len(revisions)} revisions served"
    print(f"Select during reloads ({what}): p50 {d50 * 1e3:.3f} ms, p99 {d99 * 1e3:.3f} ms")
    print(f"during ÷ steady: p50 {d50 / s50:.2f}, p99 {d99 / s99:.2f}")


if __name__ == "__main__":
    main()

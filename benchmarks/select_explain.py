"""Select and Explain latency for one Llama model against the whole OME catalog,
as ratios of an empty RPC (grpc health Check) on the same server in the same run.

    python benchmarks/select_explain.py [--n 2000] [--seconds 3]

The daemon runs as a subprocess on a loopback socket with ../shared/data/ome-catalog: once
with the decision cache, once without it (``--decision-cache-mb 0``) for the figures of
decisions made on every call, each against its own empty RPC.
The model is the catalog's llama-3-2-1b-instruct, with the fields OME records taken
from the real config.json (InspectModel), applied over gRPC like the controller does.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import yaml
from google.protobuf import json_format
from grpc_health.v1 import health_pb2, health_pb2_grpc

from policyd.clients.policyctl.conformance.daemons import serving
from policyd.contract import policy_pb2 as pb
from policyd.contract import policy_pb2_grpc
from policyd.contract import resources_pb2 as rpb

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("POLICYD_SHARED") or ROOT.parent / "shared") / "data"


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def timed(call: Callable[[int], Any], n: int, warmup: int = 100) -> list[float]:
    for i in range(warmup):
        call(i)
    out = []
    for i in range(n):
        start = time.perf_counter()
        call(i)
        out.append(time.perf_counter() - start)
    return out


def throughput(call: Callable[[int], Any], threads: int, seconds: float) -> float:
    counts = [0] * threads
    stop = time.perf_counter() + seconds

    def worker(k: int) -> None:
        i = 0
        while time.perf_counter() < stop:
            call(i)
            i += 1
        counts[k] = i

    pool = [threading.Thread(target=worker, args=(k,)) for k in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    return sum(counts) / seconds


def isvc(name: str) -> rpb.InferenceServiceInput:
    doc = {
        "apiVersion": "ome.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"model": {"name": "llama-3-2-1b-instruct"}, "engine": {"minReplicas": 1}},
    }
    return rpb.InferenceServiceInput(manifest=json.dumps(doc))


def _prepared(policy: policy_pb2_grpc.PolicyServiceStub, catalog: Path) -> pb.GetStatusResponse:
    """The catalog's Llama model with the fields InspectModel records from its config.json, applied."""
    manifest = yaml.safe_load((catalog / "models/meta/Llama-3.2-1B-Instruct.yaml").read_text())
    request = pb.InspectModelRequest(base_model=rpb.Object(manifest=json.dumps(manifest)))
    json_format.ParseDict(json.loads((SHARED / "hf-configs/llama3_2_1b.json").read_text()), request.config)
    manifest["spec"] = json.loads(policy.InspectModel(request).spec_json)
    policy.ApplyObjects(pb.ApplyObjectsRequest(objects=[rpb.Object(manifest=json.dumps(manifest))]))
    return policy.GetStatus(pb.GetStatusRequest())


def _measure(address: str, label: str, catalog: Path, n: int, seconds: float) -> None:
    channel = grpc.insecure_channel(address)
    policy = policy_pb2_grpc.PolicyServiceStub(channel)
    health = health_pb2_grpc.HealthStub(channel)
    status = _prepared(policy, catalog)
    same = isvc("llama-3-2-1b-instruct")
    select_req = pb.SelectRequest(inference_service=same)
    explain_req = pb.ExplainRequest(inference_service=same)
    if not label:
        chosen = policy.Select(select_req).ranking[0].name
        print(f"catalog: {status.runtimes} runtimes, {status.models} models; selected {chosen!r}")
    runs = {
        "empty RPC (health Check)": timed(lambda i: health.Check(health_pb2.HealthCheckRequest()), n),
        f"Select{label}": timed(lambda i: policy.Select(select_req), n),
        f"Explain{label}": timed(lambda i: policy.Explain(explain_req), n),
    }
    base50, base99 = percentiles(runs["empty RPC (health Check)"])
    for name, samples in runs.items():
        p50, p99 = percentiles(samples)
        print(f"{name:34} {p50 * 1e3:8.3f} {p99 * 1e3:8.3f} {p50 / base50:12.2f} {p99 / base99:12.2f}")
    empty_tp = throughput(lambda i: health.Check(health_pb2.HealthCheckRequest()), 4, seconds)
    select_tp = throughput(lambda i: policy.Select(select_req), 4, seconds)
    print(
        f"throughput{label}, 4 client threads: empty {empty_tp:.0f}/s, Select {select_tp:.0f}/s, "
        f"ratio {select_tp / empty_tp:.2f}"
    )
    channel.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()
    catalog = SHARED / "ome-catalog"
    print(f"{'call':34} {'p50 ms':>8} {'p99 ms':>8} {'p50 ÷ empty':>12} {'p99 ÷ empty':>12}")
    # cached, then on a daemon without the decision cache (--decision-cache-mb 0): every call is
    # decided (the cache keys no InferenceService name, so a new name per call would still hit it)
    for cache_mb, label in (("64", ""), ("0", ", decision not cached")):
        flags = ["--catalog", str(catalog), "--log-level", "warning", "--decision-cache-mb", cache_mb]
        with serving("policyd.daemon.main", flags, "127.0.0.1:0") as address:
            _measure(address, label, catalog, args.n, args.seconds)


if __name__ == "__main__":
    main()

"""What-if on the OME catalog: how long a diff (Simulate) and a lint (Lint) take, absolute and as
ratios of deciding every InferenceService once with Select, one RPC each.

    python benchmarks/whatif.py [--repeat 5]

The daemon runs as a subprocess on a loopback socket with ../shared/data/ome-catalog, and every
model is applied as an InferenceService (as the controller syncs them), in two catalogs:

- as shipped: 166 of the 207 models have no modelFormat yet (OME's model agent records it from
  the model's config.json once downloaded), so their InferenceServices are refused at once;
- formats recorded: each such model gets the format, framework and architecture of the first
  entry of its namesake runtime (srt-<model> or vllm-<model>), where there is one, so that
  nearly every InferenceService is decided against all 203 runtimes.

The diff deletes srt-gpt-oss-120b-grpc (two InferenceServices change): only the InferenceServices
a changed runtime can reach are decided. The rules diff adds rules/examples beside the bundled
rules: every InferenceService is decided under both revisions ("again": the side as it is comes
from the decision memo). The lint is timed after a catalog change (nothing memoised) and repeated.
The CLI rows time `policyctl diff` / `policyctl lint` as processes, start-up included.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import yaml

from policyd.clients.policyctl.conformance.daemons import serving
from policyd.contract import policy_pb2 as pb
from policyd.contract import policy_pb2_grpc
from policyd.contract import resources_pb2 as rpb

ROOT = Path(__file__).resolve().parents[1]
CATALOG = Path(os.environ.get("POLICYD_SHARED") or ROOT.parent / "shared") / "data" / "ome-catalog"
DELETED = pb.ObjectKey(kind="ClusterServingRuntime", name="srt-gpt-oss-120b-grpc")


def manifests(kind: str) -> list[dict[str, Any]]:
    docs = []
    for path in sorted(CATALOG.rglob("*.yaml")):
        docs += [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict) and d.get("kind") == kind]
    return docs


def recorded(models: list[dict[str, Any]], runtimes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Models without a format get their namesake runtime's first entry's (see the docstring)."""
    by_name = {r["metadata"]["name"]: r for r in runtimes}
    out = []
    for model in models:
        name, spec = model["metadata"]["name"], model.get("spec") or {}
        runtime = by_name.get(f"srt-{name}") or by_name.get(f"vllm-{name}")
        if "modelFormat" not in spec and runtime is not None:
            first = runtime["spec"]["supportedModelFormats"][0]
            fields = ("modelFormat", "modelFramework", "modelArchitecture", "quantization")
            model = {**model, "spec": {**spec, **{k: first[k] for k in fields if k in first}}}
        out.append(model)
    return out


def isvc(model: dict[str, Any]) -> rpb.Object:
    doc = {
        "apiVersion": "ome.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {"name": model["metadata"]["name"], "namespace": "default"},
        "spec": {"model": {"name": model["metadata"]["name"]}, "engine": {"minReplicas": 1}},
    }
    return rpb.Object(manifest=json.dumps(doc))


def seconds(call: Callable[[], Any]) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def cli(address: str, *args: str) -> float:
    cmd = [sys.executable, "-m", "policyd.clients.policyctl.main", "--address", address, *args]
    start = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, capture_output=True, check=False)
    return time.perf_counter() - start


def run(name: str, models: list[dict[str, Any]], repeat: int) -> None:
    args = ["--catalog", str(CATALOG), "--log-level", "warning"]
    with serving("policyd.daemon.main", args, "127.0.0.1:0") as address:
        channel = grpc.insecure_channel(address)
        policy = policy_pb2_grpc.PolicyServiceStub(channel)
        objects = [rpb.Object(manifest=json.dumps(m)) for m in models] + [isvc(m) for m in models]
        policy.ApplyObjects(pb.ApplyObjectsRequest(objects=objects))
        status = policy.GetStatus(pb.GetStatusRequest())
        selects = [pb.SelectRequest(inference_service=rpb.InferenceServiceInput(manifest=o.manifest)) for o in objects]
        selects = selects[len(models) :]
        select_all = seconds(lambda: [policy.Select(s) for s in selects])
        diff = pb.SimulateRequest(delete=[DELETED])
        first_diff = seconds(lambda: policy.Simulate(diff))
        reply = policy.Simulate(diff)
        again = statistics.median(seconds(lambda: policy.Simulate(diff)) for _ in range(repeat))
        files = [
            pb.RuleFile(name=str(p), content=p.read_text()) for p in sorted((ROOT / "rules/examples").glob("*.yaml"))
        ]
        rules = pb.SimulateRequest(rules=files)
        first_rules = seconds(lambda: policy.Simulate(rules))
        rules_again = seconds(lambda: policy.Simulate(rules))
        rules_changes = len(policy.Simulate(rules).changes)
        first_lint = seconds(lambda: policy.Lint(pb.LintRequest()))
        lint = policy.Lint(pb.LintRequest())
        lint_again = statistics.median(seconds(lambda: policy.Lint(pb.LintRequest())) for _ in range(repeat))
        diff_cli = statistics.median(cli(address, "diff", "--delete", "csr/srt-gpt-oss-120b-grpc") for _ in range(3))
        lint_cli = statistics.median(cli(address, "lint") for _ in range(3))
        channel.close()
    refused = sum(1 for m in models if "modelFormat" not in (m.get("spec") or {}))
    print(f"\n{name}: {status.runtimes} runtimes, {status.models} models ({refused} without a format),")
    print(f"  {status.inference_services} InferenceServices; the diff changes {len(reply.changes)} decisions")
    print(f"  (the rules diff {rules_changes}),")
    print(f"  the lint has {len(lint.findings)} findings over {lint.models_decided} models")
    print(f"  {'':38} {'seconds':>8} {'÷ Select all':>13}")
    rows = [
        ("Select every InferenceService (1 RPC each)", select_all),
        ("diff (Simulate), first", first_diff),
        ("diff (Simulate), again", again),
        ("diff --rules rules/examples, first", first_rules),
        ("diff --rules rules/examples, again", rules_again),
        ("lint (Lint), first", first_lint),
        ("lint (Lint), again", lint_again),
        ("policyctl diff (process)", diff_cli),
        ("policyctl lint (process)", lint_cli),
    ]
    for label, value in rows:
        print(f"  {label:38} {value:8.3f} {value / select_all:13.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5)
    options = parser.parse_args()
    models, runtimes = manifests("ClusterBaseModel"), manifests("ClusterServingRuntime")
    run("as shipped", models, options.repeat)
    run("formats recorded", recorded(models, runtimes), options.repeat)


if __name__ == "__main__":
    main()

"""policyd --cluster at cluster scale: a test control plane of its own (tests/cluster/up.sh) and
replicas of ``policyd --cluster`` listing and watching it, all measured in one run.

    python benchmarks/cluster_sync.py [--sizes 1000,20000] [--applies 100] [--late-applies 20]
                                      [--quick] [--keep DIR]

(--quick: --sizes 200,1000 --applies 20 --late-applies 10, about a minute on 2 cores; the
default takes about 6 minutes there, 3 of them creating the 20,000 runtimes.)

- apply: three replicas watch the cluster; N times one ClusterServingRuntime is created (the
  kubernetes client's create call), with an autoSelect entry for a model whose architecture no
  other runtime serves, at a priority above every earlier one; each replica is asked (Select of
  an InferenceService naming that model) until it ranks the new runtime first. p50 and p99 of
  the time from the create's return to the last replica showing it (each replica asked on a
  client thread of its own, Select after Select, so its resolution is one Select), beside the
  p50 of an empty RPC (gRPC health Check) on the same replicas, of the create call itself (the
  API server's write), and of the benchmark's own plain watch seeing the object (the kubernetes
  client's watch stream, in this process: the API server's delivery, the floor); ratios of the
  p50s to each. The same again (``--late-applies``) once the cluster holds the largest size,
  the replica started at that size (which listed it) asked too, apart;
- start-to-ready: at each size, that many ClusterServingRuntimes (the synthetic catalog of
  tests/testkit/synthetic.py, every one made a ClusterServingRuntime) created in the API server
  (8 client threads, the create call: no kubectl last-applied annotation), the running replicas
  following them by their watches; then (a) a plain paged list of them with the kubernetes
  client (limit 500, the pager's default, the call policyd makes), and (b) a new replica from its
  process start until gRPC health says SERVING; b / a, goal <= 2x. b includes Python's imports
  and the rules' load: the new replica's ready file (written once it serves, its watches
  started) splits b into the start and the sync, and sync / a is printed too. (a) is taken
  before and after (b), their mean the divisor;
- RSS of every replica once the largest size is in and settled (VmRSS, and VmHWM the peak):
  the replicas that followed by watch events and the new one that listed; goal <= 300 MB;
- the API server's lists and watches opened per replica (GetStatus kinds[].lists and .watches,
  summed over the six kinds), with the API server's own count of WATCH requests open on
  ome.io (apiserver_longrunning_requests; the benchmark's own watch is one of them).

The API server runs with its defaults and --watch-cache=false (tests/cluster/up.sh): lists
and watches are served by etcd.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import math
import os
import re
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from kubernetes import client, config, watch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
os.environ.setdefault("POLICYD_SHARED", str(ROOT.parent / "shared"))

from measured import Measured  # noqa: E402
from testkit import synthetic  # noqa: E402
from testkit.cluster import control_plane  # noqa: E402

from policyd.contract import policy_pb2 as pb  # noqa: E402
from policyd.contract import policy_pb2_grpc  # noqa: E402
from policyd.contract import resources_pb2 as rpb  # noqa: E402
from policyd.resources import kinds as ome  # noqa: E402

GOAL_RATIO, GOAL_RSS_MB = 2.0, 300.0
CSR, CBM = ome.CLUSTER_SERVING_RUNTIME, ome.CLUSTER_BASE_MODEL
PAGE = 500
CREATE_THREADS = 8
ARCHITECTURE = "PolicydBenchForCausalLM"  # no runtime of the synthetic catalog serves it
MODEL = "bench-sync-model"
APPLIED = "bench-sync-apply-"  # the runtimes of the apply rounds, by number
SERVING = health_pb2.HealthCheckResponse.SERVING
REPLICAS = 3


class Replica(Measured):
    """A ``policyd --cluster`` process, its log in a file; ``address`` once it serves."""

    def __init__(self, kubeconfig: Path, directory: Path, name: str) -> None:
        self.ready_file = directory / f"{name}.ready"
        self.ready_file.unlink(missing_ok=True)
        args = [sys.executable, "-m", "policyd.daemon.main", "--cluster", "--kubeconfig", str(kubeconfig)]
        args += ["--listen", "127.0.0.1:0", "--ready-file", str(self.ready_file), "--log-level", "warning"]
        self.log = directory / f"{name}.log"
        self.name = name
        self.address = ""
        self.channel: grpc.Channel | None = None
        self.started = time.monotonic()
        with self.log.open("ab") as out:
            proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT, start_new_session=True)
        super().__init__(proc)

    def wait_ready(self, timeout: float) -> tuple[float, float]:
        """Seconds from the process's start to its ready file (it serves, its watches started),
        and to gRPC health SERVING (every kind listed)."""
        deadline = self.started + timeout
        while not (self.ready_file.exists() and self.ready_file.read_text()):
            self._alive(deadline)
            time.sleep(0.01)
        announced = time.monotonic()
        self.address = self.ready_file.read_text()
        self.channel = grpc.insecure_channel(self.address)
        health = health_pb2_grpc.HealthStub(self.channel)
        while True:
            with contextlib.suppress(grpc.RpcError):
                if health.Check(health_pb2.HealthCheckRequest(), timeout=2).status == SERVING:
                    break
            self._alive(deadline)
            time.sleep(0.01)
        return announced - self.started, time.monotonic() - self.started

    def _alive(self, deadline: float) -> None:
        if self.proc.poll() is not None:
            raise SystemExit(f"{self.name} exited with {self.proc.returncode}; see {self.log}")
        if time.monotonic() > deadline:
            raise SystemExit(f"{self.name} not SERVING in time; see {self.log}")

    @property
    def policy(self) -> policy_pb2_grpc.PolicyServiceStub:
        assert self.channel is not None
        return policy_pb2_grpc.PolicyServiceStub(self.channel)

    @property
    def health(self) -> health_pb2_grpc.HealthStub:
        assert self.channel is not None
        return health_pb2_grpc.HealthStub(self.channel)

    def status(self) -> pb.GetStatusResponse:
        reply: pb.GetStatusResponse = self.policy.GetStatus(pb.GetStatusRequest(), timeout=30)
        return reply

    def kind(self, name: str) -> Any:
        return next(k for k in self.status().kinds if k.kind == name)

    def stop(self) -> None:
        if self.channel is not None:
            self.channel.close()
        super().stop()


class Seen:
    """The benchmark's own watch of ClusterServingRuntimes: when each name was first seen (monotonic)."""

    def __init__(self, custom: client.CustomObjectsApi) -> None:
        self.custom = custom
        self.first: dict[str, float] = {}
        self._stop = threading.Event()
        self._watch = watch.Watch()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        version = self.custom.list_cluster_custom_object(ome.GROUP, ome.VERSION, CSR.plural, limit=1)["metadata"][
            "resourceVersion"
        ]
        while not self._stop.is_set():
            try:
                for event in self._watch.stream(
                    self.custom.list_cluster_custom_object,
                    ome.GROUP,
                    ome.VERSION,
                    CSR.plural,
                    resource_version=version,
                    allow_watch_bookmarks=True,
                    timeout_seconds=600,
                ):
                    now = time.monotonic()
                    meta = event["object"]["metadata"]
                    version = meta["resourceVersion"]
                    if event["type"] == "ADDED" and meta["name"].startswith(APPLIED):
                        self.first.setdefault(meta["name"], now)
            except Exception:  # the watch ended or broke: resume (the benchmark's own, not measured)
                time.sleep(0.1)

    def stop(self) -> None:
        self._stop.set()
        self._watch.stop()


def model() -> dict[str, Any]:
    return {
        "apiVersion": ome.API_VERSION,
        "kind": CBM.name,
        "metadata": {"name": MODEL},
        "spec": {
            "modelFormat": {"name": "safetensors", "version": "1.0.0"},
            "modelFramework": {"name": "transformers", "version": "4.45.0"},
            "modelArchitecture": ARCHITECTURE,
            "modelParameterSize": "3.21B",
            "storage": {"storageUri": f"hf://bench/{MODEL}", "path": f"/raid/models/{MODEL}"},
        },
    }


def applied_runtime(i: int) -> dict[str, Any]:
    """The i-th runtime of the apply rounds: it outranks every earlier one (priority i + 1)."""
    entry = {
        "modelFormat": {"name": "safetensors", "version": "1.0.0"},
        "modelFramework": {"name": "transformers", "version": "4.45.0"},
        "modelArchitecture": ARCHITECTURE,
        "autoSelect": True,
        "priority": i + 1,
    }
    runner = {
        "name": "ome-container",
        "image": "docker.io/lmsysorg/sglang:v0.5.5.post3-cu129-amd64",
        "command": ["python3", "-m", "sglang.launch_server"],
        "args": ["--host=0.0.0.0", "--port=8080", "--model-path=$(MODEL_PATH)", "--tp-size=1"],
        "ports": [{"containerPort": 8080, "name": "http1", "protocol": "TCP"}],
        "resources": {
            "requests": {"cpu": "10", "memory": "30Gi", "nvidia.com/gpu": "1"},
            "limits": {"cpu": "10", "memory": "30Gi", "nvidia.com/gpu": "1"},
        },
    }
    return {
        "apiVersion": ome.API_VERSION,
        "kind": CSR.name,
        "metadata": {"name": f"{APPLIED}{i:04d}"},
        "spec": {
            "supportedModelFormats": [entry],
            "modelSizeRange": {"min": "1B", "max": "10B"},
            "engineConfig": {"runner": runner},
        },
    }


def select_request() -> pb.SelectRequest:
    isvc = {
        "apiVersion": ome.API_VERSION,
        "kind": ome.INFERENCE_SERVICE.name,
        "metadata": {"name": "bench-sync", "namespace": "bench-sync"},
        "spec": {"model": {"name": MODEL}, "engine": {"minReplicas": 1, "maxReplicas": 1}},
    }
    return pb.SelectRequest(inference_service=rpb.InferenceServiceInput(manifest=json.dumps(isvc)))


def synthetic_runtimes(n: int) -> list[dict[str, Any]]:
    """The synthetic catalog at size n, every runtime a ClusterServingRuntime (a team's copy,
    a ServingRuntime there, too), without kubectl's last-applied annotation. The OME catalog has
    a few names twice (in two files): a later one is renamed, with its number."""
    found = []
    names: set[str] = set()
    for i, doc in enumerate(synthetic.runtimes(n)):
        doc = copy.deepcopy(doc)
        doc["kind"] = CSR.name
        doc["apiVersion"] = ome.API_VERSION
        meta = doc["metadata"]
        meta.pop("namespace", None)
        if meta["name"] in names:
            meta["name"] = f"{meta['name']}-n{i}"
        names.add(meta["name"])
        annotations = meta.get("annotations") or {}
        annotations.pop("kubectl.kubernetes.io/last-applied-configuration", None)
        if annotations:
            meta["annotations"] = annotations
        else:
            meta.pop("annotations", None)
        found.append(doc)
    return found


def nearest_rank(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def wait_for(check: Callable[[], bool], timeout: float, what: str, pause: float = 0.1) -> float:
    started = time.monotonic()
    while not check():
        if time.monotonic() - started > timeout:
            raise SystemExit(f"not within {timeout}s: {what}")
        time.sleep(pause)
    return time.monotonic()


def plain_list(custom: client.CustomObjectsApi) -> tuple[float, int]:
    """A paged list of every ClusterServingRuntime, as policyd's (the kubernetes client's call,
    its answer made Python objects): seconds, objects."""
    started = time.monotonic()
    token: str | None = None
    count = 0
    while True:
        page = custom.list_cluster_custom_object(ome.GROUP, ome.VERSION, CSR.plural, limit=PAGE, _continue=token)
        count += len(page["items"])
        token = page["metadata"].get("continue") or None
        if token is None:
            return time.monotonic() - started, count


def create_all(custom: client.CustomObjectsApi, docs: list[dict[str, Any]]) -> float:
    """Create ``docs`` with CREATE_THREADS client threads; seconds taken."""
    started = time.monotonic()

    def create(doc: dict[str, Any]) -> None:
        reply = custom.create_cluster_custom_object(ome.GROUP, ome.VERSION, CSR.plural, doc, _preload_content=False)
        reply.drain_conn()  # read, the connection back in the pool

    with ThreadPoolExecutor(CREATE_THREADS) as pool:
        list(pool.map(create, docs))
    return time.monotonic() - started


def runtimes_seen(replica: Replica) -> int:
    kind = replica.kind(CSR.name)
    return int(kind.objects + kind.refused)


def watch_requests(api: client.ApiClient) -> int:
    """WATCH requests the API server has open on ome.io resources (its own metric)."""
    reply = api.call_api("GET", f"{api.configuration.host}/metrics")
    reply.read()
    text = reply.data.decode()
    pattern = re.compile(r"^apiserver_longrunning_requests\{([^}]*)\} (\S+)$", re.M)
    total = 0.0
    for labels, value in pattern.findall(text):
        if 'verb="WATCH"' in labels and 'group="ome.io"' in labels:
            total += float(value)
    return int(total)


def apply_round(
    custom: client.CustomObjectsApi,
    replicas: list[Replica],
    seen: Seen,
    first: int,
    n: int,
    also: tuple[Replica, ...] = (),
) -> dict[str, list[float]]:
    """n applies, numbered from ``first``: their latencies, and the empty RPCs beside them; each
    replica's own latencies under "@name" (``also`` are asked too, but left out of the first and
    the last)."""
    request = select_request()
    out: dict[str, list[float]] = {
        k: [] for k in ("last", "first", "create", "watch", "empty", "watch_from_call", "last_from_call")
    }
    asked = [*replicas, *also]
    for replica in asked:
        out[f"@{replica.name}"] = []
    checks = [r.health for r in replicas]
    stubs = [r.policy for r in asked]
    pool = ThreadPoolExecutor(len(stubs))  # each replica asked on a thread of its own, all at once
    try:
        for i in range(first, first + n):
            apply_once(custom, replicas, asked, seen, checks, stubs, pool, request, i, out)
    finally:
        pool.shutdown()
    return out


def ranked_first(
    stub: policy_pb2_grpc.PolicyServiceStub, request: pb.SelectRequest, name: str, deadline: float
) -> float:
    """Ask until the replica ranks ``name`` first; when it did (monotonic)."""
    while True:
        answer = stub.Select(request, timeout=30)
        if answer.ranking and answer.ranking[0].name == name:
            return time.monotonic()
        if time.monotonic() > deadline:
            raise SystemExit(f"{name}: not ranked first within 60 s")


def apply_once(
    custom: client.CustomObjectsApi,
    replicas: list[Replica],
    asked: list[Replica],
    seen: Seen,
    checks: list[health_pb2_grpc.HealthStub],
    stubs: list[policy_pb2_grpc.PolicyServiceStub],
    pool: ThreadPoolExecutor,
    request: pb.SelectRequest,
    i: int,
    out: dict[str, list[float]],
) -> None:
    """One create, timed until every replica in ``asked`` ranks it first (each asked on a thread of
    its own), then an empty RPC on each of ``replicas``."""
    doc = applied_runtime(i)
    name = doc["metadata"]["name"]
    called = time.monotonic()
    reply = custom.create_cluster_custom_object(ome.GROUP, ome.VERSION, CSR.plural, doc, _preload_content=False)
    reply.drain_conn()  # read, the connection back in the pool
    created = time.monotonic()
    shown = list(pool.map(partial(ranked_first, request=request, name=name, deadline=created + 60), stubs))
    for j, replica in enumerate(asked):
        out[f"@{replica.name}"].append(shown[j] - created)
    measured = [shown[j] for j in range(len(replicas))]
    out["last"].append(max(measured) - created)
    out["first"].append(min(measured) - created)
    out["create"].append(created - called)
    waited = time.monotonic() + 5
    while name not in seen.first and time.monotonic() < waited:
        time.sleep(0.005)
    if name in seen.first:
        out["watch"].append(seen.first[name] - created)
        out["watch_from_call"].append(seen.first[name] - called)
        out["last_from_call"].append(max(measured) - called)
    for check in checks:
        started = time.perf_counter()
        check.Check(health_pb2.HealthCheckRequest(), timeout=10)
        out["empty"].append(time.perf_counter() - started)


def report_round(label: str, got: dict[str, list[float]], figures: dict[str, float], key: str) -> None:
    last50, last99 = statistics.median(got["last"]), nearest_rank(got["last"], 0.99)
    empty = statistics.median(got["empty"])
    figures[f"{key}_p50_ms"], figures[f"{key}_p99_ms"] = last50 * 1e3, last99 * 1e3
    figures[f"{key}_first_p50_ms"] = statistics.median(got["first"]) * 1e3
    figures[f"{key}_create_p50_ms"] = statistics.median(got["create"]) * 1e3
    figures[f"{key}_empty_rpc_p50_ms"] = empty * 1e3
    figures[f"{key}_p50_over_empty"] = last50 / empty
    watch50 = statistics.median(got["watch"]) if got["watch"] else float("nan")
    figures[f"{key}_plain_watch_p50_ms"] = watch50 * 1e3
    create50 = statistics.median(got["create"])
    figures[f"{key}_p50_over_create"] = last50 / create50
    from_call = statistics.median(got["last_from_call"]) / statistics.median(got["watch_from_call"])
    figures[f"{key}_from_call_over_plain_watch"] = from_call
    n = len(got["last"])
    print(
        f"apply ({label}, {n} creates, load average {os.getloadavg()[0]:.1f}): from the create's return "
        f"to the last of {REPLICAS} replicas ranking "
        f"the new runtime first: p50 {last50 * 1e3:.1f} ms, p99 {last99 * 1e3:.1f} ms (the first replica: p50 "
        f"{figures[f'{key}_first_p50_ms']:.1f} ms)\n"
        f"  the create itself p50 {figures[f'{key}_create_p50_ms']:.1f} ms; a plain watch saw the object "
        f"p50 {watch50 * 1e3:.1f} ms after the create's return; an empty RPC (health Check) on the replicas "
        f"p50 {empty * 1e3:.2f} ms\n"
        f"  the apply's p50 is {last50 / empty:.1f}x the empty RPC, {last50 / create50:.2f}x the create; "
        f"from the create's call, the last replica's p50 is {from_call:.2f}x the plain watch's",
        flush=True,
    )
    each = {k[1:]: statistics.median(v) for k, v in got.items() if k.startswith("@")}
    for name, p50 in each.items():
        figures[f"{key}_p50_ms_{name}"] = p50 * 1e3
    print("  each replica's p50: " + ", ".join(f"{n} {v * 1e3:.1f} ms" for n, v in each.items()))


def measure(args: argparse.Namespace, directory: Path) -> dict[str, float]:
    kubeconfig = directory / "kubeconfig"
    figures: dict[str, float] = {}
    configuration = client.Configuration()
    config.load_kube_config(str(kubeconfig), client_configuration=configuration)
    configuration.connection_pool_maxsize = 2 * CREATE_THREADS
    api = client.ApiClient(configuration)
    custom = client.CustomObjectsApi(api)
    custom.create_cluster_custom_object(ome.GROUP, ome.VERSION, CBM.plural, model())
    custom.create_cluster_custom_object(ome.GROUP, ome.VERSION, CSR.plural, applied_runtime(0))
    applied = 1

    with contextlib.ExitStack() as stack:
        seen = Seen(custom)
        stack.callback(seen.stop)
        replicas: list[Replica] = []
        stack.callback(lambda: [r.stop() for r in replicas])
        for i in range(REPLICAS):
            replicas.append(Replica(kubeconfig, directory, f"replica-{i}"))
        for replica in replicas:
            replica.wait_ready(120)
        born = time.monotonic()
        print(f"{REPLICAS} replicas of policyd --cluster SERVING", flush=True)

        # (1) apply to all replicas, on a small catalog
        got = apply_round(custom, replicas, seen, applied, args.applies)
        applied += args.applies
        report_round("cluster of a few objects", got, figures, "apply")

        # (2) start-to-ready at each size, the running replicas following by their watches
        sizes = sorted(args.sizes)
        docs = synthetic_runtimes(sizes[-1])
        made = 0
        base = applied  # the apply rounds' runtimes are there too
        newest: Replica | None = None
        for size in sizes:
            create_s = create_all(custom, docs[made:size])
            print(
                f"\n{size - made} ClusterServingRuntimes created ({CREATE_THREADS} threads) in {create_s:.1f} s "
                f"({(size - made) / create_s:.0f}/s); the cluster holds {size + base}",
                flush=True,
            )
            created_at = time.monotonic()
            made = size
            total = size + base
            caught = wait_for(
                lambda total=total: all(runtimes_seen(r) == total for r in replicas),
                timeout=1800,
                what=f"every replica holding {total} runtimes",
                pause=0.2,
            )
            figures[f"follow_lag_s@{size}"] = caught - created_at
            print(
                f"the {REPLICAS} replicas held all {total} by their watches "
                f"{caught - created_at:.1f} s after the last create"
            )
            time.sleep(2)  # the replicas' last work done

            list_before, listed = plain_list(custom)
            newest = Replica(kubeconfig, directory, f"new-{size}")
            stack.callback(newest.stop)
            announced, ready = newest.wait_ready(1800)
            list_after, _ = plain_list(custom)
            plain = (list_before + list_after) / 2
            held = runtimes_seen(newest)
            if listed != total or held != total:
                raise SystemExit(f"at {size}: listed {listed}, the new replica holds {held}, expected {total}")
            sync = ready - announced
            figures[f"plain_list_s@{size}"] = plain
            figures[f"start_to_ready_s@{size}"] = ready
            figures[f"start_s@{size}"] = announced
            figures[f"ready_over_list@{size}"] = ready / plain
            figures[f"sync_over_list@{size}"] = sync / plain
            verdict = "met" if ready / plain <= GOAL_RATIO else "NOT met"
            print(
                f"start-to-ready at {total} ClusterServingRuntimes (load average {os.getloadavg()[0]:.1f}):\n"
                f"  (a) a plain paged list of them (limit {PAGE}): {list_before:.2f} s before, {list_after:.2f} s "
                f"after (b); mean {plain:.2f} s\n"
                f"  (b) a new replica from its process start to health SERVING: {ready:.2f} s "
                f"(to its ready file, imports and rules: {announced:.2f} s; then to SERVING, the sync: "
                f"{sync:.2f} s)\n"
                f"  b / a = {ready / plain:.2f}x (goal <= {GOAL_RATIO:g}x: {verdict}); sync / a = {sync / plain:.2f}x",
                flush=True,
            )
            if size != sizes[-1]:
                replicas_rss = ", ".join(f"{r.rss_mb()[0]:.0f}" for r in replicas)
                print(
                    f"  RSS at {total}: the new replica {newest_rss(newest)}; the watching replicas {replicas_rss} MB"
                )
                newest.stop()

        # (3) RSS at the largest size, settled
        assert newest is not None
        time.sleep(5)
        total = sizes[-1] + base
        print(f"\nRSS at {total} runtimes, settled (goal <= {GOAL_RSS_MB:g} MB):", flush=True)
        everyone = [*replicas, newest]
        for replica in everyone:
            used = replica.cpu_seconds()
            rss, peak = replica.rss_mb()
            key = "watched" if replica in replicas else "listed"
            figures[f"rss_mb_{replica.name}"], figures[f"peak_rss_mb_{replica.name}"] = rss, peak
            how = "followed the creates by watch events" if key == "watched" else "started at this size: listed"
            print(
                f"  {replica.name} ({how}): RSS {rss:.0f} MB, peak {peak:.0f} MB: "
                f"{'met' if rss <= GOAL_RSS_MB else 'NOT met'}; CPU so far {used:.1f} s"
            )

        # (4) lists and watches per replica
        print("\nlists and watches the API server was asked for, per replica (six kinds):", flush=True)
        for replica in everyone:
            kinds = replica.status().kinds
            lists, watches = sum(k.lists for k in kinds), sum(k.watches for k in kinds)
            figures[f"lists_{replica.name}"], figures[f"watches_{replica.name}"] = lists, watches
            life = time.monotonic() - (born if replica in replicas else newest.started)
            print(f"  {replica.name}: {lists} lists, {watches} watches over its {life:.0f} s")
        figures["apiserver_ome_watches_open"] = watch_requests(api)
        print(
            f"  the API server's open WATCH requests on ome.io: {figures['apiserver_ome_watches_open']:.0f} "
            f"({len(everyone)} replicas x 6 kinds, and the benchmark's own watch = {len(everyone) * 6 + 1})",
            flush=True,
        )

        # (1 again) apply at the largest size
        if args.late_applies:
            print()
            got = apply_round(custom, replicas, seen, applied, args.late_applies, also=(newest,))
            applied += args.late_applies
            report_round(f"cluster of {total + args.late_applies} runtimes", got, figures, "apply_large")
    return figures


def newest_rss(replica: Replica) -> str:
    with contextlib.suppress(OSError):
        rss, peak = replica.rss_mb()
        return f"{rss:.0f} MB (peak {peak:.0f} MB)"
    return "(stopped)"


def sizes_list(text: str) -> list[int]:
    return [int(s.replace("_", "")) for s in text.split(",") if s]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", type=sizes_list, default=[1000, 20000], help="ClusterServingRuntimes (1000,20000)")
    p.add_argument("--applies", type=int, default=100, help="creates timed on a small catalog (%(default)s)")
    p.add_argument("--late-applies", type=int, default=20, help="creates timed at the largest size (%(default)s)")
    p.add_argument("--quick", action="store_true", help="--sizes 200,1000 --applies 20 --late-applies 10")
    p.add_argument("--keep", type=Path, help="the control plane's directory, kept afterwards")
    args = p.parse_args()
    if args.quick:
        args.sizes, args.applies, args.late_applies = [200, 1000], 20, 10
    started, load = time.monotonic(), os.getloadavg()
    with control_plane(args.keep, "policyd-cluster-sync-") as directory:
        figures = measure(args, directory)
    print(
        f"\nrun took {time.monotonic() - started:.0f} s; load average before: {load[0]:.1f}, after: "
        f"{os.getloadavg()[0]:.1f} ({os.cpu_count()} cores)"
    )
    print(json.dumps({k: round(v, 3) for k, v in figures.items()}))


if __name__ == "__main__":
    main()

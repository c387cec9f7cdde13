"""Decision cost against catalog size: the OME catalog and synthetic catalogs of 200, 2,000 and
20,000 runtimes (tests/testkit/synthetic.py documents the recipe), each figure as a range over
``--runs`` runs, each ratio taken against an empty RPC (grpc health Check) on the same daemon in
the same run.

    python benchmarks/scale.py [--sizes ome,200,2000,20000] [--runs 3] [--seconds 2] [--processes 2,4]

Per run and size, a fresh daemon (``--decision-cache-mb 0`` for the decision figures, so every
call is decided; what is memoised below the decision cache stays warm, as in a daemon that has
served for a while) on a loopback socket:

- start: from process start until it serves, the catalog loaded from its directory;
- Select, Explain: p50 over a pool of InferenceServices (models of the catalog x the shapes of
  synthetic.isvc_shapes), each call under a new name (requests built beforehand); Explain also
  per runtime in scope, beyond an empty RPC made just before it; Explain in its default (basic)
  view and in the full one, which also carries the reasons each group combined (about twice
  the bytes);
- ApplyObjects / DeleteObjects of one runtime: p50, and p50 of each ÷ an empty RPC made just
  before it;
- throughput: distinct Selects (a new name each, built beforehand) from 4 client threads,
  each on its own connection, ÷ empty RPCs on the same connections; from one process with the
  decision cache off and on, and with it off from each count of ``--processes`` (default: as
  many as the cores, which policyd pins one to a core, and twice as many, which it leaves to
  the kernel) — the daemon's answer to a multi-core machine (policyd/daemon/workers.py):
  first with each connection on the shared port (the process the kernel hashes it to), then
  "balanced", each connection's calls spread over the processes' own ports (GetStatus
  endpoints, gRPC round_robin), as ``policyctl --address a,b`` does;
- reload: a rules file edited while a client calls Select: seconds until the new revision
  serves, and failed calls;
- RSS: of the one-process daemon at the end, and of each --processes daemon (all its processes);
- with 200 and 20,000 among the sizes: Select, Apply and Delete at 20,000 ÷ at 200, run by run,
  each figure as a ratio to its own run's empty RPC (the sizes run minutes apart, and the
  machine's speed wanders in between), and as the plain ratio of times.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache, partial
from pathlib import Path
from typing import Any

import grpc
import yaml
from grpc_health.v1 import health_pb2, health_pb2_grpc

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from testkit import synthetic  # noqa: E402
from testkit.shared import CATALOG  # noqa: E402

from policyd.clients.channels import target_of  # noqa: E402
from policyd.contract import policy_pb2 as pb  # noqa: E402
from policyd.contract import policy_pb2_grpc  # noqa: E402
from policyd.contract import resources_pb2 as rpb  # noqa: E402

CACHE = Path(tempfile.gettempdir()) / "policyd-scale-catalogs"
RECIPE = "4"  # bump when synthetic.py changes, so cached catalogs are written again
POOL_MODELS = 8
EXPLAINED = 12  # InferenceServices explained, cycled through
THREADS = 4  # client threads of the throughput figures
SLICES = 8  # windows of each kind a throughput figure alternates
CORES = os.cpu_count() or 2
NONE_CALLS = 8  # Selects of InferenceServices nothing can serve (OME's message lists every runtime)


def catalog_dir(size: str) -> Path:
    """The catalog directory for ``size`` (written once, then reused)."""
    if size == "ome":
        return CATALOG
    root = CACHE / f"{size}-r{RECIPE}"
    if not (root / "done").exists():
        shutil.rmtree(root, ignore_errors=True)
        print(f"writing the synthetic catalog of {size} runtimes to {root}", flush=True)
        dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
        runtimes = synthetic.runtimes(int(size))
        (root / "runtimes").mkdir(parents=True)
        for i, doc in enumerate(runtimes):
            (root / "runtimes" / f"{i:06d}.yaml").write_text(yaml.dump(doc, Dumper=dumper, sort_keys=False))
        (root / "done").write_text(RECIPE)
    return root


def pool() -> list[dict[str, Any]]:
    """The InferenceServices a run decides: models x shapes."""
    out = []
    for model in synthetic.models(families=1, limit=POOL_MODELS):
        out.extend(synthetic.isvc_shapes(model["metadata"]["name"]))
    return out


def renamed(doc: dict[str, Any], name: str) -> rpb.InferenceServiceInput:
    doc = {**doc, "metadata": {**doc["metadata"], "name": name}}
    return rpb.InferenceServiceInput(manifest=json.dumps(doc))


def rss_mb(pid: int) -> float:
    """Resident memory of ``pid`` and its children, in MB."""
    total = 0
    pids = [pid]
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        pids += [int(c) for c in children]
    except OSError:
        pass
    for p in pids:
        for line in Path(f"/proc/{p}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1])
    return total / 1024


@cache
def _supports(option: str) -> bool:
    usage = subprocess.run([sys.executable, "-m", "policyd.daemon.main", "--help"], capture_output=True, text=True)
    return option in usage.stdout


@dataclass
class Daemon:
    address: str
    pid: int
    started: float
    rules: Path


@contextmanager
def daemon(catalog: Path, cache_mb: int, processes: int, parse_cache: Path) -> Iterator[Daemon]:
    with tempfile.TemporaryDirectory(prefix="policyd-scale-") as tmp:
        rules = Path(tmp) / "rules"
        shutil.copytree(ROOT / "rules", rules, ignore=shutil.ignore_patterns("examples"))
        ready = Path(tmp) / "ready"
        cmd = [sys.executable, "-m", "policyd.daemon.main", "--catalog", str(catalog), "--rules", str(rules)]
        cmd += ["--listen", "127.0.0.1:0", "--ready-file", str(ready), "--log-level", "error"]
        cmd += ["--decision-cache-mb", str(cache_mb)]
        if _supports("--parse-cache"):  # (not the code before it: the benchmark measures both)
            cmd += ["--parse-cache", str(parse_cache)]
        if processes > 1:
            cmd += ["--processes", str(processes)]
        began = time.perf_counter()
        # a process group of its own: --processes workers go with their supervisor, whatever happens
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            while not ready.exists() or not ready.read_text():
                if proc.poll() is not None:
                    raise SystemExit(f"policyd exited with {proc.returncode}")
                time.sleep(0.01)
            address = ready.read_text()
            with grpc.insecure_channel(address) as channel:
                health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), wait_for_ready=True)
            yield Daemon(address, proc.pid, time.perf_counter() - began, rules)
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                print(f"policyd (pid {proc.pid}) did not stop within 30 s of SIGTERM: killed", file=sys.stderr)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)  # what of its group is left


def channel(address: str) -> grpc.Channel:
    """Connections of its own (no shared subchannel), so several processes can share the load;
    ``address`` as the clients take it (comma-separated addresses: calls balanced over them)."""
    target, options = target_of(address)
    options += [("grpc.use_local_subchannel_pool", 1), ("grpc.max_receive_message_length", 1 << 30)]
    return grpc.insecure_channel(target, options=options)


def p50(call: Callable[[int], Any], n: int) -> tuple[float, list[Any]]:
    samples, replies = [], []
    for i in range(n):
        start = time.perf_counter()
        replies.append(call(i))
        samples.append(time.perf_counter() - start)
    return statistics.median(samples), replies


def beside_empty(call: Callable[[int], Any], empty: Callable[[], Any], n: int) -> list[tuple[float, float, Any]]:
    """``call(i)`` for i < n, each just after an empty RPC of its own: (its time, the empty
    RPC's, its reply) each, so a ratio of the two meets the machine as it was at the time."""
    samples = []
    for i in range(n):
        start = time.perf_counter()
        empty()
        between = time.perf_counter()
        reply = call(i)
        samples.append((time.perf_counter() - between, between - start, reply))
    return samples


def add_models(address: str, models: list[rpb.Object]) -> None:
    with channel(address) as ch:
        policy_pb2_grpc.PolicyServiceStub(ch).ApplyObjects(pb.ApplyObjectsRequest(objects=models))


def throughput(address: str, requests: list[Any], seconds: float) -> tuple[float, float]:
    """Empty RPCs and distinct Selects per second, from THREADS client threads each on a
    connection of its own: the same connections for both, so the two figures share the way the
    connections fell to the daemon's processes (SO_REUSEPORT hashes each connection to one).
    The two alternate in SLICES windows each, so both meet the machine as it is at the time
    (its speed wanders within seconds); each Select sends a request not sent before in the
    call. The requests are built beforehand: what is timed is the daemon and gRPC, not the
    benchmark."""
    channels = [channel(address) for _ in range(THREADS)]
    sent = [0] * THREADS  # Selects each thread has sent

    def empty(k: int) -> Callable[[int], Any]:
        stub, check = health_pb2_grpc.HealthStub(channels[k]), health_pb2.HealthCheckRequest()
        return lambda i: stub.Check(check)

    def select(k: int) -> Callable[[int], Any]:
        call, mine, first = policy_pb2_grpc.PolicyServiceStub(channels[k]).Select, requests[k::THREADS], sent[k]
        return lambda i: call(mine[(first + i) % len(mine)])

    try:
        window = seconds / SLICES
        empties, selects = 0.0, 0.0
        for _ in range(SLICES):
            empties += rate(empty, window)
            selects += rate(select, window, sent)
        return empties / SLICES, selects / SLICES
    finally:
        for c in channels:
            c.close()


def rate(make: Callable[[int], Callable[[int], Any]], seconds: float, calls: list[int] | None = None) -> float:
    """Calls per second of ``make(k)`` from THREADS threads, started together once each has
    called once (``make(k)(0)``, then 1, 2, ...); each thread's calls, that one included, are
    added to ``calls[k]``."""
    counts, ended = [0] * THREADS, [0.0] * THREADS
    stop = [0.0]
    ready = threading.Barrier(THREADS, action=lambda: stop.__setitem__(0, time.perf_counter() + seconds))

    def worker(k: int) -> None:
        call = make(k)
        call(0)  # connected before counting
        ready.wait()
        i = 1
        while time.perf_counter() < stop[0]:
            call(i)
            i += 1
        ended[k] = time.perf_counter()  # the last call ends past the stop: counted, and its time too
        counts[k] = i - 1
        if calls is not None:
            calls[k] += i

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(counts) / (max(ended) - (stop[0] - seconds))


@dataclass
class Run:
    figures: dict[str, float] = field(default_factory=dict)


def measure(size: str, n: int, seconds: float, processes: list[int]) -> Run:
    run = Run()
    catalog = catalog_dir(size)
    shapes = pool()
    extra_models = [rpb.Object(manifest=json.dumps(m)) for m in synthetic.models(families=1, limit=POOL_MODELS)]
    parse_cache = Path(tempfile.mkdtemp(prefix="policyd-parse-cache-"))
    with daemon(catalog, 0, 1, parse_cache) as d:
        run.figures["start, no parse cache s"] = d.started
        ch = channel(d.address)
        policy = policy_pb2_grpc.PolicyServiceStub(ch)
        health = health_pb2_grpc.HealthStub(ch)
        add_models(d.address, extra_models)
        status = policy.GetStatus(pb.GetStatusRequest())
        run.figures["runtimes"] = status.runtimes

        def ask(doc: dict[str, Any], name: str) -> Any:
            return policy.Select(pb.SelectRequest(inference_service=renamed(doc, name)))

        picks = [doc for doc in shapes if ask(doc, "probe").ranking]
        nones = [doc for doc in shapes if doc not in picks]
        explains = shapes[:: max(1, len(shapes) // EXPLAINED)][:EXPLAINED]
        run.figures["Select pool"] = len(picks)

        # each under a new name, built beforehand: what is timed is the daemon and gRPC, not the benchmark
        warm_selects, warm_explains = len(picks), len(explains)
        explains_timed = max(len(explains), n // 4)
        selects = [renamed(picks[i % len(picks)], f"s{i}") for i in range(warm_selects + n)]
        selects_none = [renamed(nones[i % len(nones)], f"n{i}") for i in range(NONE_CALLS)]
        explained = [renamed(explains[i % len(explains)], f"e{i}") for i in range(warm_explains + explains_timed)]
        select_requests = [pb.SelectRequest(inference_service=isvc) for isvc in selects + selects_none]
        explain_requests = [pb.ExplainRequest(inference_service=isvc) for isvc in explained]
        full_requests = [
            pb.ExplainRequest(
                inference_service=renamed(explains[i % len(explains)], f"f{i}"), view=pb.VERDICT_VIEW_FULL
            )
            for i in range(warm_explains + explains_timed)
        ]

        def select(i: int) -> Any:
            return policy.Select(select_requests[i])

        def select_none(i: int) -> Any:
            return policy.Select(select_requests[len(selects) + i])

        def explain(i: int) -> Any:
            return policy.Explain(explain_requests[i])

        def explain_full(i: int) -> Any:
            return policy.Explain(full_requests[i])

        for i in range(warm_selects):  # warm what is memoised below the decision cache
            select(i)
        for i in range(warm_explains):
            explain(i)
            explain_full(i)
        empty_call = partial(health.Check, health_pb2.HealthCheckRequest())
        empty, _ = p50(lambda i: empty_call(), n)
        run.figures["empty ms"] = empty * 1e3
        sel, _ = p50(lambda i: select(warm_selects + i), n)
        run.figures["Select ms"] = sel * 1e3
        run.figures["Select xempty"] = sel / empty
        none, _ = p50(select_none, NONE_CALLS)
        run.figures["Select, none selectable ms"] = none * 1e3
        # each Explain beside an empty RPC of its own: the machine's noise comes and goes within a run
        for label, ask in (("Explain", explain), ("Explain, full view,", explain_full)):
            samples = [
                (t, e, len(reply.runtimes))
                for t, e, reply in beside_empty(lambda i, ask=ask: ask(warm_explains + i), empty_call, explains_timed)
            ]
            run.figures[f"{label} ms"] = statistics.median(t for t, _, _ in samples) * 1e3
            beyond = [(t - e) / max(1, k) * 1e6 for t, e, k in samples]
            run.figures[f"{label} us/runtime"] = statistics.median(beyond)
        run.figures["in scope"] = statistics.median(k for _, _, k in samples)
        # an InferenceService of a model the daemon has not seen: nothing memoised yet
        fresh = synthetic.models(families=0, limit=len(synthetic.templates()))
        cold = []
        for i, model in enumerate(fresh[-4:]):
            doc = json.loads(json.dumps(model))
            doc["metadata"]["name"] = f"cold-{i}"
            doc["spec"]["modelParameterSize"] = f"{i + 2}B"
            policy.ApplyObjects(pb.ApplyObjectsRequest(objects=[rpb.Object(manifest=json.dumps(doc))]))
            isvc = next(synthetic.isvc_shapes(f"cold-{i}"))
            start = time.perf_counter()
            policy.Explain(pb.ExplainRequest(inference_service=renamed(isvc, "cold")))
            cold.append(time.perf_counter() - start)
        run.figures["Explain, new model ms"] = statistics.median(cold) * 1e3

        template = synthetic.templates()[0]

        def apply(i: int) -> Any:
            doc = json.loads(json.dumps(template))
            doc["metadata"]["name"] = f"bench-{i}"
            return policy.ApplyObjects(pb.ApplyObjectsRequest(objects=[rpb.Object(manifest=json.dumps(doc))]))

        def delete(i: int) -> Any:
            key = pb.ObjectKey(kind="ClusterServingRuntime", name=f"bench-{i}")
            return policy.DeleteObjects(pb.DeleteObjectsRequest(keys=[key]))

        for what, change in (("Apply", apply), ("Delete", delete)):
            timed = beside_empty(change, empty_call, n // 4)
            run.figures[f"{what} ms"] = statistics.median(t for t, _, _ in timed) * 1e3
            run.figures[f"{what} xempty"] = statistics.median(t / e for t, e, _ in timed)

        # distinct names, more than the threads call in the time
        distinct = [pb.SelectRequest(inference_service=renamed(picks[i % len(picks)], f"t{i}")) for i in range(20_000)]
        empty_rate, select_rate = throughput(d.address, distinct, seconds)
        run.figures["empty /s"] = empty_rate
        run.figures["throughput xempty (no cache)"] = select_rate / empty_rate

        # a rules reload while a client calls Select
        before = status.revisions.rules_revision
        failures, stop = [0], threading.Event()

        def caller() -> None:
            with channel(d.address) as c:
                stub = policy_pb2_grpc.PolicyServiceStub(c)
                i = 0
                while not stop.is_set():
                    try:
                        stub.Select(pb.SelectRequest(inference_service=renamed(picks[i % len(picks)], f"r{i}")))
                    except grpc.RpcError:
                        failures[0] += 1
                    i += 1

        thread = threading.Thread(target=caller)
        thread.start()
        time.sleep(0.2)
        target = d.rules / "messages.yaml"
        began = time.perf_counter()
        target.write_text(target.read_text() + "\n# edited\n")
        while policy.GetStatus(pb.GetStatusRequest()).revisions.rules_revision == before:
            if time.perf_counter() - began > 30:
                break
            time.sleep(0.01)
        run.figures["reload s"] = time.perf_counter() - began
        time.sleep(0.3)
        stop.set()
        thread.join()
        run.figures["reload failed calls"] = failures[0]
        run.figures["RSS MB"] = rss_mb(d.pid)
        ch.close()
    with daemon(catalog, 64, 1, parse_cache) as d:
        run.figures["start s"] = d.started
        add_models(d.address, extra_models)
        empty_rate, select_rate = throughput(d.address, distinct, seconds)
        run.figures["throughput xempty (cache)"] = select_rate / empty_rate
    for count in processes:
        with daemon(catalog, 0, count, parse_cache) as d:
            add_models(d.address, extra_models)  # journaled to every process
            with channel(d.address) as c:
                endpoints = ",".join(policy_pb2_grpc.PolicyServiceStub(c).GetStatus(pb.GetStatusRequest()).endpoints)
            throughput(endpoints or d.address, distinct, seconds / 4)  # each process memoises what it decides
            empty_rate, select_rate = throughput(d.address, distinct, seconds)
            run.figures[f"throughput xempty, {count} proc"] = select_rate / empty_rate
            if endpoints:  # (the code before it had none)
                empty_rate, select_rate = throughput(endpoints, distinct, seconds)
                run.figures[f"throughput xempty, {count} proc balanced"] = select_rate / empty_rate
            run.figures[f"RSS, {count} proc MB"] = rss_mb(d.pid)
    shutil.rmtree(parse_cache, ignore_errors=True)
    return run


def span(values: list[float]) -> str:
    lo, hi = min(values), max(values)
    fmt = (lambda v: f"{v:.0f}") if hi >= 100 else (lambda v: f"{v:.2f}") if hi < 10 else (lambda v: f"{v:.1f}")
    return fmt(lo) if fmt(lo) == fmt(hi) else f"{fmt(lo)}-{fmt(hi)}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="ome,200,2000,20000")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--n", type=int, default=400, help="calls per latency figure")
    parser.add_argument("--seconds", type=float, default=2.0, help="per throughput figure")
    parser.add_argument(
        "--processes",
        default=f"{CORES},{2 * CORES}",
        help="daemon processes of the last throughput figures, comma-separated (%(default)s: as many as the cores, "
        "pinned one to a core, and twice as many, left to the kernel)",
    )
    args = parser.parse_args()
    sizes = args.sizes.split(",")
    results: dict[str, list[Run]] = {size: [] for size in sizes}
    for size in sizes:
        catalog_dir(size)
    load = os.getloadavg()
    for r in range(args.runs):
        for size in sizes:
            print(f"run {r + 1}/{args.runs}: {size}", flush=True)
            results[size].append(measure(size, args.n, args.seconds, [int(p) for p in args.processes.split(",")]))
    keys = list(results[sizes[0]][0].figures)
    print(f"\nload average before: {load[0]:.1f}, after: {os.getloadavg()[0]:.1f} (2 cores)")
    print("figure".ljust(30) + "".join(s.rjust(16) for s in sizes))
    for key in keys:
        print(key.ljust(30) + "".join(span([run.figures[key] for run in results[s]]).rjust(16) for s in sizes))
    if "200" in results and "20000" in results:
        pairs = list(zip(results["200"], results["20000"], strict=True))
        # each run's figure as a ratio to its own empty RPC: the two sizes ran minutes apart
        for what in ("Select", "Apply", "Delete"):
            ratios = [big.figures[f"{what} xempty"] / small.figures[f"{what} xempty"] for small, big in pairs]
            print(f"{what + ' 20,000 / 200 (xempty)':30}{span(ratios):>16}")
            ratios = [big.figures[f"{what} ms"] / small.figures[f"{what} ms"] for small, big in pairs]
            print(f"{what + ' 20,000 / 200 (ms)':30}{span(ratios):>16}")


if __name__ == "__main__":
    main()

"""The controller at cluster scale: a simulated GPU cluster of its own (tests/cluster/up.sh: the
control plane, the scheduler, KWOK) with --nodes fake 8-GPU nodes, policyd, the renderer and
policy-controller, all measured in one run.

    python benchmarks/controller_scale.py [--n 1000] [--nodes 200] [--workers 8] [--keep DIR]

- floor: one sequential client server-side applies the N Deployments the renderer makes for the N
  InferenceServices (rendered beforehand through policyd and the renderer, into a namespace of their
  own, with the kubernetes client's dynamic client as the controller uses it), until every one is
  Available (its pod scheduled on a fake GPU node and running): the time the cluster takes just to
  store and run them; they are deleted afterwards, their pods gone before the next step;
- create: N InferenceServices naming spec 002's runtime, created at once (4 client threads), until
  every one is Ready (its Deployment Available, as OME reports it) with its pod running (watched);
  goal <= 2x the floor; the time to RuntimeReady with a Deployment is printed too;
- follow: the runtime's image changes, until all N Deployments carry it; goal <= 2x the floor;
- restart: the controller stopped and started again over the N settled InferenceServices: from
  its start to its "caught up" log line (goal <= 10 s; and the CPU it used until then), and the
  objects it wrote (goal: none: the InferenceServices', workloads' and Events' resourceVersions
  are compared);
- the controller's RSS (goal <= 300 MB) and its CPU over 10 s idle afterwards (goal: about 0).

The API server runs with its defaults (--max-requests-inflight 400, --max-mutating-requests-inflight
200, API Priority and Fairness); the kubernetes Python client has no client-side rate limit.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import grpc
from kubernetes import client, config, dynamic, watch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
os.environ.setdefault("POLICYD_SHARED", str(ROOT.parent / "shared"))

from controller.manifests import NAMED_RUNTIME, named_isvc, named_model, named_runtime  # noqa: E402
from measured import Measured  # noqa: E402
from testkit.cluster import control_plane  # noqa: E402
from testkit.shared import RULES  # noqa: E402

from policyd.clients.controller.kube import APPLIED, FIELD_MANAGER, LABEL_ISVC, WORKLOAD_KINDS  # noqa: E402
from policyd.clients.controller.reconcile import Reconciler  # noqa: E402
from policyd.clients.policyctl.conformance.daemons import serving  # noqa: E402
from policyd.clients.renderer.names import model_node_label  # noqa: E402
from policyd.contract import policy_pb2 as pb  # noqa: E402
from policyd.contract import policy_pb2_grpc, render_pb2_grpc  # noqa: E402
from policyd.contract import resources_pb2 as rpb  # noqa: E402
from policyd.resources import kinds as ome  # noqa: E402

NAMESPACE, FLOOR_NAMESPACE = "scale", "scale-floor"
GOAL_RATIO, GOAL_CATCH_UP, GOAL_RSS_MB = 2.0, 10.0, 300.0
NEW_IMAGE = "docker.io/lmsysorg/sglang:v0.5.6-bench"
ISVCS = ome.INFERENCE_SERVICE.plural


class Controller(Measured):
    """A policy-controller process, its JSON log in a file."""

    def __init__(self, kubeconfig: Path, policyd: str, renderer: str, log: Path, workers: int) -> None:
        args = [sys.executable, "-m", "policyd.clients.controller.main", "--kubeconfig", str(kubeconfig)]
        args += ["--policyd", policyd, "--renderer", renderer, "--leader-election-namespace", NAMESPACE]
        args += ["--lease-duration", "3", "--workers", str(workers)]
        self.log = log
        self.started = time.time()
        with log.open("ab") as out:
            super().__init__(subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT))

    def caught_up(self, timeout: float = 600) -> float:
        """Seconds from the process's start to its "caught up" line."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in self.log.read_text().splitlines():
                entry = json.loads(line) if line.startswith("{") else {}
                if entry.get("msg") == "caught up" and entry["time"] >= self.started:
                    return float(entry["time"]) - self.started
            if self.proc.poll() is not None:
                raise SystemExit(f"policy-controller exited {self.proc.returncode}; see {self.log}")
            time.sleep(0.2)
        raise SystemExit(f"policy-controller not caught up within {timeout}s; see {self.log}")


class Watched:
    """What a watch shows of one kind in NAMESPACE, kept up to date on a thread of its own."""

    def __init__(self, list_call: Callable[..., Any], summary: Callable[[dict[str, Any]], Any], **kwargs: Any) -> None:
        self.list_call, self.summary, self.kwargs = list_call, summary, kwargs
        self.items: dict[str, Any] = {}
        self.last_change = time.monotonic()
        self._stop = threading.Event()
        self._watch = watch.Watch()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        version = ""
        while not self._stop.is_set():
            try:
                for event in self._watch.stream(
                    self.list_call, resource_version=version, timeout_seconds=300, deserialize=False, **self.kwargs
                ):
                    obj = event["object"]
                    version = obj["metadata"]["resourceVersion"]
                    name = obj["metadata"]["name"]
                    if event["type"] == "DELETED":
                        self.items.pop(name, None)
                    else:
                        self.items[name] = self.summary(obj)
                    self.last_change = time.monotonic()
            except Exception:  # the connection broke, or the watch expired: watch again, from a listing
                version = ""
                time.sleep(0.2)

    def stop(self) -> None:
        self._stop.set()
        self._watch.stop()


def conditions_true(obj: dict[str, Any]) -> frozenset[str]:
    return frozenset(c["type"] for c in (obj.get("status") or {}).get("conditions") or [] if c.get("status") == "True")


def image(deployment: dict[str, Any]) -> tuple[str, bool]:
    """Its image, and whether it is Available."""
    available = "Available" in conditions_true(deployment)
    return str(deployment["spec"]["template"]["spec"]["containers"][0]["image"]), available


def running(pod: dict[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") == "Running"


def gpu_node(i: int, model_label: str) -> dict[str, Any]:
    """A fake node as examples/cluster/gpu-nodes.yaml's H100 ones, the model ready on it."""
    resources = {"cpu": "192", "memory": "2048Gi", "pods": "110", "nvidia.com/gpu": "8"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": f"gpu-{i:04d}",
            "annotations": {"kwok.x-k8s.io/node": "fake"},
            "labels": {"type": "kwok", "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", model_label: "Ready"},
        },
        "spec": {"taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]},
        "status": {"allocatable": resources, "capacity": resources},
    }


def add_nodes(api: client.ApiClient, n: int) -> None:
    core = client.CoreV1Api(api)
    label = model_node_label(named_model()["metadata"]["name"], None)
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda i: core.create_node(gpu_node(i, label)), range(n)))

    def all_ready() -> bool:
        nodes = core.list_node(label_selector="type=kwok").items
        return len(nodes) == n and all(
            any(c.type == "Ready" and c.status == "True" for c in node.status.conditions or []) for node in nodes
        )

    wait_for(all_ready, 300, f"{n} fake nodes Ready")


def wait_for(check: Callable[[], bool], timeout: float, what: str) -> float:
    started = time.monotonic()
    while not check():
        if time.monotonic() - started > timeout:
            raise SystemExit(f"not within {timeout}s: {what}")
        time.sleep(0.05)
    return time.monotonic()


def isvc_named(i: int) -> dict[str, Any]:
    isvc = copy.deepcopy(named_isvc())
    isvc["metadata"] = {"name": f"llama-{i:05d}", "namespace": NAMESPACE}
    isvc.pop("status", None)
    return isvc


def rendered_deployments(policyd: str, renderer: str, n: int) -> list[dict[str, Any]]:
    """The Deployments the renderer makes for the N InferenceServices, as the controller asks for them."""
    with grpc.insecure_channel(policyd) as p, grpc.insecure_channel(renderer) as r:
        policy = policy_pb2_grpc.PolicyServiceStub(p)
        objects = [rpb.Object(manifest=json.dumps(m)) for m in (named_model(), named_runtime())]
        policy.ApplyObjects(pb.ApplyObjectsRequest(objects=objects, replace=True))
        reconciler = Reconciler(policy, render_pb2_grpc.RendererServiceStub(r))
        found = []
        for i in range(n):
            outcome = reconciler.reconcile(isvc_named(i))
            (deployment,) = (w for w in outcome.workloads if w["kind"] == "Deployment")
            meta = deployment["metadata"]
            meta["namespace"] = FLOOR_NAMESPACE
            meta["labels"] = {**meta.get("labels", {}), LABEL_ISVC: f"llama-{i:05d}"}
            meta.pop("ownerReferences", None)  # no such InferenceService there
            found.append(deployment)
        policy.ApplyObjects(pb.ApplyObjectsRequest(replace=True))  # the controller fills it
        return found


def floor(api: client.ApiClient, deployments: list[dict[str, Any]]) -> float:
    resource = dynamic.DynamicClient(api).resources.get(api_version="apps/v1", kind="Deployment")
    apps = client.AppsV1Api(api)
    available = Watched(apps.list_namespaced_deployment, image, namespace=FLOOR_NAMESPACE)
    started = time.monotonic()
    for body in deployments:
        resource.server_side_apply(
            body=body,
            name=body["metadata"]["name"],
            namespace=FLOOR_NAMESPACE,
            field_manager="floor",
            force_conflicts=False,
            serialize=False,
        )
    done = wait_for(
        lambda: sum(up for _, up in available.items.values()) == len(deployments),
        1800,
        "the floor's Deployments Available",
    )
    available.stop()
    return done - started


def clear_floor(api: client.ApiClient) -> None:
    """The floor's Deployments deleted, and their pods gone (their GPUs free again)."""
    client.AppsV1Api(api).delete_collection_namespaced_deployment(FLOOR_NAMESPACE, propagation_policy="Foreground")
    core = client.CoreV1Api(api)
    wait_for(lambda: not core.list_namespaced_pod(FLOOR_NAMESPACE, limit=1).items, 600, "the floor's pods gone")


def versions(api: client.ApiClient) -> dict[tuple[str, str], Any]:
    """What the controller writes of every object in NAMESPACE: the resourceVersion of each
    InferenceService and of each Event it records; each workload's generation and applied digest
    (the cluster's own controllers write a Deployment's status and revision, and Events of their
    own, as its pods come and go)."""
    found: dict[tuple[str, str], Any] = {}
    listed = client.CustomObjectsApi(api).list_namespaced_custom_object(ome.GROUP, ome.VERSION, NAMESPACE, ISVCS)
    found.update(
        {("InferenceService", i["metadata"]["name"]): i["metadata"]["resourceVersion"] for i in listed["items"]}
    )
    resources = dynamic.DynamicClient(api).resources
    for api_version, kind in (*WORKLOAD_KINDS, ("v1", "Event")):
        with contextlib.suppress(Exception):  # a kind whose CRD is not there
            items = json.loads(
                resources.get(api_version=api_version, kind=kind).get(namespace=NAMESPACE, serialize=False).data
            )
            for item in items["items"]:
                meta = item["metadata"]
                if kind == "Event" and item.get("reportingComponent") != FIELD_MANAGER:
                    continue
                written = (
                    meta["resourceVersion"]
                    if kind == "Event"
                    else (meta.get("generation"), (meta.get("annotations") or {}).get(APPLIED))
                )
                found[(kind, meta["name"])] = written
    return found


def measure(args: argparse.Namespace, directory: Path) -> dict[str, float]:
    kubeconfig = directory / "kubeconfig"
    figures: dict[str, float] = {}
    with contextlib.ExitStack() as stack:
        policyd = stack.enter_context(
            serving("policyd.daemon.main", ["--rules", str(RULES), "--log-level", "error"], "127.0.0.1:0")
        )
        renderer = stack.enter_context(serving("policyd.clients.renderer.main", [], "unix:{tmp}/render.sock"))
        configuration = client.Configuration()
        config.load_kube_config(str(kubeconfig), client_configuration=configuration)
        configuration.connection_pool_maxsize = 16
        api = client.ApiClient(configuration)
        core, custom = client.CoreV1Api(api), client.CustomObjectsApi(api)
        for namespace in (NAMESPACE, FLOOR_NAMESPACE):
            core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace)))
        resources = dynamic.DynamicClient(api).resources
        for manifest in (named_model(), named_runtime()):
            resource = resources.get(api_version=manifest["apiVersion"], kind=manifest["kind"])
            resource.server_side_apply(body=manifest, field_manager="kubectl", force_conflicts=True)

        print(f"{args.nodes} fake GPU nodes...", flush=True)
        add_nodes(api, args.nodes)
        print(f"rendering {args.n} Deployments for the floor...", flush=True)
        deployments = rendered_deployments(policyd, renderer, args.n)
        figures["floor_s"] = floor(api, deployments)
        print(
            f"floor: {args.n} Deployments server-side applied one after the other, until Available: "
            f"{figures['floor_s']:.1f} s",
            flush=True,
        )
        clear_floor(api)

        log = directory / "controller.log"
        controller = Controller(kubeconfig, policyd, renderer, log, args.workers)
        stack.callback(lambda: controllers[-1].stop())
        controllers = [controller]
        controller.caught_up()
        isvcs = Watched(custom.list_namespaced_custom_object, conditions_true, group=ome.GROUP, version=ome.VERSION,
                        namespace=NAMESPACE, plural=ISVCS)  # fmt: skip
        apps = client.AppsV1Api(api)
        deploys = Watched(apps.list_namespaced_deployment, image, namespace=NAMESPACE, label_selector=LABEL_ISVC)
        pods = Watched(core.list_namespaced_pod, running, namespace=NAMESPACE, label_selector=LABEL_ISVC)
        stack.callback(isvcs.stop)
        stack.callback(deploys.stop)
        stack.callback(pods.stop)
        time.sleep(1)  # the watches are up

        started = time.monotonic()
        with ThreadPoolExecutor(4) as pool:
            list(
                pool.map(
                    lambda i: custom.create_namespaced_custom_object(
                        ome.GROUP, ome.VERSION, NAMESPACE, ISVCS, isvc_named(i)
                    ),
                    range(args.n),
                )
            )
        created = time.monotonic() - started
        done = wait_for(
            lambda: sum("RuntimeReady" in c for c in isvcs.items.values()) == args.n and len(deploys.items) == args.n,
            timeout=max(600, 20 * figures["floor_s"]),
            what="every InferenceService RuntimeReady with its Deployment",
        )
        figures["runtime_ready_s"] = done - started
        done = wait_for(
            lambda: sum("Ready" in c for c in isvcs.items.values()) == args.n and sum(pods.items.values()) == args.n,
            timeout=max(600, 20 * figures["floor_s"]),
            what="every InferenceService Ready with its pod running",
        )
        figures["create_s"] = done - started
        print(
            f"create: {args.n} InferenceServices (created in {created:.1f} s) RuntimeReady with their Deployments "
            f"in {figures['runtime_ready_s']:.1f} s, Ready with their pods running in {figures['create_s']:.1f} s: "
            f"{figures['create_s'] / figures['floor_s']:.2f}x the floor (goal <= {GOAL_RATIO})",
            flush=True,
        )

        wait_for(lambda: time.monotonic() - max(isvcs.last_change, deploys.last_change) > 3, 600, "settled")
        newer = named_runtime()
        newer["spec"]["engineConfig"]["runner"]["image"] = NEW_IMAGE
        started = time.monotonic()
        runtime = resources.get(api_version=newer["apiVersion"], kind=newer["kind"])
        runtime.server_side_apply(body=newer, field_manager="kubectl", force_conflicts=True)
        done = wait_for(
            lambda: [i for i, _ in deploys.items.values()].count(NEW_IMAGE) == args.n,
            timeout=max(600, 20 * figures["floor_s"]),
            what=f"every Deployment following {NAMED_RUNTIME} on its new image",
        )
        figures["follow_s"] = done - started
        print(
            f"follow: a change of {NAMED_RUNTIME} in all {args.n} Deployments in {figures['follow_s']:.1f} s: "
            f"{figures['follow_s'] / figures['floor_s']:.2f}x the floor (goal <= {GOAL_RATIO})",
            flush=True,
        )

        # settled: the rollouts done, the old pods gone, the status saying so
        last = lambda: max(isvcs.last_change, deploys.last_change, pods.last_change)  # noqa: E731
        wait_for(lambda: time.monotonic() - last() > 5, 1800, "settled")
        before = versions(api)
        controller.stop()
        controller = Controller(kubeconfig, policyd, renderer, log, args.workers)
        controllers.append(controller)
        figures["catch_up_s"] = controller.caught_up()
        # CPU seconds, as the wall time on a loaded machine is other processes' too
        figures["catch_up_cpu_s"] = controller.cpu_seconds()
        time.sleep(2)  # anything it would still write
        after = versions(api)
        figures["rewritten"] = sum(1 for key, version in before.items() if after.get(key) != version)
        figures["new_objects"] = len(after.keys() - before.keys())
        print(
            f"restart: caught up {figures['catch_up_s']:.1f} s after its start (goal <= {GOAL_CATCH_UP:g}; "
            f"{figures['catch_up_cpu_s']:.1f} s of CPU); "
            f"rewrote {figures['rewritten']:.0f} and created {figures['new_objects']:.0f} of {len(before)} objects "
            "(goal: 0)",
            flush=True,
        )

        used = controller.cpu_seconds()
        time.sleep(10)
        figures["idle_cpu_percent"] = (controller.cpu_seconds() - used) / 10 * 100
        figures["rss_mb"], figures["peak_rss_mb"] = controller.rss_mb()
        print(
            f"controller: RSS {figures['rss_mb']:.0f} MB (peak {figures['peak_rss_mb']:.0f} MB, goal <= "
            f"{GOAL_RSS_MB:g}); idle CPU {figures['idle_cpu_percent']:.1f}% of a core over 10 s",
            flush=True,
        )
    return figures


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=1000, help="InferenceServices (default %(default)s)")
    p.add_argument("--nodes", type=int, default=200, help="fake 8-GPU nodes (default %(default)s)")
    p.add_argument("--workers", type=int, default=8, help="the controller's --workers (default %(default)s)")
    p.add_argument("--keep", type=Path, help="the control plane's directory, kept afterwards")
    args = p.parse_args()
    with control_plane(args.keep, "policyd-controller-scale-") as directory:
        figures = measure(args, directory)
    print(json.dumps({k: round(v, 3) for k, v in figures.items()}))


if __name__ == "__main__":
    main()

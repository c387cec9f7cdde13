"""policy-controller: watch InferenceServices, runtimes and models; keep policyd's catalog in
sync; write RuntimeReady, events and the rendered workloads (server-side apply)."""

from __future__ import annotations

import argparse
import logging
import queue
import sys
import threading
import time
from collections.abc import Mapping
from typing import Any

import grpc

from clients import tls
from clients.controller.catalog_sync import CATALOG_KINDS, CatalogSync
from clients.controller.cluster import Cluster, Controller
from clients.controller.kube import KubernetesCluster, connect
from clients.controller.reconcile import Reconciler, RendererError
from policyd.contract import policy_pb2_grpc, render_pb2_grpc

log = logging.getLogger("policyd.controller")
WATCH_RETRY_SECONDS = 2.0
Item = tuple[str, str, Mapping[str, Any]]  # (kind, event type, object)


def _pump(cluster: Cluster, kind: str, work: queue.Queue[Item]) -> None:
    while True:  # a watch ends when the server closes it, or fails with the connection; start it again
        try:
            for event_type, obj in cluster.watch(kind):
                work.put((kind, event_type, obj))
        except Exception:  # the API server's errors must not end the controller's watch
            log.exception("watch failed; retrying", extra={"kind": kind})
            time.sleep(WATCH_RETRY_SECONDS)


def run(controller: Controller, cluster: Cluster) -> None:
    """One worker applies events in order, so the catalog is current before InferenceServices are decided."""
    work: queue.Queue[Item] = queue.Queue()
    for kind in (*CATALOG_KINDS, "InferenceService"):
        threading.Thread(target=_pump, args=(cluster, kind, work), name=f"watch:{kind}", daemon=True).start()
    while True:
        kind, event_type, obj = work.get()
        try:
            if kind == "InferenceService":
                controller.on_isvc_event(event_type, obj)
            else:
                controller.on_catalog_event(event_type, obj)
                if work.empty():
                    controller.resync()
        except grpc.RpcError as err:
            log.error("policyd call failed", extra={"kind": kind, "error": f"{err.code().name}: {err.details()}"})
        except RendererError as err:
            log.error("renderer call failed; the workloads wait for it", extra={"kind": kind, "error": str(err)})


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="policy-controller", description=__doc__)
    p.add_argument("--policyd", default="127.0.0.1:50051", help="policyd address")
    p.add_argument("--renderer", default="unix:/tmp/policy-render.sock", help="renderer sidecar address")
    p.add_argument("--kubeconfig", help="kubeconfig file (default: in-cluster configuration)")
    tls.add_flags(p)  # for both connections, when they are host:port
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO)
    cluster = KubernetesCluster(connect(args.kubeconfig))
    connection = tls.of(args)
    try:
        policy = policy_pb2_grpc.PolicyServiceStub(connection.channel(args.policyd))
        renderer = render_pb2_grpc.RendererServiceStub(connection.channel(args.renderer))
    except tls.TlsFlagError as err:
        print(f"policy-controller: {err}", file=sys.stderr)
        return 2
    run(Controller(cluster, CatalogSync(policy), Reconciler(policy, renderer)), cluster)
    return 0


if __name__ == "__main__":
    sys.exit(main())

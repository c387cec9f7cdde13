"""policy-render: the renderer sidecar, serving RendererService on a unix socket or TCP."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from concurrent import futures
from pathlib import Path

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from clients.renderer.service import RendererServicer
from policyd.contract import render_pb2, render_pb2_grpc


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="policy-render", description=__doc__)
    p.add_argument("--listen", default="unix:/tmp/policy-render.sock", help="unix:PATH or host:port")
    p.add_argument("--ready-file", type=Path, help="write the bound address here once serving")
    args = p.parse_args(argv)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    render_pb2_grpc.add_RendererServiceServicer_to_server(RendererServicer(), server)
    health_servicer = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    for name in ("", render_pb2.DESCRIPTOR.services_by_name["RendererService"].full_name):
        health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    port = server.add_insecure_port(args.listen)
    if port == 0 and not args.listen.startswith("unix:"):
        print(f"policy-render: cannot listen on {args.listen}", file=sys.stderr)
        return 2
    server.start()
    address = args.listen if args.listen.startswith("unix:") else f"{args.listen.rsplit(':', 1)[0]}:{port}"
    if args.ready_file:
        args.ready_file.write_text(address)
    stopping = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stopping.set())
    stopping.wait()
    server.stop(grace=2).wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The life of a gRPC server process (policyd and the renderer sidecar): health,
binding to host:port or a unix socket, announcing readiness, stopping on a signal."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterable
from pathlib import Path

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc


def add_health(server: grpc.Server, services: Iterable[str]) -> health.HealthServicer:
    """Standard gRPC health checking, SERVING for the server ("") and each service."""
    servicer = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
    for name in ("", *services):
        servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    return servicer


def bind(server: grpc.Server, listen: str) -> str | None:
    """The address actually bound (the real port for ``:0``), or None when binding failed."""
    try:
        port = server.add_insecure_port(listen)
    except RuntimeError:
        return None
    if listen.startswith("unix:"):
        return listen
    return f"{listen.rsplit(':', 1)[0]}:{port}" if port else None


def announce(address: str, ready_file: Path | None) -> None:
    """Write the address for whoever waits on us (tests, the CLI, process supervisors)."""
    if ready_file is not None:
        # written aside, then renamed: a waiter that sees the file sees the whole address
        partial = ready_file.with_name(ready_file.name + ".partial")
        partial.write_text(address)
        os.replace(partial, ready_file)


def wait_for_stop_signal(server: grpc.Server, health_servicer: health.HealthServicer) -> None:
    """Serve until SIGTERM or SIGINT, then report NOT_SERVING so clients drain, and stop
    after in-flight calls finish (up to two seconds)."""
    stopping = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stopping.set())
    stopping.wait()
    health_servicer.enter_graceful_shutdown()
    server.stop(grace=2).wait()

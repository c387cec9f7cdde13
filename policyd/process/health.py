"""gRPC health checking (grpc_health's servicer) without its deadlock at shutdown.

grpc_health sends each Watch stream its status while holding the servicer's lock. Sending
waits until gRPC's server thread has written the message, and that same thread runs the close
callback of a Watch stream that ends meanwhile, which takes the lock: neither goes on. A daemon
whose balanced clients (round_robin with healthCheckConfig, clients/channels.py) dropped their
streams as it got SIGTERM hung in ``enter_graceful_shutdown`` and never stopped (seen under
``policyd --processes``: workers left running). Here statuses change under the lock and go out
after it is let go, one sender at a time, so Watch streams still see them in order."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2

Send = Callable[[Any], None]
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING
UNKNOWN = health_pb2.HealthCheckResponse.SERVICE_UNKNOWN


class HealthServicer(health.HealthServicer):  # type: ignore[misc]  # grpc_health is untyped
    def __init__(self) -> None:
        super().__init__()
        self._gracefully_shutting_down: bool = False  # (the base class's, typed)
        self._sending = threading.Lock()  # statuses go out in the order they were set

    def Watch(  # gRPC's method name
        self, request: health_pb2.HealthCheckRequest, context: grpc.ServicerContext, send_response_callback: Send
    ) -> None:
        service = request.service
        with self._sending:
            with self._lock:
                status = self._server_status.get(service, UNKNOWN)
                self._send_response_callbacks.setdefault(service, set()).add(send_response_callback)
                context.add_callback(self._on_close_callback(send_response_callback, service))
            send_response_callback(health_pb2.HealthCheckResponse(status=status))

    def set(self, service: str, status: int) -> None:
        self._send(service, status)

    def enter_graceful_shutdown(self) -> None:
        """Every service NOT_SERVING, for good (later ``set`` calls change nothing)."""
        self._send(None, NOT_SERVING)

    def _send(self, service: str | None, status: int) -> None:
        """``service`` (every one: None, at shutdown) at ``status``, told to its Watch streams."""
        with self._sending:
            with self._lock:
                if self._gracefully_shutting_down:
                    return
                services = list(self._server_status) if service is None else [service]
                self._server_status.update(dict.fromkeys(services, status))
                self._gracefully_shutting_down = service is None
                sends = [callback for name in services for callback in self._send_response_callbacks.get(name, ())]
            for callback in sends:
                callback(health_pb2.HealthCheckResponse(status=status))

"""A daemon stops after SIGTERM also when clients drop their health Watch streams as it does:
policyd's health servicer (policyd/process/health.py) tells Watch streams a new status without
holding the lock a closing stream's callback takes. gRPC runs that callback on its server
thread, and a send waits for that thread; grpc_health's own servicer sent under the lock and a
daemon hung in enter_graceful_shutdown for good."""

from __future__ import annotations

import threading
from collections.abc import Callable

from grpc_health.v1 import health_pb2

from policyd.process.health import HealthServicer

NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING
WATCH = health_pb2.HealthCheckRequest(service="")


class _Context:
    """A Watch call's context: the callbacks gRPC runs when the stream ends."""

    def __init__(self) -> None:
        self.callbacks: list[Callable[[], None]] = []

    def add_callback(self, callback: Callable[[], None]) -> bool:
        self.callbacks.append(callback)
        return True


def test_a_watch_stream_closing_while_shutdown_tells_the_others_lets_the_shutdown_finish() -> None:
    servicer = HealthServicer()
    servicer.set("", health_pb2.HealthCheckResponse.SERVING)
    dropped, watching = _Context(), _Context()
    servicer.Watch(WATCH, dropped, lambda response: None)
    closed = threading.Event()
    closed_before_the_send_ended: list[bool] = []

    def server_thread_ends_the_dropped_stream() -> None:
        for callback in dropped.callbacks:
            callback()
        closed.set()

    def send(response: health_pb2.HealthCheckResponse) -> None:
        # as gRPC's send: it returns once the server thread has got on, which here means
        # running the dropped stream's close callback first
        if response.status == NOT_SERVING:
            threading.Thread(target=server_thread_ends_the_dropped_stream, daemon=True).start()
            closed_before_the_send_ended.append(closed.wait(10))

    servicer.Watch(WATCH, watching, send)
    servicer.enter_graceful_shutdown()
    assert closed_before_the_send_ended == [True]
    assert servicer.Check(WATCH, None).status == NOT_SERVING


def test_statuses_reach_a_watch_stream_in_the_order_they_were_set() -> None:
    servicer = HealthServicer()
    seen: list[int] = []
    servicer.Watch(WATCH, _Context(), lambda response: seen.append(response.status))
    servicer.set("", health_pb2.HealthCheckResponse.NOT_SERVING)
    servicer.set("", health_pb2.HealthCheckResponse.SERVING)
    servicer.enter_graceful_shutdown()
    servicer.set("", health_pb2.HealthCheckResponse.SERVING)  # after shutdown: changes nothing
    assert seen == [
        health_pb2.HealthCheckResponse.SERVING,  # the server's, as a new servicer has it
        health_pb2.HealthCheckResponse.NOT_SERVING,
        health_pb2.HealthCheckResponse.SERVING,
        NOT_SERVING,
    ]

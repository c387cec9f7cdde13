"""A client's channel reaches a policyd that comes back within a couple of seconds, also when its
last connection attempt hangs (a vanished pod's IP, a stopped process): gRPC alone waits 20 s
for such an attempt, and backs off up to two minutes between attempts."""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent import futures

import grpc
import pytest
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from testkit.relay import Relay

from policyd.clients import channels

# seconds: the options allow about 2 (an attempt's deadline), a loaded machine more; gRPC's defaults 20
BACK_WITHIN = 10.0


@pytest.fixture
def health_server() -> Iterator[int]:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    health_pb2_grpc.add_HealthServicer_to_server(health.HealthServicer(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield port
    finally:
        server.stop(None).wait()


def answers(stub: health_pb2_grpc.HealthStub) -> bool:
    try:
        stub.Check(health_pb2.HealthCheckRequest(), timeout=0.5)
    except grpc.RpcError:
        return False
    return True


@pytest.mark.parametrize("form", ["{}", "dns:///{}", "{0},{0}"], ids=["host-port", "dns", "list"])
def test_a_server_back_after_a_hanging_connection_attempt_is_reached_within_seconds(
    health_server: int, form: str
) -> None:
    with Relay(("127.0.0.1", health_server)) as relay:
        channel = channels.Connection(timeout=None).channel(form.format(relay.address), diagnosed=False)
        with channel:
            stub = health_pb2_grpc.HealthStub(channel)
            assert not answers(stub)  # its connection attempt is held: no answer
            relay.wait_held(1)
            relay.forward()
            back = time.monotonic()
            while not answers(stub):
                assert time.monotonic() - back < BACK_WITHIN, "the channel did not reconnect in time"
                time.sleep(0.05)
            assert time.monotonic() - back < BACK_WITHIN

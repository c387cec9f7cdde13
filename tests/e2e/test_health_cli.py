"""policyctl health: the daemon's standard gRPC health check, without grpcurl."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from policyd.contract import policy_pb2 as pb
from policyd.contract import policy_pb2_grpc

from .support import RULES, no_traceback, policyctl, started, succeeded

SERVICE = "ome.policy.v1.PolicyService"


def test_health_of_a_serving_daemon_is_serving(daemon: str) -> None:
    for service in ([], ["--service", SERVICE]):
        result = policyctl("health", *service, address=daemon)
        succeeded(result)
        assert (result.stdout, result.stderr) == ("SERVING\n", "")


def test_health_as_json(daemon: str) -> None:
    result = policyctl("health", "-o", "json", address=daemon)
    succeeded(result)
    assert json.loads(result.stdout) == {"service": "", "status": "SERVING"}


def test_health_of_an_unknown_service_names_it(daemon: str) -> None:
    result = policyctl("health", "--service", "no.such.Service", address=daemon)
    no_traceback(result)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == f'error: policyd at {daemon} has no service "no.such.Service" to check\n'


def test_health_of_an_unreachable_daemon_is_a_clear_error() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{s.getsockname()[1]}"
    result = policyctl("health", address=address)
    no_traceback(result)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == f"error: cannot reach policyd at {address} (start it with `policyd`, or pass --address)\n"


@pytest.fixture
def stopping(tmp_path: Path) -> Iterator[str]:
    """A daemon that got SIGTERM and is draining: calls that keep arriving (refused) keep it so."""
    ready = tmp_path / "ready"
    command = [sys.executable, "-m", "policyd.daemon.main", "--rules", str(RULES), "--listen", "127.0.0.1:0"]
    command += ["--ready-file", str(ready), "--shutdown-grace", "60", "--log-level", "error"]
    with started(command, ready, stdout=subprocess.DEVNULL) as proc:
        address = ready.read_text()
        done, answered, draining = threading.Event(), threading.Event(), threading.Event()

        def keep_calling() -> None:
            with grpc.insecure_channel(address) as channel:
                stub = policy_pb2_grpc.PolicyServiceStub(channel)
                while not done.is_set():
                    try:
                        stub.GetStatus(pb.GetStatusRequest(), timeout=5)
                        answered.set()
                    except grpc.RpcError as err:
                        if isinstance(err, grpc.Call) and "shutting down" in (err.details() or ""):
                            draining.set()
                    time.sleep(0.05)  # well within the drain's quiet time: the daemon keeps draining

        caller = threading.Thread(target=keep_calling)
        caller.start()
        try:
            # a stop before any call drains at once: nothing arrived to wait for
            assert answered.wait(30), "the daemon did not answer"
            proc.send_signal(signal.SIGTERM)
            assert draining.wait(30), "the daemon did not start draining"
            yield address
        finally:
            done.set()
            caller.join()
        assert proc.wait(timeout=30) == 0


def test_health_of_a_stopping_daemon_is_not_serving_and_exit_1(stopping: str) -> None:
    result = policyctl("health", address=stopping)
    no_traceback(result)
    assert (result.returncode, result.stdout, result.stderr) == (1, "NOT_SERVING\n", "")

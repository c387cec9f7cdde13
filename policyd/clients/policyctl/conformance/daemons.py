"""Start the real daemon and renderer as subprocesses on real sockets."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

STOP_SECONDS = 60.0  # a daemon on a loaded machine may take long to stop (its watcher mid-reload)


class StartError(RuntimeError):
    pass


def wait_serving(address: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    with grpc.insecure_channel(address) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        while True:
            try:
                reply = stub.Check(health_pb2.HealthCheckRequest(), timeout=1)
                if reply.status == health_pb2.HealthCheckResponse.SERVING:
                    return
            except grpc.RpcError:
                pass
            if time.monotonic() > deadline:
                raise StartError(f"{address} is not serving after {timeout}s")
            time.sleep(0.05)


@contextmanager
def serving(module: str, args: list[str], listen: str, timeout: float = 30.0) -> Iterator[str]:
    """Run ``python -m module`` until the block ends; yields the address it serves on."""
    with tempfile.TemporaryDirectory(prefix="policyd-") as tmp:
        ready = Path(tmp) / "ready"
        listen = listen.replace("{tmp}", tmp)
        cmd = [sys.executable, "-m", module, *args, "--listen", listen, "--ready-file", str(ready)]
        # a process group of its own, so that what it started (the workers of --processes) ends with it
        proc = subprocess.Popen(
            cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True
        )
        try:
            deadline = time.monotonic() + timeout
            # the file may exist for a moment before the address is written into it
            while not (ready.exists() and ready.read_text()):
                if proc.poll() is not None:
                    raise StartError(
                        f"{module} exited with {proc.returncode}: {proc.stderr.read() if proc.stderr else ''}"
                    )
                if time.monotonic() > deadline:
                    raise StartError(f"{module} did not start within {timeout}s")
                time.sleep(0.05)
            address = ready.read_text()
            wait_serving(address, timeout)
            yield address
        finally:
            proc.terminate()
            with suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=STOP_SECONDS)
            with suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)  # still running, or what it left (none once it stopped)
            proc.wait()

"""A server that has been told to stop stops within its grace and margins even when a step of its
stopping hangs: then it writes every thread's stack to stderr and exits 1 (policyd/process/exiting.py
exit_within), rather than serve on, silent, until it is killed. A real process with a real gRPC
server, whose draining never ends, sent SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

SCRIPT = textwrap.dedent(
    """
    import sys, threading
    from pathlib import Path
    from policyd.process.exiting import exit_now
    from policyd.process.grpc_server import add_health, announce, bind, new_server, parse_listen
    from policyd.process.grpc_server import stop_signal, wait_for_stop_signal

    def a_drain_that_never_ends(grace):
        threading.Event().wait()
        return grace

    server = new_server(1)
    health = add_health(server, [])
    address = bind(server, parse_listen("127.0.0.1:0"))
    server.start()
    stopping = stop_signal()
    announce(address, Path(sys.argv[1]))
    wait_for_stop_signal(stopping, server, health, grace=0.1, drain=a_drain_that_never_ends)
    exit_now(0)
    """
)
NEVER = 120  # seconds: far past the bound (0.1 s grace + margins); reaching it is the failure


def test_a_server_whose_stopping_hangs_shows_its_stacks_and_exits_within_its_bound(tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    proc = subprocess.Popen(
        [sys.executable, "-c", SCRIPT, str(ready)], stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        while not ready.exists():
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            time.sleep(0.02)
        proc.terminate()
        _, err = proc.communicate(timeout=NEVER)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert proc.returncode == 1, err
    assert "most recent call first" in err and "a_drain_that_never_ends" in err, err

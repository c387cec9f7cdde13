"""Stopping: SIGTERM ends the daemon and the renderer cleanly and promptly."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .support import RULES


@pytest.mark.parametrize(
    ("module", "args"),
    [
        ("policyd.daemon.main", ["--rules", str(RULES), "--listen", "127.0.0.1:0"]),
        ("policyd.clients.renderer.main", ["--listen", "unix:{tmp}/render.sock"]),
    ],
)
def test_sigterm_stops_the_process_with_exit_code_zero(module: str, args: list[str], tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    cmd = [sys.executable, "-m", module, *(a.replace("{tmp}", str(tmp_path)) for a in args), "--ready-file", str(ready)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while not ready.exists():
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline, "did not start"
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
        assert "Traceback" not in (proc.stderr.read() if proc.stderr else "")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()

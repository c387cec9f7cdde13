"""A daemon that cannot start says so and claims nothing: no "rules revision serving" log line, no
"serving the last good revision", before its "cannot start" (a real policyd process, at the
default log level)."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from testkit.certs import CA

from .support import REPO, RULES, started

DAEMON = [sys.executable, "-m", "policyd.daemon.main"]


def _policyd(*args: str) -> subprocess.CompletedProcess[str]:
    """A policyd that must exit by itself; the subprocess is killed at the timeout."""
    return subprocess.run([*DAEMON, *args], capture_output=True, text=True, timeout=120, cwd=REPO)


def _messages(stderr: str) -> list[str]:
    return [json.loads(line)["msg"] for line in stderr.splitlines() if line.startswith("{")]


@pytest.fixture
def taken() -> Iterator[str]:
    """An address another process listens on."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield f"127.0.0.1:{holder.getsockname()[1]}"


def test_a_daemon_whose_port_is_taken_does_not_log_that_rules_serve(taken: str) -> None:
    result = _policyd("--rules", str(RULES), "--listen", taken)
    assert result.returncode == 2, result.stderr
    assert "rules revision serving" not in _messages(result.stderr), result.stderr
    assert result.stderr.splitlines()[-1] == f"policyd: cannot start: cannot listen on {taken}: address already in use"


def test_a_daemon_whose_key_is_not_its_certificates_does_not_log_that_rules_serve(tmp_path: Path) -> None:
    ca = CA(tmp_path / "pki")
    server, other = ca.issue("policyd", server=True), ca.issue("other", server=True)
    result = _policyd(
        "--rules", str(RULES), "--listen", "127.0.0.1:0", "--tls-cert", str(server.cert), "--tls-key", str(other.key)
    )
    assert result.returncode == 2, result.stderr
    assert "rules revision serving" not in _messages(result.stderr), result.stderr
    last = result.stderr.splitlines()[-1]
    assert last.startswith(f"policyd: cannot start: the certificate {server.cert} and key {other.key} do not load")


def test_refused_rules_that_cannot_start_do_not_claim_the_kept_revision_serves(tmp_path: Path, taken: str) -> None:
    rules, state, ready = tmp_path / "rules", tmp_path / "state", tmp_path / "ready"
    shutil.copytree(RULES, rules, ignore=shutil.ignore_patterns("examples"))
    flags = ("--rules", str(rules), "--state-dir", str(state), "--log-level", "warning")
    with started([*DAEMON, *flags, "--listen", "127.0.0.1:0", "--ready-file", str(ready)], ready):
        pass  # served once: the state directory keeps these rules
    (rules / "99-bad.yaml").write_text("rules:\n  - id: bad\n    points: 1e20\n")
    result = _policyd(*flags, "--listen", taken)
    assert result.returncode == 2, result.stderr
    assert "serving" not in result.stderr, result.stderr
    assert result.stderr.splitlines()[-1] == f"policyd: cannot start: cannot listen on {taken}: address already in use"

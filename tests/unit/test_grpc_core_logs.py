"""gRPC's C core writes log lines of its own format to stderr (`I1205 … Handshake failed …`):
every process entry point turns them off before grpc is first imported, unless the operator set
GRPC_VERBOSITY; a daemon's stderr is its own JSON lines alone, also after a failed handshake."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tomllib
from contextlib import suppress
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from testkit.certs import CA
from testkit.shared import REPO

# what each process's entry point saw of GRPC_VERBOSITY when grpc was first imported
PROBE = """
import importlib.abc, os, sys
class Seen(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "grpc":
            print(os.environ.get("GRPC_VERBOSITY"))
            sys.meta_path.remove(self)
        return None
sys.meta_path.insert(0, Seen())
import importlib
importlib.import_module(sys.argv[1])
"""


def _entry_modules() -> list[str]:
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    return sorted({target.split(":")[0] for target in scripts.values()})


def _env(**extra: str) -> dict[str, str]:
    return {**{k: v for k, v in os.environ.items() if k != "GRPC_VERBOSITY"}, **extra}


@pytest.mark.parametrize("module", _entry_modules())
def test_every_entry_point_turns_grpcs_own_log_lines_off_before_importing_grpc(module: str) -> None:
    seen = subprocess.run(
        [sys.executable, "-c", PROBE, module], cwd=REPO, env=_env(), capture_output=True, text=True, timeout=120
    )
    assert seen.returncode == 0, seen.stderr
    assert seen.stdout.splitlines()[0] == "NONE"
    chosen = subprocess.run(
        [sys.executable, "-c", PROBE, module],
        cwd=REPO,
        env=_env(GRPC_VERBOSITY="debug"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert chosen.stdout.splitlines()[0] == "debug"  # the operator's choice stands


def test_a_failed_handshake_leaves_no_line_of_grpcs_own_in_policyds_log(tmp_path: Path) -> None:
    ca = CA(tmp_path / "pki")
    server = ca.issue("localhost", server=True)
    ready, log = tmp_path / "ready", (tmp_path / "stderr").open("w")
    tls = ["--tls-cert", str(server.cert), "--tls-key", str(server.key), "--tls-client-ca", str(ca.path)]
    command = [sys.executable, "-m", "policyd.daemon.main", "--listen", "127.0.0.1:0", "--ready-file", str(ready)]
    proc = subprocess.Popen([*command, *tls], cwd=REPO, env=_env(), stderr=log, start_new_session=True)
    try:
        while not ready.exists():
            assert proc.poll() is None, (tmp_path / "stderr").read_text()
            with suppress(subprocess.TimeoutExpired):
                proc.wait(0.05)
        port = ready.read_text().rsplit(":", 1)[1]
        credentials = grpc.ssl_channel_credentials(ca.path.read_bytes())  # no client certificate
        with grpc.secure_channel(f"localhost:{port}", credentials) as channel, pytest.raises(grpc.RpcError):
            health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=10)
    finally:
        proc.terminate()
        with suppress(subprocess.TimeoutExpired):
            proc.wait(60)
        with suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    lines = (tmp_path / "stderr").read_text().splitlines()
    assert lines and all(isinstance(json.loads(line), dict) for line in lines), lines

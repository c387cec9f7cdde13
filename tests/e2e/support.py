"""What the end-to-end tests share: paths, the spec's example objects, and running policyctl."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import yaml
from testkit.llama import MODEL_NAME as MODEL_NAME
from testkit.llama import MODEL_PATH as MODEL_PATH
from testkit.llama import NAMESPACE as NAMESPACE
from testkit.llama import RUNTIME_NAME as RUNTIME_NAME
from testkit.llama import model_manifest as model_manifest
from testkit.shared import CASES as CASES
from testkit.shared import REPO as REPO
from testkit.shared import RULES as RULES
from testkit.shared import SHARED as SHARED
from testkit.shared import SPEC as SPEC
from testkit.shared import spec_manifest as spec_manifest

ROOT = REPO
RUNTIME_70B = "sglang-llama-3-3-70b"


def isvc_manifest(**spec: Any) -> dict[str, Any]:
    """The spec's InferenceService that leaves out spec.runtime, with ``spec`` fields on top."""
    doc = spec_manifest("004", "InferenceService", MODEL_NAME)
    doc["spec"].update(spec)
    return doc


def write_yaml(path: Path, *docs: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return path


def policyctl(
    *args: str,
    address: str | None = None,
    stdin: str | None = None,
    timeout: float = 60,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """``policyctl [--address A] ARGS`` as a user runs it, in a process of its own (``env`` on top
    of this one's, less the addresses and the kubeconfig a developer may have set)."""
    mine = ("POLICYD_ADDRESS", "POLICY_RENDER_ADDRESS", "KUBECONFIG")
    env = {**{k: v for k, v in os.environ.items() if k not in mine}, **(env or {})}
    cmd = [sys.executable, "-m", "policyd.clients.policyctl.main", *(["--address", address] if address else []), *args]
    return subprocess.run(cmd, cwd=ROOT, env=env, input=stdin, capture_output=True, text=True, timeout=timeout)


def succeeded(result: subprocess.CompletedProcess[str]) -> None:
    no_traceback(result)
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}"


def last_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[-1] if lines else ""


def no_traceback(result: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in result.stdout + result.stderr, result.stdout + result.stderr


STOP_SECONDS = 60  # a loaded 2-core machine can take long to stop a daemon (its watcher mid-reload)


@contextmanager
def started(command: list[Any], ready: Path, timeout: float = 60, **popen: Any) -> Iterator[subprocess.Popen[str]]:
    """A server process (stderr piped) from when it has written its ``--ready-file`` until the block ends.
    It runs in a process group of its own, killed whole at the end whatever happened (the workers
    of ``--processes`` included): no test leaves a process behind."""
    # faulthandler on: a process that does not stop is shown where it hangs (see stop)
    env = {**popen.pop("env", os.environ), "PYTHONFAULTHANDLER": "1"}
    proc = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, start_new_session=True, env=env, **popen)
    try:
        deadline = time.monotonic() + timeout
        while not ready.exists():
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline, f"{command[0]} did not start within {timeout}s"
            time.sleep(0.05)
        yield proc
    finally:
        stop(proc, str(command[2] if command[1:2] == ["-m"] else command[0]))  # the module, for python -m


STACKS = "most recent call first"  # faulthandler's heading of a thread's stack


def stop(proc: subprocess.Popen[str], name: str) -> None:
    """SIGTERM, and SIGKILL to its whole process group if it has not stopped within STOP_SECONDS.
    An AssertionError with what it printed, its threads' stacks last, when it did not stop or
    when a step of its stopping hung until exit_within ended it (it exits 1 then)."""
    stuck = late = False
    if proc.poll() is None:
        proc.terminate()
        try:
            late = proc.wait(timeout=STOP_SECONDS) == 1
        except subprocess.TimeoutExpired:
            stuck = True
            proc.send_signal(signal.SIGABRT)  # faulthandler (see started) prints where each thread is
            with suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=10)
    with suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)  # whatever of its group is left (none, when it stopped cleanly)
    if stuck or late:
        err = proc.communicate()[1] or ""
        if stuck:
            raise AssertionError(f"{name} did not stop within {STOP_SECONDS}s of SIGTERM; its threads then:\n{err}")
        if STACKS in err:
            raise AssertionError(f"{name} hung while stopping and was ended by its own bound; its threads:\n{err}")

"""A symlink loop in the rules directory — a rule file that leads back to itself, or the
directory's own link turned into a loop — is a refused reload in GetStatus, and the last good
rules keep serving; once the loop is gone the rules load again."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import grpc
from testkit.shared import RULES

from policyd.clients.policyctl.conformance.daemons import serving
from policyd.contract import policy_pb2 as pb
from policyd.contract import policy_pb2_grpc

WAIT = 60.0  # seconds a reload may take on a loaded machine


def _attempt_until(address: str, done: Callable[[pb.RuleLoadAttempt], bool]) -> pb.RuleLoadAttempt:
    deadline = time.monotonic() + WAIT
    with grpc.insecure_channel(address) as channel:
        stub = policy_pb2_grpc.PolicyServiceStub(channel)
        while True:
            attempt = stub.GetStatus(pb.GetStatusRequest(), timeout=10).last_attempt
            if done(attempt):
                return attempt
            assert time.monotonic() < deadline, f"no such reload within {WAIT}s: {attempt}"
            time.sleep(0.05)


def _rules(tmp_path: Path) -> tuple[Path, Path]:
    """A copy of the bundled rules behind a link (as a ConfigMap's volume has them)."""
    real = tmp_path / "rules-v1"
    real.mkdir()
    for path in RULES.glob("*.yaml"):
        shutil.copy(path, real / path.name)
    link = tmp_path / "rules"
    link.symlink_to(real.name)
    return real, link


def test_a_rule_file_that_is_a_symlink_loop_is_a_refused_reload(tmp_path: Path) -> None:
    real, link = _rules(tmp_path)
    args = ["--rules", str(link), "--log-level", "warning", "--watch-interval", "0.05"]
    with serving("policyd.daemon.main", args, "127.0.0.1:0") as address:
        good = _attempt_until(address, lambda a: a.ok)
        loop = real / "zz-loop.yaml"
        loop.symlink_to(loop.name)
        refused = _attempt_until(address, lambda a: not a.ok)
        assert refused.file == str(link / loop.name) and refused.error.endswith("symlink loop"), refused
        assert refused.revision == good.revision  # the last good rules serve
        loop.unlink()
        assert _attempt_until(address, lambda a: a.ok).revision == good.revision


def test_a_rules_directory_turned_into_a_symlink_loop_is_a_refused_reload(tmp_path: Path) -> None:
    _, link = _rules(tmp_path)
    args = ["--rules", str(link), "--log-level", "warning", "--watch-interval", "0.05"]
    with serving("policyd.daemon.main", args, "127.0.0.1:0") as address:
        good = _attempt_until(address, lambda a: a.ok)
        swap = tmp_path / "rules.new"
        swap.symlink_to(link.name)  # the link, swapped atomically for one to itself
        os.replace(swap, link)
        refused = _attempt_until(address, lambda a: not a.ok)
        assert refused.error.endswith("rules directory is a symlink loop"), refused
        assert refused.revision == good.revision

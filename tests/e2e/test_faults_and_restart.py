"""Faults a running daemon tolerates, and restarts: catalog files written in place, unreadable,
symlink loops and a vanished directory keep the last good catalog serving, reported in status,
the log and a metric; start-up with such files starts; --state-dir brings back the same rules
and catalog revisions after SIGKILL and serves the last good rules when the directory is
refused; SIGTERM under load fails no accepted call; Select serves while the renderer is down."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import grpc
import yaml
from testkit.ports import free_port

from policyd.contract import policy_pb2 as pb
from policyd.contract import policy_pb2_grpc
from policyd.contract import resources_pb2 as rpb

from .support import REPO, RULES, policyctl, started, write_yaml

CATALOG = REPO / "examples" / "catalog"
DAEMON = [sys.executable, "-m", "policyd.daemon.main"]
LLAMA_3B = {
    "apiVersion": "ome.io/v1beta1",
    "kind": "InferenceService",
    "metadata": {"name": "llama-3-2-3b-instruct", "namespace": "llama-demo"},
    "spec": {"model": {"name": "llama-3-2-3b-instruct"}, "engine": {"minReplicas": 1}},
}


@contextmanager
def _daemon(
    tmp_path: Path, catalog: Path, *flags: str, rules: Path = RULES
) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    ready = tmp_path / "ready"
    ready.unlink(missing_ok=True)
    command = [*DAEMON, "--rules", str(rules), "--catalog", str(catalog), "--log-level", "warning"]
    command += ["--listen", "127.0.0.1:0", "--watch-interval", "0.05", *flags, "--ready-file", str(ready)]
    with started(command, ready) as proc:
        yield ready.read_text(), proc  # written aside and renamed: whole once it exists


def _stub(address: str) -> policy_pb2_grpc.PolicyServiceStub:
    return policy_pb2_grpc.PolicyServiceStub(grpc.insecure_channel(address))


def _select(address: str) -> list[str]:
    request = pb.SelectRequest(inference_service=rpb.InferenceServiceInput(manifest=json.dumps(LLAMA_3B)))
    return [r.name for r in _stub(address).Select(request, timeout=30, wait_for_ready=True).ranking]


def _status(address: str) -> pb.GetStatusResponse:
    reply: pb.GetStatusResponse = _stub(address).GetStatus(pb.GetStatusRequest(), timeout=30, wait_for_ready=True)
    return reply


def _until(condition: object, what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def _copy_catalog(tmp_path: Path) -> Path:
    catalog = tmp_path / "catalog"
    shutil.copytree(CATALOG, catalog)
    return catalog


def test_a_file_rewritten_in_place_is_taken_only_once_whole(tmp_path: Path) -> None:
    catalog = _copy_catalog(tmp_path)
    runtimes = catalog / "llama-runtimes.yaml"
    text = runtimes.read_text()
    with _daemon(tmp_path, catalog) as (address, _):
        expected = _select(address)
        assert expected == ["sglang-llama-3-2-3b"]
        answers: list[list[str]] = []
        stop = threading.Event()

        def ask() -> None:
            while not stop.is_set():
                answers.append(_select(address))

        asking = threading.Thread(target=ask)
        asking.start()
        for _ in range(30):  # truncate, half, pause, the rest: a reader between sees half a file
            with runtimes.open("w") as out:
                out.write(text[: len(text) // 2])
                out.flush()
                time.sleep(0.02)
                out.write(text[len(text) // 2 :])
            time.sleep(0.03)
        time.sleep(1)
        stop.set()
        asking.join()
        assert answers and all(a == expected for a in answers)


def _unreadable(path: Path) -> None:
    """A manifest file no one can read, root included: reading /proc/self/mem at offset 0 fails (EIO)."""
    path.symlink_to("/proc/self/mem")


def _metric(port: int, name: str) -> float:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as reply:
        for line in reply.read().decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
    raise AssertionError(f"no metric {name}")


def test_unreadable_files_symlink_loops_and_a_vanished_directory_keep_the_last_good_catalog(tmp_path: Path) -> None:
    catalog = _copy_catalog(tmp_path)
    port = free_port()
    with _daemon(tmp_path, catalog, "--metrics-port", str(port)) as (address, _):
        before = _status(address)
        assert _metric(port, "policyd_catalog_faults") == 0
        _unreadable(catalog / "locked.yaml")
        (catalog / "loop").symlink_to("loop")
        _until(lambda: len(_status(address).catalog_errors) >= 2, "the faults are not reported")
        errors = list(_status(address).catalog_errors)
        assert any("locked.yaml: cannot read" in e for e in errors), errors
        assert any("loop: symlink loop" in e for e in errors), errors
        assert _metric(port, "policyd_catalog_faults") >= 2
        assert _status(address).revisions.catalog_revision == before.revisions.catalog_revision
        # the watch keeps working: a later change is taken
        model = yaml_doc(CATALOG / "models.yaml")[0]
        model["metadata"]["name"] = "added-after-the-faults"
        write_yaml(catalog / "added.yaml", model)
        _until(lambda: _status(address).models == before.models + 1, "a change after the faults was not taken")
        served = _status(address)
        shutil.rmtree(catalog)
        _until(lambda: any("catalog directory is gone" in e for e in _status(address).catalog_errors), "vanished")
        assert _status(address).revisions.catalog_revision == served.revisions.catalog_revision
        assert _select(address) == ["sglang-llama-3-2-3b"]


def yaml_doc(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def test_start_up_with_files_it_cannot_take_starts_and_reports_them(tmp_path: Path) -> None:
    catalog = _copy_catalog(tmp_path)
    (catalog / "latin1.yaml").write_bytes(b"kind: ClusterBaseModel\nmetadata: {name: caf\xe9}\n")
    (catalog / "big.yaml").write_text("kind: ClusterBaseModel\nmetadata: {name: m}\nspec: {x: " + "9" * 5000 + "}\n")
    (catalog / "inf.yaml").write_text("kind: ClusterBaseModel\nmetadata: {name: m}\nspec: {x: .inf}\n")
    (catalog / "loop").symlink_to("loop")
    _unreadable(catalog / "locked.yaml")
    with _daemon(tmp_path, catalog) as (address, proc):
        errors = "\n".join(_status(address).catalog_errors)
        for expected in (
            "latin1.yaml: not UTF-8",
            "big.yaml: line 3: integer",
            "inf.yaml: spec.x: inf is not a number",
            "loop: symlink loop",
            "locked.yaml: cannot read",
        ):
            assert expected in errors, errors
        assert _select(address) == ["sglang-llama-3-2-3b"]
        assert proc.poll() is None


def _rules_copy(tmp_path: Path) -> Path:
    rules = tmp_path / "rules"
    shutil.copytree(RULES, rules, ignore=shutil.ignore_patterns("examples"))
    return rules


def test_sigkill_and_restart_come_back_with_the_same_rules_and_catalog_revisions(tmp_path: Path) -> None:
    catalog, rules, state = _copy_catalog(tmp_path), _rules_copy(tmp_path), tmp_path / "state"
    flags = ("--state-dir", str(state))
    with _daemon(tmp_path, catalog, *flags, rules=rules) as (address, proc):
        runtime = yaml_doc(CATALOG / "llama-runtimes.yaml")[1]
        runtime["metadata"]["name"] = "applied-over-the-api"
        reply = _stub(address).ApplyObjects(pb.ApplyObjectsRequest(objects=[rpb.Object(manifest=json.dumps(runtime))]))
        assert reply.changes[0].action == "created"
        before = _status(address).revisions
        proc.send_signal(signal.SIGKILL)
        proc.wait(60)
    with _daemon(tmp_path, catalog, *flags, rules=rules) as (address, _):
        assert _status(address).revisions == before


def test_a_refused_rule_file_at_restart_serves_the_last_good_rules_and_reports_the_refusal(tmp_path: Path) -> None:
    catalog, rules, state = _copy_catalog(tmp_path), _rules_copy(tmp_path), tmp_path / "state"
    with _daemon(tmp_path, catalog, "--state-dir", str(state), rules=rules) as (address, _):
        good = _status(address).revisions.rules_revision
    (rules / "99-bad.yaml").write_text("rules:\n  - id: bad\n    points: 1e20\n")
    with _daemon(tmp_path, catalog, "--state-dir", str(state), rules=rules) as (address, _):
        status = _status(address)
        assert status.revisions.rules_revision == good
        assert not status.last_attempt.ok and "99-bad.yaml" in status.last_attempt.file
        assert _select(address) == ["sglang-llama-3-2-3b"]
        (rules / "99-bad.yaml").unlink()  # fixed: the directory serves again
        _until(lambda: _status(address).last_attempt.ok, "the fixed rules were not taken")


def test_sigterm_under_load_fails_no_call_already_accepted(tmp_path: Path) -> None:
    catalog = _copy_catalog(tmp_path)
    objects = [rpb.Object(manifest=json.dumps(d)) for d in yaml_doc(CATALOG / "llama-runtimes.yaml")] * 40
    request = pb.SelectRequest(
        inference_service=rpb.InferenceServiceInput(manifest=json.dumps(LLAMA_3B)),
        catalog=pb.RequestCatalog(objects=objects),
    )
    codes: list[grpc.StatusCode] = []
    with _daemon(tmp_path, catalog, "--shutdown-grace", "30") as (address, proc):
        stub = _stub(address)
        stub.Select(request, timeout=30)
        stop = threading.Event()

        def load() -> None:
            while not stop.is_set():
                try:
                    stub.Select(request, timeout=60)
                    codes.append(grpc.StatusCode.OK)
                except grpc.RpcError as err:
                    codes.append(err.code())
                    if err.code() == grpc.StatusCode.UNAVAILABLE:
                        return

        callers = [threading.Thread(target=load) for _ in range(6)]
        for t in callers:
            t.start()
        _until(lambda: len(codes) >= 6, "no calls under load", timeout=60)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0
        stop.set()
        for t in callers:
            t.join()
    assert grpc.StatusCode.OK in codes
    assert set(codes) <= {grpc.StatusCode.OK, grpc.StatusCode.UNAVAILABLE}, codes


def test_select_serves_while_the_renderer_is_down_and_render_says_it_is_unavailable(tmp_path: Path) -> None:
    catalog = _copy_catalog(tmp_path)
    isvc = write_yaml(tmp_path / "isvc.yaml", LLAMA_3B)
    gone = f"unix:{tmp_path}/no-renderer.sock"
    with _daemon(tmp_path, catalog) as (address, _):
        selected = policyctl("select", "-f", str(isvc), address=address)
        assert selected.returncode == 0 and "sglang-llama-3-2-3b" in selected.stdout
        rendered = policyctl("render", "-f", str(isvc), "--renderer", gone, "--request-timeout", "5", address=address)
        assert rendered.returncode == 1
        assert f"error: cannot reach the renderer at {gone}: UNAVAILABLE" in rendered.stderr
        assert _select(address) == ["sglang-llama-3-2-3b"]

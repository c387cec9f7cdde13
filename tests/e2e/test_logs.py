"""The text log format carries the same fields as the JSON one: request id, field, revision, address."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import grpc
import pytest

from policyd.clients.policyctl.conformance.daemons import wait_serving
from policyd.contract import policy_pb2 as pb
from policyd.contract import policy_pb2_grpc
from policyd.contract import resources_pb2 as rpb

from .support import RULES, isvc_manifest, started


def _log_of_one_bad_request(tmp_path: Path, fmt: str) -> list[str]:
    ready = tmp_path / f"ready-{fmt}"
    cmd = [sys.executable, "-m", "policyd.daemon.main", "--rules", str(RULES), "--listen", "127.0.0.1:0"]
    cmd += ["--ready-file", str(ready), "--log-format", fmt]
    with started(cmd, ready) as daemon:
        address = ready.read_text()
        wait_serving(address, 30)
        request = pb.SelectRequest(
            inference_service=rpb.InferenceServiceInput(manifest=json.dumps(isvc_manifest(deploymentMode="Sideways")))
        )
        with grpc.insecure_channel(address) as channel, pytest.raises(grpc.RpcError):
            policy_pb2_grpc.PolicyServiceStub(channel).Select(
                request, metadata=(("x-request-id", "req-42"),), timeout=30
            )
        daemon.terminate()
        _, stderr = daemon.communicate(timeout=30)
    return [line for line in stderr.splitlines() if line]


def test_text_logs_carry_the_fields_of_json_logs(tmp_path: Path) -> None:
    json_lines = [json.loads(line) for line in _log_of_one_bad_request(tmp_path, "json")]
    text_lines = _log_of_one_bad_request(tmp_path, "text")
    for message in ("rules revision serving", "serving", "invalid argument"):
        (record,) = [r for r in json_lines if r["msg"] == message]
        head = f" {record['level'].upper()} {record['logger']} {message}"
        (line,) = [t for t in text_lines if f"{head} " in t or t.endswith(head)]
        extras = {k: v for k, v in record.items() if k not in ("time", "level", "logger", "msg")}
        assert extras, message
        for key, value in extras.items():
            text = "" if key == "address" else str(value)  # each daemon has a port of its own
            assert f" {key}={json.dumps(text) if ' ' in text else text}" in line, (key, line)
    (bad,) = [t for t in text_lines if " invalid argument " in t]
    assert "request_id=req-42" in bad
    assert "field=inference_service.spec.deploymentMode" in bad

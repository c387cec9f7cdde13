"""Field paths and warnings travel in gRPC metadata, which takes printable ASCII only: a field
named with other characters (``spec.modèle``) is percent-encoded there and read back as written,
never failing the call as ``INTERNAL: Invalid metadata``."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import pytest

from policyd.contract import policy_pb2 as pb
from policyd.contract import policy_pb2_grpc
from policyd.contract import resources_pb2 as rpb
from policyd.edge.metadata_keys import FIELD_KEY, WARNING_KEY, decoded

from .support import isvc_manifest, no_traceback, policyctl, write_yaml

STRICT = (("policyd-field-validation", "Strict"),)


def _accented() -> dict[str, Any]:
    isvc = isvc_manifest()
    isvc["spec"]["modèle"] = isvc["spec"]["model"]
    return isvc


def _input() -> rpb.InferenceServiceInput:
    return rpb.InferenceServiceInput(manifest=json.dumps(_accented()))


REQUESTS: dict[str, Callable[[policy_pb2_grpc.PolicyServiceStub], Any]] = {
    "Select": lambda s: s.Select.with_call,
    "Decide": lambda s: s.Decide.with_call,
    "Default": lambda s: s.Default.with_call,
}


def _request(rpc: str) -> Any:
    if rpc == "Select":
        return pb.SelectRequest(inference_service=_input())
    if rpc == "Decide":
        return pb.DecideRequest(inference_service=_input())
    return pb.DefaultRequest(inference_service=_input())


@pytest.mark.parametrize("rpc", sorted(REQUESTS))
def test_a_non_ascii_unknown_field_is_a_warning_and_under_strict_the_refusals_field(daemon: str, rpc: str) -> None:
    with grpc.insecure_channel(daemon) as channel:
        call = REQUESTS[rpc](policy_pb2_grpc.PolicyServiceStub(channel))
        _, answered = call(_request(rpc), timeout=30)
        warnings = [decoded(v) for k, v in answered.trailing_metadata() if k == WARNING_KEY]
        assert warnings == ['unknown field "spec.modèle"']
        with pytest.raises(grpc.RpcError) as refused:
            call(_request(rpc), metadata=STRICT, timeout=30)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT, refused.value.details()
    fields = [decoded(v) for k, v in refused.value.trailing_metadata() if k == FIELD_KEY]
    assert fields == ["inference_service.spec.modèle"]


def test_admit_with_a_non_ascii_unknown_field_warns(daemon: str) -> None:
    isvc = _accented()
    request = pb.AdmitRequest(object=rpb.Object(manifest=json.dumps(isvc)))
    with grpc.insecure_channel(daemon) as channel:
        _, call = policy_pb2_grpc.PolicyServiceStub(channel).Admit.with_call(request, timeout=30)
    assert [decoded(v) for k, v in call.trailing_metadata() if k == WARNING_KEY] == [
        f'InferenceService/{isvc["metadata"]["name"]}: unknown field "spec.modèle"'
    ]


def test_policyctl_select_prints_the_warning_as_written(daemon: str, tmp_path: Path) -> None:
    result = policyctl("select", "-f", str(write_yaml(tmp_path / "isvc.yaml", _accented())), address=daemon)
    no_traceback(result)
    assert result.returncode == 0, result.stderr
    assert 'unknown field "spec.modèle"' in result.stderr
    strict = policyctl("select", "-f", str(write_yaml(tmp_path / "isvc.yaml", _accented())), "--strict", address=daemon)
    assert "Invalid metadata" not in strict.stderr
    assert 'unknown field "spec.modèle"' in strict.stderr

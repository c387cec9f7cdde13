"""Input as the Kubernetes API server takes it: unknown fields named as kubectl's field validation
does (a warning by default, an error with --strict), numbers where strings belong refused,
objects of another API group refused, every document of a -f file used or refused; gRPC errors
carry the standard google.rpc.Status with BadRequest field violations."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import grpc
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from policyd.contract import policy_pb2 as pb
from policyd.contract import policy_pb2_grpc
from policyd.contract import resources_pb2 as rpb

from .conftest import Files
from .support import (
    MODEL_NAME,
    NAMESPACE,
    RUNTIME_NAME,
    isvc_manifest,
    model_manifest,
    no_traceback,
    policyctl,
    spec_manifest,
    succeeded,
    write_yaml,
)


def _with_typo() -> dict[str, Any]:
    isvc = isvc_manifest()
    isvc["spec"]["modle"] = isvc["spec"]["model"]
    return isvc


def test_an_unknown_field_is_a_warning_by_default(daemon: str, tmp_path: Path) -> None:
    result = policyctl("select", "-f", str(write_yaml(tmp_path / "isvc.yaml", _with_typo())), address=daemon)
    succeeded(result)
    assert 'Warning: unknown field "spec.modle"' in result.stderr.splitlines()
    assert result.stdout.splitlines()[1].startswith(RUNTIME_NAME)


def test_an_unknown_field_is_an_error_with_strict(daemon: str, tmp_path: Path) -> None:
    path = str(write_yaml(tmp_path / "isvc.yaml", _with_typo()))
    for flags in (["--strict"], ["--validate=strict"]):
        result = policyctl("select", "-f", path, *flags, address=daemon)
        no_traceback(result)
        assert result.returncode == 1
        assert result.stdout == ""
        assert result.stderr.startswith(f'error: {path}: InferenceService "{MODEL_NAME}" is invalid: spec.modle: ')
        assert result.stderr.rstrip().endswith('unknown field "spec.modle"')


def test_unknown_fields_of_request_objects_name_the_object(daemon: str, files: Files, tmp_path: Path) -> None:
    runtime = spec_manifest("004", "ServingRuntime", RUNTIME_NAME)
    runtime["spec"]["supportedModelFormats"][0]["autoSelcet"] = True
    objects = write_yaml(tmp_path / "objects.yaml", runtime)
    result = policyctl("explain", "-f", str(files.isvc), "--objects", str(objects), address=daemon)
    succeeded(result)
    expected = f'ServingRuntime/{RUNTIME_NAME}: unknown field "spec.supportedModelFormats[0].autoSelcet"'
    assert f"Warning: {expected}" in result.stderr.splitlines()


def test_pod_spec_fields_of_runtimes_are_not_unknown(daemon: str, files: Files, tmp_path: Path) -> None:
    runtime = spec_manifest("004", "ServingRuntime", RUNTIME_NAME)
    runtime["spec"]["engineConfig"]["nodeSelector"] = {"pool": "gpu"}  # passed through to renderers
    runtime["status"] = {"anything": "goes"}
    objects = write_yaml(tmp_path / "objects.yaml", runtime)
    result = policyctl("explain", "-f", str(files.isvc), "--objects", str(objects), "--strict", address=daemon)
    succeeded(result)
    assert "unknown field" not in result.stderr


def _violations(err: grpc.RpcError) -> list[tuple[str, str]]:
    status = rpc_status.from_call(err)
    assert status is not None
    out = []
    for detail in status.details:
        bad = error_details_pb2.BadRequest()
        assert detail.Unpack(bad)
        out.extend((v.field, v.description) for v in bad.field_violations)
    return out


def _select(address: str, isvc: dict[str, Any], metadata: tuple[tuple[str, str], ...] = ()) -> Any:
    request = pb.SelectRequest(inference_service=rpb.InferenceServiceInput(manifest=json.dumps(isvc)))
    with grpc.insecure_channel(address) as channel:
        return policy_pb2_grpc.PolicyServiceStub(channel).Select.with_call(request, metadata=metadata, timeout=10)


def test_grpc_errors_carry_bad_request_field_violations(daemon: str) -> None:
    try:
        _select(daemon, isvc_manifest(deploymentMode="Sideways"))
    except grpc.RpcError as err:
        assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
        ((field, description),) = _violations(err)
        assert field == "inference_service.spec.deploymentMode"
        assert "Sideways" in description
        assert ("policyd-field", field) in err.trailing_metadata()
    else:
        raise AssertionError("an unknown deployment mode was accepted")


def test_strict_field_validation_over_grpc_names_every_unknown_field(daemon: str) -> None:
    isvc = _with_typo()
    isvc["spec"]["runtime"] = {"name": RUNTIME_NAME, "knid": "ServingRuntime"}
    try:
        _select(daemon, isvc, (("policyd-field-validation", "Strict"),))
    except grpc.RpcError as err:
        assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert sorted(_violations(err)) == [
            ("inference_service.spec.modle", 'unknown field "spec.modle"'),
            ("inference_service.spec.runtime.knid", 'unknown field "spec.runtime.knid"'),
        ]
    else:
        raise AssertionError("strict field validation accepted unknown fields")
    _, call = _select(daemon, isvc)  # Warn, the default: an answer, with the warnings as trailers
    warnings = [v for k, v in call.trailing_metadata() if k == "policyd-warning"]
    assert sorted(warnings) == ['unknown field "spec.modle"', 'unknown field "spec.runtime.knid"']
    _, again = _select(daemon, isvc)  # answered from the decision cache: the same warnings
    assert sorted(v for k, v in again.trailing_metadata() if k == "policyd-warning") == sorted(warnings)


def test_a_number_where_a_string_belongs_is_refused(daemon: str, tmp_path: Path) -> None:
    isvc = isvc_manifest(acceleratorSelector={"acceleratorClass": 42})
    result = policyctl("select", "-f", str(write_yaml(tmp_path / "isvc.yaml", isvc)), address=daemon)
    no_traceback(result)
    assert result.returncode == 1
    assert result.stderr.startswith(
        f'error: {tmp_path / "isvc.yaml"}: InferenceService "{MODEL_NAME}" is invalid: '
        "spec.acceleratorSelector.acceleratorClass: "
        "must be a string, got the number 42"
    )


def test_an_inference_service_of_another_api_group_is_refused(daemon: str, tmp_path: Path) -> None:
    kserve = isvc_manifest()
    kserve["apiVersion"] = "serving.kserve.io/v1beta1"
    result = policyctl("explain", "-f", str(write_yaml(tmp_path / "kserve.yaml", kserve)), address=daemon)
    no_traceback(result)
    assert result.returncode == 1
    kind = f'InferenceService "{MODEL_NAME}"'
    assert result.stderr.startswith(f"error: {tmp_path / 'kserve.yaml'}: {kind} is invalid: apiVersion: ")
    assert 'no matches for kind "InferenceService" in version "serving.kserve.io/v1beta1"' in result.stderr


def test_every_document_of_a_file_is_used(daemon: str, tmp_path: Path) -> None:
    """The runtime and the model in the InferenceService's file serve this request, even isolated
    from the daemon's catalog."""
    runtime = spec_manifest("004", "ServingRuntime", RUNTIME_NAME)
    runtime["metadata"]["name"] = "from-the-same-file"
    bundle = write_yaml(tmp_path / "bundle.yaml", isvc_manifest(), model_manifest(), runtime)
    result = policyctl("select", "-f", str(bundle), "--isolated", "-o", "name", address=daemon)
    succeeded(result)
    assert result.stdout.splitlines() == ["servingruntime.ome.io/from-the-same-file"]


def test_other_documents_of_a_file_are_refused_not_dropped(daemon: str, tmp_path: Path) -> None:
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": NAMESPACE}}
    bundle = write_yaml(tmp_path / "bundle.yaml", isvc_manifest(), deployment)
    result = policyctl("select", "-f", str(bundle), address=daemon)
    no_traceback(result)
    assert result.returncode == 1
    assert result.stderr.startswith(f'error: {bundle}#1: Deployment "web" is not a kind policyd takes')
    two = write_yaml(tmp_path / "two.yaml", isvc_manifest(), isvc_manifest())
    result = policyctl("select", "-f", str(two), address=daemon)
    assert result.returncode == 1
    assert f"expected exactly one InferenceService, found 2 ({two}#0, {two}#1)" in result.stderr

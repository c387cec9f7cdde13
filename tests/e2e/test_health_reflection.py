"""gRPC health and server reflection on the daemon's port, and status details over a real socket."""

from __future__ import annotations

from collections.abc import Iterator

import grpc
import pytest
import yaml
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import ProtoReflectionDescriptorDatabase

from policyd.contract import policy_pb2 as pb
from policyd.contract import policy_pb2_grpc
from policyd.contract import resources_pb2 as rpb

from .support import isvc_manifest

SERVICE = "ome.policy.v1.PolicyService"


@pytest.fixture
def channel(daemon: str) -> Iterator[grpc.Channel]:
    with grpc.insecure_channel(daemon) as ch:
        yield ch


@pytest.mark.parametrize("service", ["", SERVICE])
def test_health_check_is_serving(channel: grpc.Channel, service: str) -> None:
    reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=service), timeout=5)
    assert reply.status == health_pb2.HealthCheckResponse.SERVING


def test_reflection_lists_the_policy_service(channel: grpc.Channel) -> None:
    database = ProtoReflectionDescriptorDatabase(channel)
    assert SERVICE in database.get_services()
    proto = database.FindFileContainingSymbol(SERVICE)
    (service,) = [s for s in proto.service if s.name == "PolicyService"]
    assert [m.name for m in service.method] == list(pb.DESCRIPTOR.services_by_name["PolicyService"].methods_by_name)


def test_invalid_argument_over_a_real_socket_names_the_field_in_trailing_metadata(channel: grpc.Channel) -> None:
    stub = policy_pb2_grpc.PolicyServiceStub(channel)
    isvc = rpb.InferenceServiceInput(manifest=yaml.safe_dump(isvc_manifest(deploymentMode="Sideways")))
    with pytest.raises(grpc.RpcError) as caught:
        stub.Select(pb.SelectRequest(inference_service=isvc), timeout=10)
    err = caught.value
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert err.details().startswith("inference_service.spec.deploymentMode: unknown deployment mode 'Sideways'")
    assert ("policyd-field", "inference_service.spec.deploymentMode") in [
        (m.key, m.value) for m in err.trailing_metadata()
    ]

"""Calls with large request catalogs (and what-if calls) are let in a few at a time: the rest of
the worker threads stay free for the webhook's Admit and the controller's Decide, which answer
while the heavy calls run; a heavy call past the limit is RESOURCE_EXHAUSTED at once, not queued
behind the others."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from testkit.llama import MODEL_NAME, llama_entry
from testkit.shared import RULES

from policyd.contract import policy_pb2 as pb
from policyd.contract import policy_pb2_grpc
from policyd.contract import resources_pb2 as rpb
from policyd.edge.gate import Gate
from policyd.edge.limits import Limits
from policyd.process.grpc_server import new_server
from policyd.server import servicer as servicer_module
from policyd.server.heavy import HEAVY_CATALOG_BYTES, HeavyCalls
from policyd.server.observability import DecisionLog
from policyd.server.servicer import PolicyServicer
from policyd.server.state import ServingState

WORKERS = 4
ISVC = {
    "apiVersion": "ome.io/v1beta1",
    "kind": "InferenceService",
    "metadata": {"name": "llama", "namespace": "llama-demo"},
    "spec": {"model": {"name": MODEL_NAME}, "engine": {"minReplicas": 1}},
}


def _big_runtime(i: int) -> rpb.Object:
    runner = {"name": "ome-container", "image": "sglang:v0.5", "args": [f"--flag-{j}={'x' * 60}" for j in range(1500)]}
    doc = {
        "apiVersion": "ome.io/v1beta1",
        "kind": "ClusterServingRuntime",
        "metadata": {"name": f"big-{i}"},
        "spec": {"supportedModelFormats": [llama_entry()], "engineConfig": {"runner": runner}},
    }
    return rpb.Object(manifest=json.dumps(doc))


def _isvc() -> rpb.InferenceServiceInput:
    return rpb.InferenceServiceInput(manifest=json.dumps(ISVC))


class Blocking:
    """Heavy calls wait inside their handler until released; ``inside`` counts them."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.inside = threading.Semaphore(0)


@pytest.fixture
def blocking(monkeypatch: pytest.MonkeyPatch) -> Blocking:
    block = Blocking()
    real = servicer_module._request_catalog

    def held(base: Any, value: pb.RequestCatalog, fields: Any) -> Any:
        if value.ByteSize() > HEAVY_CATALOG_BYTES:
            block.inside.release()
            assert block.release.wait(60)
        return real(base, value, fields)

    monkeypatch.setattr(servicer_module, "_request_catalog", held)
    return block


@pytest.fixture
def stub(blocking: Blocking) -> Iterator[policy_pb2_grpc.PolicyServiceStub]:
    service = pb.DESCRIPTOR.services_by_name["PolicyService"].full_name
    server = new_server(WORKERS, interceptors=[Gate((service,), Limits())])  # the Gate sends encoded answers
    state = ServingState(RULES, None, lambda attempt: None)
    heavy = HeavyCalls(WORKERS // 4)
    policy_pb2_grpc.add_PolicyServiceServicer_to_server(PolicyServicer(state, DecisionLog(None), heavy=heavy), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            yield policy_pb2_grpc.PolicyServiceStub(channel)
    finally:
        blocking.release.set()
        server.stop(None).wait()


def test_cheap_calls_answer_while_heavy_ones_run_and_heavy_ones_past_the_limit_are_refused(
    stub: policy_pb2_grpc.PolicyServiceStub, blocking: Blocking
) -> None:
    heavy = pb.DecideRequest(inference_service=_isvc(), catalog=pb.RequestCatalog(objects=[_big_runtime(0)]))
    assert heavy.catalog.ByteSize() > HEAVY_CATALOG_BYTES
    running = stub.Decide.future(heavy, timeout=60)
    assert blocking.inside.acquire(timeout=60)  # the one heavy call let in holds a thread
    # more heavy callers than threads: each is refused at once, none waits for a thread
    refused = [stub.Decide.future(heavy, timeout=60) for _ in range(WORKERS * 2)]
    for call in refused:
        with pytest.raises(grpc.RpcError) as err:
            call.result()
        assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, err.value.details()
    # the webhook's and the controller's calls answer while the heavy one still runs
    stub.Admit(pb.AdmitRequest(object=rpb.Object(manifest=json.dumps(ISVC))), timeout=60)
    stub.Decide(pb.DecideRequest(inference_service=_isvc()), timeout=60)
    assert not running.done()
    blocking.release.set()
    assert running.result().revisions.rules_revision
    stub.Decide(heavy, timeout=60)  # its turn now that none runs

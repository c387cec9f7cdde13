"""What a call brings — runtimes in its request catalog, rule files for what-if — is released
when the call ends: calls with never-seen objects leave policyd's memory where it was, and the
what-if revisions pushed out of the few kept have their durable-rules engines closed."""

from __future__ import annotations

import gc
import json
import tracemalloc
from collections.abc import Iterator
from typing import Any

import grpc
import grpc_testing
import pytest
from testkit.llama import MODEL_NAME, llama_entry, model_manifest
from testkit.shared import RULES

from policyd.contract import policy_pb2 as pb
from policyd.contract import resources_pb2 as rpb
from policyd.policy.revision import Revision
from policyd.server import whatif_calls, wire
from policyd.server.observability import DecisionLog
from policyd.server.servicer import PolicyServicer
from policyd.server.state import ServingState

ISVC = {
    "apiVersion": "ome.io/v1beta1",
    "kind": "InferenceService",
    "metadata": {"name": "llama", "namespace": "llama-demo"},
    "spec": {"model": {"name": MODEL_NAME}, "engine": {"minReplicas": 1}},
}
SERVICE = pb.DESCRIPTOR.services_by_name["PolicyService"]
CALLS = 24
ENTRIES = 400  # a runtime of many supportedModelFormats entries: memos by count held each whole


class Harness:
    """The servicer over the bundled rules and an empty catalog, called through grpc_testing."""

    def __init__(self) -> None:
        self.servicer = PolicyServicer(ServingState(RULES, None, lambda attempt: None), DecisionLog(None))
        self.server = grpc_testing.server_from_dictionary({SERVICE: self.servicer}, grpc_testing.strict_real_time())

    def call(self, method: str, request: Any) -> tuple[grpc.StatusCode, str]:
        rpc = self.server.invoke_unary_unary(SERVICE.methods_by_name[method], (), request, None)
        _, _, code, details = rpc.termination()
        return code, details

    def ok(self, method: str, request: Any) -> None:
        code, details = self.call(method, request)
        assert code == grpc.StatusCode.OK, f"{method}: {code}: {details}"


def _runtime(i: int) -> dict[str, Any]:
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": "ClusterServingRuntime",
        "metadata": {"name": f"never-seen-{i}", "labels": {f"team-{j}": f"v{i}" for j in range(200)}},
        "spec": {
            "supportedModelFormats": [llama_entry(priority=1 + j) for j in range(ENTRIES)],
            "engineConfig": {"runner": {"name": "ome-container", "image": f"sglang:v0.{i}"}},
        },
    }


def _objects(i: int) -> pb.RequestCatalog:
    return pb.RequestCatalog(
        objects=[rpb.Object(manifest=json.dumps(model_manifest())), rpb.Object(manifest=json.dumps(_runtime(i)))]
    )


def _isvc() -> rpb.InferenceServiceInput:
    return rpb.InferenceServiceInput(manifest=json.dumps(ISVC))


def _traced() -> int:
    gc.collect()
    return tracemalloc.get_traced_memory()[0]


@pytest.fixture
def traced() -> Iterator[None]:
    tracemalloc.start()
    try:
        yield
    finally:
        tracemalloc.stop()


def test_decides_with_never_seen_runtimes_leave_memory_where_it_was(traced: None) -> None:
    harness = Harness()

    def call(i: int) -> None:
        harness.ok("Decide", pb.DecideRequest(inference_service=_isvc(), catalog=_objects(i)))

    for i in range(4):  # what every call needs once (the revision's planners, imports)
        call(i)
    before = _traced()
    for i in range(4, CALLS):
        call(i)
    grown = _traced() - before
    # each call's runtime parses into about 1 MB of facts: kept, 20 calls would add 20 MB
    assert grown < 2 << 20, f"{grown / 1e6:.1f} MB kept after {CALLS - 4} calls"


def _rule_files(n: int) -> list[pb.RuleFile]:
    files = [pb.RuleFile(name=p.name, content=p.read_text()) for p in sorted(RULES.glob("*.yaml"))]
    files[0].content += f"\n# what-if variant {n}\n"  # a distinct revision, the same rules
    return files


def test_what_if_revisions_pushed_out_have_their_engines_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    harness = Harness()
    built: list[Revision] = []
    real = whatif_calls.build_revision_texts

    def recorded(*args: Any, **kwargs: Any) -> Revision:
        built.append(real(*args, **kwargs))
        return built[-1]

    monkeypatch.setattr(whatif_calls, "build_revision_texts", recorded)
    variants = 7
    for n in range(variants):
        if n % 2:
            harness.ok("Lint", pb.LintRequest(rules=_rule_files(n)))
        else:
            harness.ok("Simulate", pb.SimulateRequest(rules=_rule_files(n), inference_services=[_isvc()]))
    kept = harness.servicer.whatif._revisions
    assert len(built) == variants and len(kept) == kept.size
    # the oldest are out of the cache and closed; the kept ones still answer
    assert [r.engine._closed for r in built] == [True] * (variants - kept.size) + [False] * kept.size
    harness.ok("Lint", pb.LintRequest(rules=_rule_files(variants - 1)))
    assert len(built) == variants  # answered from the kept revision


def test_an_explain_with_a_request_catalog_keeps_nothing_of_its_scope() -> None:
    harness = Harness()
    for i in range(3):
        harness.ok("Explain", pb.ExplainRequest(inference_service=_isvc(), catalog=_objects(i)))
    kept = [scope for scope, _ in wire._SCOPES._items.values()]
    assert not any(r.meta.name.startswith("never-seen-") for scope in kept for r in scope)

"""Rule files an operator changes on a live daemon: hot reload, last-good rules,
status, metrics and the decision log — against the daemon as a subprocess."""

from __future__ import annotations

import json
import shutil
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from testkit.llama import llama_entry
from testkit.ports import free_port
from testkit.shared import RULES

from policyd.clients.policyctl.conformance.daemons import serving
from policyd.contract import policy_pb2 as pb
from policyd.contract import policy_pb2_grpc
from policyd.contract import resources_pb2 as rpb

MODEL = {
    "apiVersion": "ome.io/v1beta1",
    "kind": "ClusterBaseModel",
    "metadata": {"name": "llama-3-2-3b-instruct"},
    "spec": {
        "modelFormat": {"name": "safetensors", "version": "1.0.0"},
        "modelFramework": {"name": "transformers", "version": "4.45.0.dev0"},
        "modelArchitecture": "LlamaForCausalLM",
        "modelParameterSize": "3B",
    },
}


def _runtime(kind: str, name: str) -> dict[str, object]:
    meta: dict[str, str] = {"name": name}
    if kind == "ServingRuntime":
        meta["namespace"] = "llama-demo"
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": kind,
        "metadata": meta,
        "spec": {
            "supportedModelFormats": [llama_entry()],
            "engineConfig": {"runner": {"name": "ome-container", "image": "sglang:v0.5.5"}},
        },
    }


ISVC = {
    "apiVersion": "ome.io/v1beta1",
    "kind": "InferenceService",
    "metadata": {"name": "llama", "namespace": "llama-demo"},
    "spec": {"model": {"name": "llama-3-2-3b-instruct"}, "engine": {"minReplicas": 1}},
}
REQUEST = pb.SelectRequest(
    inference_service=rpb.InferenceServiceInput(manifest=json.dumps(ISVC)),
    catalog=pb.RequestCatalog(
        objects=[
            rpb.Object(manifest=json.dumps(o))
            for o in (
                MODEL,
                _runtime("ServingRuntime", "ns-runtime"),
                _runtime("ClusterServingRuntime", "cluster-runtime"),
            )
        ],
        isolated=True,
    ),
)
SELECTION = RULES / "90-selection.yaml"
CLUSTER_FIRST = "order: [ClusterServingRuntime, ServingRuntime]"
NAMESPACE_FIRST = "order: [ServingRuntime, ClusterServingRuntime]"
BROKEN_RULE = """
  - id: broken-rule
    order: 901
    applies_to: runtime
    effect: reject
    when: {no_such_fact: true}
    reason: never
"""


WAIT = 60.0  # seconds for anything to happen: a reload on a loaded 2-core machine can take many


class Poller(threading.Thread):
    """Calls Select in a loop, recording (time, selected runtime, rules revision) and failures."""

    def __init__(self, stub: policy_pb2_grpc.PolicyServiceStub) -> None:
        super().__init__(daemon=True)
        self.stub = stub
        self.answers: list[tuple[float, str, str]] = []
        self.failures: list[str] = []
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                reply = self.stub.Select(REQUEST, timeout=WAIT)
                self.answers.append((time.monotonic(), reply.ranking[0].name, reply.revisions.rules_revision))
            except grpc.RpcError as err:
                self.failures.append(f"{err.code().name}: {err.details()}")
            time.sleep(0.01)

    def answers_after(self, since: float, name: str, count: int = 1) -> list[tuple[float, str, str]]:
        """The answers since ``since``, once ``count`` of them selected ``name`` (within WAIT seconds)."""
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            after = [a for a in list(self.answers) if a[0] >= since]
            if sum(1 for _, selected, _ in after if selected == name) >= count:
                return after
            time.sleep(0.01)
        raise AssertionError(f"not {count} answers {name!r} within {WAIT}s; last: {self.answers[-1:]}")


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path, Path, int]]:
    rules = tmp_path_factory.mktemp("rules")
    for f in RULES.glob("*.yaml"):
        shutil.copy(f, rules)
    log = tmp_path_factory.mktemp("log") / "decisions.jsonl"
    metrics = free_port()
    args = ["--rules", str(rules), "--watch-interval", "0.1", "--log-level", "warning"]
    args += ["--decision-log", str(log), "--metrics-port", str(metrics)]
    with serving("policyd.daemon.main", args, "127.0.0.1:0") as address:
        yield address, rules, log, metrics


def test_rule_edits_change_answers_and_bad_files_keep_the_last_good_rules(
    daemon: tuple[str, Path, Path, int],
) -> None:
    address, rules, _, _ = daemon
    channel = grpc.insecure_channel(address)
    stub = policy_pb2_grpc.PolicyServiceStub(channel)
    poller = Poller(stub)
    poller.start()
    try:
        assert poller.answers_after(0, "ns-runtime")  # ServingRuntime before ClusterServingRuntime

        # Edit: rank ClusterServingRuntimes first.
        text = (rules / SELECTION.name).read_text()
        changed = time.monotonic()
        (rules / SELECTION.name).write_text(text.replace(NAMESPACE_FIRST, CLUSTER_FIRST))
        assert poller.answers_after(changed, "cluster-runtime")
        good_revision = poller.answers[-1][2]

        # Break a file: answers stay, status names file and rule id, health stays SERVING.
        broken_at = time.monotonic()
        original = (rules / "10-runtime.yaml").read_text()
        (rules / "10-runtime.yaml").write_text(original + BROKEN_RULE)
        deadline = time.monotonic() + WAIT
        status = stub.GetStatus(pb.GetStatusRequest(), timeout=WAIT)
        while status.last_attempt.ok and time.monotonic() < deadline:
            time.sleep(0.05)
            status = stub.GetStatus(pb.GetStatusRequest(), timeout=WAIT)
        assert not status.last_attempt.ok
        assert status.last_attempt.file.endswith("10-runtime.yaml")
        assert status.last_attempt.rule_id == "broken-rule"
        assert status.last_attempt.line > 0
        assert "no_such_fact" in status.last_attempt.error
        assert status.revisions.rules_revision == good_revision
        refused_at = time.monotonic()
        poller.answers_after(refused_at, "cluster-runtime", count=3)  # answers go on after the refusal
        after_break = [(name, rev) for at, name, rev in poller.answers if at > broken_at]
        assert set(after_break) == {("cluster-runtime", good_revision)}
        health = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=WAIT)
        assert health.status == health_pb2.HealthCheckResponse.SERVING

        # Fix it, and undo the ranking edit: the new rules serve.
        fixed = time.monotonic()
        (rules / "10-runtime.yaml").write_text(original)
        (rules / SELECTION.name).write_text(text)
        assert poller.answers_after(fixed, "ns-runtime")
        assert stub.GetStatus(pb.GetStatusRequest(), timeout=WAIT).last_attempt.ok
    finally:
        poller.stop.set()
        poller.join()
        channel.close()
    assert poller.failures == []


def test_metrics_count_calls_reloads_and_catalog(daemon: tuple[str, Path, Path, int]) -> None:
    address, _, _, port = daemon
    with grpc.insecure_channel(address) as channel:
        policy_pb2_grpc.PolicyServiceStub(channel).Select(REQUEST, timeout=WAIT)
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=WAIT).read().decode()
    assert 'policyd_calls_total{code="OK",rpc="Select"}' in text
    assert "policyd_call_seconds_bucket" in text
    assert "policyd_rules_revision_info{revision=" in text
    assert 'policyd_rules_reloads_total{result="ok"}' in text
    assert 'policyd_catalog_objects{kind="ClusterServingRuntime"}' in text


def test_decision_log_has_one_json_line_per_decision(daemon: tuple[str, Path, Path, int]) -> None:
    address, _, log, _ = daemon
    with grpc.insecure_channel(address) as channel:
        stub = policy_pb2_grpc.PolicyServiceStub(channel)
        other = pb.SelectRequest()
        other.CopyFrom(REQUEST)
        # a question not asked before (a name alone would not make one: no rule reads it)
        meta = {"name": "logged", "namespace": "llama-demo", "labels": {"example.com/logged": "yes"}}
        other.inference_service.manifest = json.dumps({**ISVC, "metadata": meta})
        stub.Select(other, timeout=WAIT)
        stub.Select(other, timeout=WAIT)  # the same question again: answered from the decision cache, and logged too
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(lines) >= 2, "decisions not logged"
    first, again = lines[-2:]
    assert first["rpc"] == "Select"
    assert {"request_digest", "rules_revision", "catalog_revision", "outcome", "request_id", "time"} <= set(first)
    assert first["outcome"]["ranking"][0]["name"] == "ns-runtime"
    assert (first["cached"], again["cached"]) == (False, True)
    assert again["request_digest"] == first["request_digest"] and again["outcome"] == first["outcome"]

"""The decision cache's key leaves out what no rule reads: InferenceServices that differ only
in their name are decided once, unless a rule tests or prints the name."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from testkit.shared import RULES

from policyd.contract import policy_pb2 as pb
from policyd.contract import resources_pb2 as rpb
from policyd.policy.revision import build_revision
from policyd.server.cachekey import request_digest

ISVC: dict[str, Any] = {
    "apiVersion": "ome.io/v1beta1",
    "kind": "InferenceService",
    "metadata": {"name": "a", "namespace": "demo"},
    "spec": {"model": {"name": "llama"}, "engine": {"minReplicas": 1}},
}


def _select(name: str, namespace: str = "demo", **spec: Any) -> pb.SelectRequest:
    doc = {**ISVC, "metadata": {"name": name, "namespace": namespace}, "spec": {**ISVC["spec"], **spec}}
    return pb.SelectRequest(inference_service=rpb.InferenceServiceInput(manifest=json.dumps(doc)))


def test_inference_services_differing_only_in_name_share_a_decision() -> None:
    policy = build_revision(RULES).policy
    assert request_digest(_select("a"), policy) == request_digest(_select("b"), policy)
    typed = pb.SelectRequest(inference_service=rpb.InferenceServiceInput(typed=rpb.InferenceService()))
    typed.inference_service.typed.metadata.name = "c"
    other = pb.SelectRequest()
    other.CopyFrom(typed)
    other.inference_service.typed.metadata.name = "d"
    assert request_digest(typed, policy) == request_digest(other, policy)


def test_a_name_not_of_omes_format_keys_its_own_decision() -> None:
    """The webhook's name check prints the name it refuses: such names are not left out."""
    policy = build_revision(RULES).policy
    assert request_digest(_select("Llama"), policy) != request_digest(_select("Other"), policy)
    assert request_digest(_select("Llama"), policy) != request_digest(_select("a"), policy)


def test_namespace_and_spec_still_tell_decisions_apart() -> None:
    policy = build_revision(RULES).policy
    digests = {
        request_digest(_select("a"), policy),
        request_digest(_select("a", namespace="other"), policy),
        request_digest(_select("a", deploymentMode="MultiNode"), policy),
    }
    assert len(digests) == 3


def test_a_rule_that_prints_the_inference_service_name_keys_decisions_by_name(tmp_path: Path) -> None:
    rules = tmp_path / "rules"
    shutil.copytree(RULES, rules, ignore=shutil.ignore_patterns("examples"))
    (rules / "50-named.yaml").write_text(
        """
rules:
  - id: name-advisory
    order: 520
    applies_to: runtime
    effect: advise
    when: {runtime_name: a-runtime-no-test-has}
    reason: "{isvc_name} may use this runtime"
"""
    )
    policy = build_revision(rules).policy
    assert request_digest(_select("a"), policy) != request_digest(_select("b"), policy)

"""Default: OME's mutating webhook's replica defaults for each declared component, as a JSON Patch."""

from __future__ import annotations

import json
from typing import Any

from policyd.contract import policy_pb2 as pb

from .support import Harness, assert_invalid, isvc_manifest, isvc_text


def patch(harness: Harness, doc: dict[str, Any]) -> list[dict[str, Any]]:
    reply = harness.ok("Default", pb.DefaultRequest(inference_service=isvc_text(doc)))
    ops: list[dict[str, Any]] = json.loads(reply.patch)
    return ops


def test_the_webhook_defaults_each_components_replicas(harness: Harness) -> None:
    doc = isvc_manifest(engine={}, decoder={"minReplicas": 2}, router={"maxReplicas": 0})
    assert patch(harness, doc) == [
        {"op": "add", "path": "/spec/engine/minReplicas", "value": 1},
        {"op": "add", "path": "/spec/engine/maxReplicas", "value": 3},
        {"op": "add", "path": "/spec/decoder/maxReplicas", "value": 3},
        {"op": "add", "path": "/spec/router/minReplicas", "value": 1},
        {"op": "replace", "path": "/spec/router/maxReplicas", "value": 2},
    ]


def test_set_replicas_are_kept_and_nothing_to_default_is_an_empty_patch(harness: Harness) -> None:
    doc = isvc_manifest(engine={"minReplicas": 0, "maxReplicas": 5})
    reply = harness.ok("Default", pb.DefaultRequest(inference_service=isvc_text(doc)))
    assert reply.patch == "[]"
    assert reply.revisions.rules_revision


def test_no_deployment_mode_is_defaulted(harness: Harness) -> None:
    doc = isvc_manifest(engine={"minReplicas": 1, "maxReplicas": 1}, decoder={"minReplicas": 1, "maxReplicas": 1})
    assert patch(harness, doc) == []


def test_a_default_without_an_inference_service_is_invalid(harness: Harness) -> None:
    assert_invalid(harness.call("Default", pb.DefaultRequest()), "inference_service")

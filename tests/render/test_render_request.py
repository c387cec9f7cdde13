"""policyd.clients.render_request.render_request: what the renderer is given for a decision, the
AcceleratorClass objects of the chosen classes included."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from policyd.clients.render_request import Decision, render_request
from policyd.contract import policy_pb2 as pb

from .builders import make_accelerator_class, make_isvc, make_model, make_runtime

H100 = make_accelerator_class("nvidia-h100")


def test_the_request_carries_the_accelerator_class_objects_the_catalog_has_of_the_chosen_classes() -> None:
    catalog = {
        ("ClusterServingRuntime", "demo", "rt"): make_runtime(),
        ("ClusterBaseModel", "demo", "llama"): make_model(),
        ("AcceleratorClass", "", "nvidia-h100"): H100,
    }
    asked: list[tuple[str, str, str]] = []

    def manifests(kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        asked.append((kind, namespace, name))
        return catalog.get((kind, namespace, name))

    answer = pb.DecideResponse(
        runtime="rt", runtime_kind="ClusterServingRuntime", accelerator_classes={"engine": "nvidia-h100"}
    )
    decision = Decision(make_isvc(engine={}, decoder={}), answer)
    request = render_request(decision, manifests, {"decoder": "nvidia-a100"})
    assert dict(request.accelerator_classes) == {"engine": "nvidia-h100", "decoder": "nvidia-a100"}
    # nvidia-a100 is not in the catalog: left out, and its component is placed by no class
    assert [json.loads(o.manifest) for o in request.accelerator_class_objects] == [H100]
    assert {a for a in asked if a[0] == "AcceleratorClass"} == {
        ("AcceleratorClass", "", "nvidia-a100"),
        ("AcceleratorClass", "", "nvidia-h100"),
    }


def test_a_decision_placing_no_component_asks_for_no_accelerator_class() -> None:
    asked: list[str] = []

    def manifests(kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        asked.append(kind)
        return make_runtime() if kind == "ClusterServingRuntime" else None

    answer = pb.DecideResponse(runtime="rt", runtime_kind="ClusterServingRuntime")
    request = render_request(Decision(make_isvc(model=False, engine={}), answer), manifests)
    assert asked == ["ClusterServingRuntime"]
    assert list(request.accelerator_class_objects) == []

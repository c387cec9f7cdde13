"""The render request built from policyd's decision for an InferenceService, which is asked of
policyd (its Decide call: the runtime it names or the one selected, or the refusal; each
component's mode and accelerator class): nothing here decides. policyctl render, the conformance
runner and the controller all go from decision to workloads this way, so the renderer renders
what policyd decided."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from policyd.contract import policy_pb2 as pb
from policyd.contract import render_pb2
from policyd.contract import resources_pb2 as rpb

# (kind, namespace, name) -> the manifest, or None when there is none
Manifests = Callable[[str, str, str], Mapping[str, Any] | None]
Metadata = tuple[tuple[str, str], ...]  # a call's metadata


class PolicyCalls(Protocol):
    """The calls a decision needs: a PolicyServiceStub, or a client that wraps one (policyctl's
    adds the field-validation choice and keeps the daemon's warnings)."""

    def Decide(self, request: pb.DecideRequest, metadata: Metadata = ()) -> pb.DecideResponse: ...
    def GetObjects(self, request: pb.GetObjectsRequest, metadata: Metadata = ()) -> pb.GetObjectsResponse: ...


@dataclass(frozen=True)
class Decision:
    isvc: Mapping[str, Any]
    answer: pb.DecideResponse

    @property
    def problem(self) -> str:
        """Why no runtime can be used, in policyd's words; empty otherwise."""
        if not self.answer.HasField("rejection"):
            return ""
        return self.answer.rejection.message or self.answer.rejection.condition_message

    @property
    def runtime(self) -> tuple[str, str, int]:
        """(kind, name, matched entry index) of the runtime to use; only when there is no problem."""
        return self.answer.runtime_kind, self.answer.runtime, self.answer.entry_index


def isvc_input(isvc: Mapping[str, Any]) -> rpb.InferenceServiceInput:
    return rpb.InferenceServiceInput(manifest=json.dumps(isvc))


def decide(
    policy: PolicyCalls,
    isvc: Mapping[str, Any],
    catalog: pb.RequestCatalog | None = None,
    lookup: str = "",
    metadata: Metadata = (),
) -> Decision:
    request = pb.DecideRequest(inference_service=isvc_input(isvc), catalog=catalog, lookup=lookup)
    return Decision(isvc, policy.Decide(request, metadata=metadata))


def from_catalog(policy: PolicyCalls, metadata: Metadata = ()) -> Manifests:
    """Manifests from the daemon's catalog."""

    def get(kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        key = pb.ObjectKey(kind=kind, namespace=namespace, name=name)
        manifest = policy.GetObjects(pb.GetObjectsRequest(keys=[key]), metadata=metadata).objects[0].manifest
        found: Mapping[str, Any] | None = json.loads(manifest) if manifest else None
        return found

    return get


def render_request(
    decision: Decision, manifests: Manifests, placed: Mapping[str, str] | None = None
) -> render_pb2.RenderRequest:
    """What the renderer needs for a decision without a problem: the InferenceService, the
    chosen runtime and the base model as manifests, the matched entry, each component's mode
    (with its error) and accelerator class as policyd decided them, and those classes'
    AcceleratorClass objects that ``manifests`` finds; ``placed``: the classes the components
    were placed on, where the caller knows (policyctl --accelerator-class)."""
    isvc = decision.isvc
    spec, namespace = isvc.get("spec") or {}, (isvc.get("metadata") or {}).get("namespace", "")
    kind, name, entry = decision.runtime
    request = render_pb2.RenderRequest(
        inference_service=isvc_input(isvc),
        runtime=rpb.Object(manifest=json.dumps(manifests(kind, namespace, name))),
        entry_index=entry,
        modes=decision.answer.components,
    )
    model = spec.get("model")
    if model:
        found = manifests(model.get("kind") or "ClusterBaseModel", namespace, model.get("name", ""))
        if found is not None:
            request.model.CopyFrom(rpb.Object(manifest=json.dumps(found)))
    request.accelerator_classes.update(decision.answer.accelerator_classes)
    request.accelerator_classes.update(placed or {})
    for class_name in sorted({c for c in request.accelerator_classes.values() if c}):
        # One not found is left out: policyd has decided already, so the renderer places no class.
        accelerator_class = manifests("AcceleratorClass", "", class_name)
        if accelerator_class is not None:
            request.accelerator_class_objects.append(rpb.Object(manifest=json.dumps(accelerator_class)))
    return request


def placed_on(accelerator_class: str | None) -> dict[str, str]:
    """The engine and the decoder placed on one accelerator class (none when not given)."""
    return {"engine": accelerator_class, "decoder": accelerator_class} if accelerator_class else {}

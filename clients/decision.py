"""policyd's answer for an InferenceService — Resolve when it names its runtime, else
Select, and then Effective for the mode of each component — and the render request built from
that answer. policyctl render, the conformance runner and the controller all go from decision to
workloads this way, so the renderer renders the modes policyd decided."""

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


class PolicyCalls(Protocol):
    """The calls a decision needs: a PolicyServiceStub, or a client that wraps one (policyctl's
    adds the field-validation choice and keeps the daemon's warnings)."""

    def Select(self, request: pb.SelectRequest) -> pb.SelectResponse: ...
    def Resolve(self, request: pb.ResolveRequest) -> pb.ResolveResponse: ...
    def Effective(self, request: pb.EffectiveRequest) -> pb.EffectiveResponse: ...
    def GetObjects(self, request: pb.GetObjectsRequest) -> pb.GetObjectsResponse: ...


@dataclass(frozen=True)
class Decision:
    isvc: Mapping[str, Any]
    resolved: pb.ResolveResponse | None  # when the InferenceService names its runtime
    selected: pb.SelectResponse | None  # otherwise
    effective: pb.EffectiveResponse | None  # the components' modes; asked only when there is no problem

    @property
    def problem(self) -> str:
        """Why no runtime can be used (a rejection, RuntimeNotFound, or OME's no-runtime message); empty otherwise."""
        if self.resolved is not None:
            return self.resolved.rejection.message or self.resolved.rejection.condition_message
        assert self.selected is not None
        return "" if self.selected.ranking else self.selected.error

    @property
    def runtime(self) -> tuple[str, str, int]:
        """(kind, name, matched entry index) of the runtime to use; only when there is no problem."""
        if self.resolved is not None:
            return self.resolved.runtime_kind, self.resolved.runtime, self.resolved.entry_index
        assert self.selected is not None
        top = self.selected.ranking[0]
        return top.kind, top.name, top.entry_index


def isvc_input(isvc: Mapping[str, Any]) -> rpb.InferenceServiceInput:
    return rpb.InferenceServiceInput(manifest=json.dumps(isvc))


def decide(
    policy: PolicyCalls,
    isvc: Mapping[str, Any],
    catalog: pb.RequestCatalog | None = None,
    lookup: str = "",
) -> Decision:
    request = isvc_input(isvc)
    resolved, selected = None, None
    if ((isvc.get("spec") or {}).get("runtime") or {}).get("name"):
        resolved = policy.Resolve(pb.ResolveRequest(inference_service=request, catalog=catalog, lookup=lookup))
    else:
        selected = policy.Select(pb.SelectRequest(inference_service=request, catalog=catalog))
    decision = Decision(isvc, resolved, selected, None)
    if decision.problem:
        return decision
    effective = policy.Effective(pb.EffectiveRequest(inference_service=request, catalog=catalog, lookup=lookup))
    return Decision(isvc, resolved, selected, effective)


def from_catalog(policy: PolicyCalls) -> Manifests:
    """Manifests from the daemon's catalog."""

    def get(kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        key = pb.ObjectKey(kind=kind, namespace=namespace, name=name)
        manifest = policy.GetObjects(pb.GetObjectsRequest(keys=[key])).objects[0].manifest
        found: Mapping[str, Any] | None = json.loads(manifest) if manifest else None
        return found

    return get


def render_request(
    decision: Decision, manifests: Manifests, accelerator_classes: Mapping[str, str] | None = None
) -> render_pb2.RenderRequest:
    """What the renderer needs for a decision without a problem: the InferenceService, the
    chosen runtime and the base model as manifests, the matched entry, the accelerator classes,
    and each component's mode (with its error) from the Effective answer."""
    isvc = decision.isvc
    spec, namespace = isvc.get("spec") or {}, (isvc.get("metadata") or {}).get("namespace", "")
    kind, name, entry = decision.runtime
    request = render_pb2.RenderRequest(
        inference_service=isvc_input(isvc),
        runtime=rpb.Object(manifest=json.dumps(manifests(kind, namespace, name))),
        entry_index=entry,
        modes=decision.effective.components if decision.effective is not None else [],
    )
    model = spec.get("model")
    if model:
        found = manifests(model.get("kind") or "ClusterBaseModel", namespace, model.get("name", ""))
        if found is not None:
            request.model.CopyFrom(rpb.Object(manifest=json.dumps(found)))
    request.accelerator_classes.update(accelerator_classes or {})
    return request


def placed_on(accelerator_class: str | None) -> dict[str, str]:
    """The engine and the decoder placed on one accelerator class (none when not given)."""
    return {"engine": accelerator_class, "decoder": accelerator_class} if accelerator_class else {}

"""Reconcile one InferenceService: ask policyd (Resolve for a named runtime, else Select),
then the renderer, and say what the cluster should show. No decision logic of its own."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from clients.controller.outcome import Condition, Event, Outcome
from policyd.contract import policy_pb2 as pb
from policyd.contract import policy_pb2_grpc, render_pb2, render_pb2_grpc
from policyd.contract import resources_pb2 as rpb

RESOLVED = "RuntimeResolved"
NOT_FOUND = "RuntimeNotFound"
VALIDATION_ERROR = "RuntimeValidationError"
ADVISORY = "RuntimeCompatibilityAdvisory"


class Reconciler:
    def __init__(
        self, policy: policy_pb2_grpc.PolicyServiceStub, renderer: render_pb2_grpc.RendererServiceStub
    ) -> None:
        self.policy = policy
        self.renderer = renderer

    def reconcile(self, isvc: Mapping[str, Any], accelerator_classes: Mapping[str, str] | None = None) -> Outcome:
        spec = isvc.get("spec") or {}
        namespace = (isvc.get("metadata") or {}).get("namespace", "")
        request = rpb.InferenceServiceInput(manifest=json.dumps(isvc))
        events: list[Event] = []
        if (spec.get("runtime") or {}).get("name"):
            resolved = self.policy.Resolve(pb.ResolveRequest(inference_service=request))
            rejection = resolved.rejection
            if rejection.condition_reason == NOT_FOUND:
                message = rejection.condition_message
                return Outcome(Condition("False", NOT_FOUND, message), (Event("Warning", NOT_FOUND, message),))
            if rejection.message:
                message = rejection.message
                return Outcome(
                    Condition("False", VALIDATION_ERROR, message), (Event("Warning", VALIDATION_ERROR, message),)
                )
            if resolved.event:
                events.append(Event("Warning", ADVISORY, resolved.event))
            name, kind, entry = resolved.runtime, resolved.runtime_kind, resolved.entry_index
        else:
            selected = self.policy.Select(pb.SelectRequest(inference_service=request))
            if not selected.ranking:
                return Outcome(
                    Condition("False", NOT_FOUND, selected.error), (Event("Warning", NOT_FOUND, selected.error),)
                )
            top = selected.ranking[0]
            name, kind, entry = top.name, top.kind, top.entry_index
        condition = Condition("True", RESOLVED, f"{kind} {name}")
        render = render_pb2.RenderRequest(inference_service=request, entry_index=entry)
        render.accelerator_classes.update(accelerator_classes or {})
        keys = [pb.ObjectKey(kind=kind, namespace=namespace, name=name)]
        model = spec.get("model")
        if model:
            keys.append(
                pb.ObjectKey(kind=model.get("kind") or "ClusterBaseModel", namespace=namespace, name=model["name"])
            )
        objects = self.policy.GetObjects(pb.GetObjectsRequest(keys=keys)).objects
        render.runtime.CopyFrom(objects[0])
        if model:
            render.model.CopyFrom(objects[1])
        rendered = self.renderer.Render(render)
        workloads = tuple(json.loads(o) for o in rendered.objects)
        return Outcome(condition, tuple(events), workloads, tuple(rendered.errors))

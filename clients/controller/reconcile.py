"""Reconcile one InferenceService: ask policyd (Resolve for a named runtime, else Select),
then the renderer, and say what the cluster should show. No decision logic of its own."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import grpc

from clients.controller.outcome import Condition, Event, Outcome
from clients.decision import decide, from_catalog, render_request
from policyd.contract import policy_pb2_grpc, render_pb2_grpc

RESOLVED = "RuntimeResolved"
NOT_FOUND = "RuntimeNotFound"
VALIDATION_ERROR = "RuntimeValidationError"
ADVISORY = "RuntimeCompatibilityAdvisory"


class RendererError(Exception):
    """The renderer could not be called (down: UNAVAILABLE), as opposed to a policyd failure."""


class Reconciler:
    def __init__(
        self, policy: policy_pb2_grpc.PolicyServiceStub, renderer: render_pb2_grpc.RendererServiceStub
    ) -> None:
        self.policy = policy
        self.renderer = renderer

    def reconcile(self, isvc: Mapping[str, Any], accelerator_classes: Mapping[str, str] | None = None) -> Outcome:
        decision = decide(self.policy, isvc)
        events: list[Event] = []
        if decision.resolved is not None:
            rejection = decision.resolved.rejection
            if rejection.condition_reason == NOT_FOUND:
                message = rejection.condition_message
                return Outcome(Condition("False", NOT_FOUND, message), (Event("Warning", NOT_FOUND, message),))
            if rejection.message:
                message = rejection.message
                return Outcome(
                    Condition("False", VALIDATION_ERROR, message), (Event("Warning", VALIDATION_ERROR, message),)
                )
            if decision.resolved.event:
                events.append(Event("Warning", ADVISORY, decision.resolved.event))
        elif decision.problem:
            message = decision.problem
            return Outcome(Condition("False", NOT_FOUND, message), (Event("Warning", NOT_FOUND, message),))
        kind, name, _ = decision.runtime
        try:
            rendered = self.renderer.Render(render_request(decision, from_catalog(self.policy), accelerator_classes))
        except grpc.RpcError as err:  # the decision stands; only the workloads wait for the renderer
            code = err.code().name if isinstance(err, grpc.Call) else "UNKNOWN"
            details = err.details() if isinstance(err, grpc.Call) else str(err)
            raise RendererError(f"the renderer: {code}: {details}") from None
        workloads = tuple(json.loads(o) for o in rendered.objects)
        return Outcome(Condition("True", RESOLVED, f"{kind} {name}"), tuple(events), workloads, tuple(rendered.errors))

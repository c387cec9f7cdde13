"""Reconcile one InferenceService: ask policyd (Resolve for a named runtime, else Select),
then the renderer, and say what the cluster should show. It makes no decision of its own:
condition reasons and messages, event reasons and messages are policyd's answers."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

import grpc

from clients.controller.outcome import ADVISORY, NOT_FOUND, RESOLVED, VALIDATION_ERROR, Condition, Event, Outcome
from clients.decision import Decision, decide, from_catalog, placed_on, render_request
from policyd.contract import policy_pb2 as pb
from policyd.contract import policy_pb2_grpc, render_pb2_grpc

OBJECTS_KEPT = 256  # catalog manifests kept for renders


class Unavailable(Exception):
    """policyd or the renderer did not answer (or refused the call); the reconcile is retried."""

    def __init__(self, service: str, address: str, error: grpc.RpcError) -> None:
        code = error.code().name if hasattr(error, "code") else "UNKNOWN"
        details = error.details() if hasattr(error, "details") else str(error)
        super().__init__(f"{service} at {address}: {code}: {details}")
        self.service = service


class Reconciler:
    def __init__(
        self,
        policy: policy_pb2_grpc.PolicyServiceStub,
        renderer: render_pb2_grpc.RendererServiceStub,
        addresses: tuple[str, str] = ("", ""),
    ) -> None:
        self.policy = policy
        self.renderer = renderer
        self.policy_address, self.renderer_address = addresses
        self._fetch = from_catalog(policy)
        # catalog objects by (catalog revision, kind, namespace, name): a revision is the catalog's
        # content, so InferenceServices decided on one share their runtime's and model's manifests
        self._objects: dict[tuple[str, str, str, str], Mapping[str, Any] | None] = {}

    def reconcile(self, isvc: Mapping[str, Any]) -> Outcome:
        try:
            decision = decide(self.policy, isvc)
        except grpc.RpcError as err:
            raise Unavailable("policyd", self.policy_address, err) from err
        refused = refusal(decision)
        revision = _catalog_revision(decision)
        if refused is not None:
            return Outcome(refused, (Event("Warning", refused.reason, refused.message),), catalog_revision=revision)
        events: tuple[Event, ...] = ()
        if decision.resolved is not None and decision.resolved.event:
            # event_reason is new in the contract; a daemon that leaves it empty only records advisories
            events = (Event("Warning", decision.resolved.event_reason or ADVISORY, decision.resolved.event),)
        kind, name, _ = decision.runtime
        selector = ((isvc.get("spec") or {}).get("acceleratorSelector") or {}).get("acceleratorClass")
        try:
            request = render_request(decision, self._manifests(revision), placed_on(selector))
        except grpc.RpcError as err:
            raise Unavailable("policyd", self.policy_address, err) from err
        try:
            rendered = self.renderer.Render(request)
        except grpc.RpcError as err:
            raise Unavailable("renderer", self.renderer_address, err) from err
        return Outcome(
            Condition("True", RESOLVED, f"{kind} {name}"),
            events,
            tuple(json.loads(o) for o in rendered.objects),
            tuple(rendered.errors),
            revision,
        )

    def _manifests(self, revision: str) -> Callable[[str, str, str], Mapping[str, Any] | None]:
        def get(kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
            key = (revision, kind, namespace, name)
            if not revision or key not in self._objects:
                if len(self._objects) >= OBJECTS_KEPT:
                    self._objects = {k: v for k, v in self._objects.items() if k[0] == revision}
                self._objects[key] = self._fetch(kind, namespace, name)
            return self._objects[key]

        return get


def refusal(decision: Decision) -> Condition | None:
    """RuntimeReady False as policyd worded it, when no runtime can be used."""
    if decision.resolved is not None:
        rejection = decision.resolved.rejection
        if not (rejection.condition_reason or rejection.message or rejection.kind):
            return None
        return _condition(rejection, "")
    assert decision.selected is not None
    if decision.selected.ranking:
        return None
    return _condition(decision.selected.rejection, decision.selected.error)


def _condition(rejection: pb.Rejection, select_error: str) -> Condition:
    # condition_reason/condition_message are always set with a rejection by daemons that fill the
    # contract of Rejection; older ones set only the webhook's message (a validation error) or, for
    # Select, only OME's "no runtime found" error (RuntimeNotFound).
    reason = rejection.condition_reason or (VALIDATION_ERROR if rejection.message else NOT_FOUND)
    message = rejection.condition_message or rejection.message or select_error
    return Condition("False", reason, message)


def _catalog_revision(decision: Decision) -> str:
    answer = decision.resolved if decision.resolved is not None else decision.selected
    return answer.revisions.catalog_revision if answer is not None else ""

"""Reconcile one InferenceService: ask policyd for its decision, then the renderer, and say
what the cluster should show. It makes no decision of its own:
condition reasons and messages, event reasons and messages are policyd's answers."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

import grpc

from policyd.clients.controller.outcome import ADVISORY, RESOLVED, Condition, Event, Outcome
from policyd.clients.controller.pins import Pin
from policyd.clients.render_request import Decision, Metadata, decide, from_catalog, render_request
from policyd.contract import policy_pb2 as pb
from policyd.contract import policy_pb2_grpc, render_pb2_grpc
from policyd.contract import resources_pb2 as rpb

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
        at_least: Callable[[], Metadata] = lambda: (),
    ) -> None:
        self.policy = policy
        self.at_least = at_least  # the call metadata asking for a catalog as new as the controller has seen
        self.renderer = renderer
        self.policy_address, self.renderer_address = addresses
        # catalog objects by (catalog revision, kind, namespace, name): a revision is the catalog's
        # content, so InferenceServices decided on one share their runtime's and model's manifests
        self._objects: dict[tuple[str, str, str, str], Mapping[str, Any] | None] = {}

    def reconcile(self, isvc: Mapping[str, Any], pin: Pin | None = None) -> Outcome:
        """``pin``: the runtime snapshot a pinned InferenceService is decided and rendered on,
        whatever the runtime is now (policyd decides on it, over its catalog's version)."""
        metadata = self.at_least()
        catalog = pb.RequestCatalog(objects=[rpb.Object(manifest=json.dumps(pin.manifest))]) if pin else None
        try:
            decision = decide(self.policy, isvc, catalog=catalog, metadata=metadata)
        except grpc.RpcError as err:
            raise Unavailable("policyd", self.policy_address, err) from err
        refused = refusal(decision)
        revision = _catalog_revision(decision)
        if refused is not None:
            return Outcome(refused, (Event("Warning", refused.reason, refused.message),), catalog_revision=revision)
        answer = decision.answer
        # a kind of refusal may name no event reason of its own: the event is an advisory then
        events = (Event("Warning", answer.event_reason or ADVISORY, answer.event),) if answer.event else ()
        kind, name, _ = decision.runtime
        manifests = self._manifests(revision, metadata, pin)
        namespace = (isvc.get("metadata") or {}).get("namespace", "")
        try:
            runtime = manifests(kind, namespace, name)
            request = render_request(decision, manifests)
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
            (kind, name, runtime) if runtime is not None else None,
        )

    def live_runtime(self, kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        """The runtime as policyd's catalog has it now (at least as new as the controller has seen)."""
        try:
            return from_catalog(self.policy, self.at_least())(kind, namespace, name)
        except grpc.RpcError as err:
            raise Unavailable("policyd", self.policy_address, err) from err

    def _manifests(
        self, revision: str, metadata: Metadata, pin: Pin | None
    ) -> Callable[[str, str, str], Mapping[str, Any] | None]:
        fetch = from_catalog(self.policy, metadata)

        def get(kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
            if pin is not None and (kind, name) == (pin.kind, pin.runtime):
                return pin.manifest
            key = (revision, kind, namespace, name)
            if not revision or key not in self._objects:
                if len(self._objects) >= OBJECTS_KEPT:
                    self._objects = {k: v for k, v in self._objects.items() if k[0] == revision}
                self._objects[key] = fetch(kind, namespace, name)
            return self._objects[key]

        return get


def refusal(decision: Decision) -> Condition | None:
    """RuntimeReady False as policyd worded it, when no runtime can be used."""
    if not decision.answer.HasField("rejection"):
        return None
    rejection = decision.answer.rejection
    return Condition("False", rejection.condition_reason, rejection.condition_message)


def _catalog_revision(decision: Decision) -> str:
    """policyd's catalog revision the decision was made on; a decision over a pin names its own
    catalog as that one's revision, "+" the pin's (the request's objects over it)."""
    return decision.answer.revisions.catalog_revision.partition("+")[0]

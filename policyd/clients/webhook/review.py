"""admission.k8s.io/v1 AdmissionReview: the request as the webhook reads it from an HTTP body, and
the response as the API server takes it. No I/O, no policy."""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

API_VERSION, KIND = "admission.k8s.io/v1", "AdmissionReview"
# operations that never ask policyd: deletes are never blocked, and CONNECT carries no object to judge
ALWAYS_ALLOWED = frozenset({"DELETE", "CONNECT"})
OPERATIONS = frozenset({"CREATE", "UPDATE", *ALWAYS_ALLOWED})


class BadReview(ValueError):
    """A body the webhook cannot review; the message says what is wrong, in one line."""


@dataclass(frozen=True)
class Request:
    uid: str
    operation: str
    kind: str
    namespace: str
    name: str
    object: Mapping[str, Any] | None  # None for DELETE and CONNECT

    def describe(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}" if self.namespace else f"{self.kind} {self.name}"

    def manifest(self) -> str:
        """The object under review as JSON for policyd, with the request's namespace: the API server
        fills it in the stored object, but a review's object may come without it (generateName,
        a namespace taken from the URL)."""
        assert self.object is not None
        obj = dict(self.object)
        meta = dict(obj.get("metadata") or {})
        if self.namespace:
            meta.setdefault("namespace", self.namespace)
        obj["metadata"] = meta
        return json.dumps(obj)


@dataclass(frozen=True)
class Answer:
    allowed: bool
    message: str = ""
    code: int = 403  # controller-runtime's admission.Denied: 403 Forbidden, as OME's webhooks answer
    reason: str = "Forbidden"
    warnings: tuple[str, ...] = ()
    patch: str = ""  # RFC 6902 JSON text; "" or "[]": nothing to change


ALLOWED = Answer(True)


def parse(body: bytes, kind: str) -> Request:
    """The review in ``body`` for an endpoint that reviews ``kind``; BadReview when it is not one."""
    try:
        review = json.loads(body)
    except ValueError as err:  # also the UnicodeDecodeError of a body that is not UTF-8
        raise BadReview(f"the body is not JSON: {err}") from None
    except RecursionError:
        raise BadReview("the body is nested too deep to read") from None
    if not isinstance(review, dict):
        raise BadReview(f"the body is not an {API_VERSION} {KIND}: a JSON {type(review).__name__}, not an object")
    if (review.get("apiVersion"), review.get("kind")) != (API_VERSION, KIND):
        raise BadReview(
            f"the body is not an {API_VERSION} {KIND}: apiVersion {review.get('apiVersion')!r}, "
            f"kind {review.get('kind')!r}"
        )
    request = review.get("request")
    if not isinstance(request, dict):
        raise BadReview(f"the {KIND} has no request")
    uid = request.get("uid")
    if not uid or not isinstance(uid, str):
        raise BadReview(f"the {KIND}'s request has no uid")
    operation = request.get("operation")
    if operation not in OPERATIONS:
        raise BadReview(f"the {KIND}'s request has operation {operation!r}, not one of {', '.join(sorted(OPERATIONS))}")
    obj = request.get("object")
    if operation not in ALWAYS_ALLOWED and not isinstance(obj, dict):
        raise BadReview(f"the {KIND}'s request has no object (operation {operation})")
    reviewed = _dict(request.get("kind")).get("kind") or _dict(obj).get("kind")
    if reviewed != kind:
        raise BadReview(f"this endpoint reviews {kind} objects, the request is for {reviewed or 'no kind'}")
    metadata = _dict(obj).get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise BadReview(f"the {KIND}'s object's metadata is a JSON {type(metadata).__name__}, not an object")
    meta = _dict(_dict(obj).get("metadata"))
    return Request(
        uid,
        operation,
        kind,
        str(request.get("namespace") or meta.get("namespace") or ""),
        str(request.get("name") or meta.get("name") or ""),
        obj if operation not in ALWAYS_ALLOWED else None,
    )


def _dict(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


def encode(uid: str, answer: Answer) -> bytes:
    response: dict[str, Any] = {"uid": uid, "allowed": answer.allowed}
    if not answer.allowed:
        response["status"] = {
            "status": "Failure",
            "code": answer.code,
            "reason": answer.reason,
            "message": answer.message,
        }
    if answer.warnings:
        response["warnings"] = list(answer.warnings)
    if answer.patch and json.loads(answer.patch):
        response["patchType"] = "JSONPatch"
        response["patch"] = base64.b64encode(answer.patch.encode()).decode()
    return json.dumps({"apiVersion": API_VERSION, "kind": KIND, "response": response}).encode()

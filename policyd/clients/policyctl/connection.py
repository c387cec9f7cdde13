"""Channels to policyd and the renderer; calls that carry the field-validation choice and
bring back the daemon's warnings; gRPC errors as messages (the standard google.rpc.Status
details: each BadRequest field violation)."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from typing import Any, TypeVar

import grpc
from google.protobuf.message import Message
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from policyd.clients.channels import Connection
from policyd.clients.policyctl.origins import Origins
from policyd.clients.render_request import Metadata
from policyd.clients.tls_faults import TlsFault
from policyd.contract import policy_pb2 as pb
from policyd.contract import policy_pb2_grpc, render_pb2_grpc
from policyd.contract import resources_pb2 as rpb
from policyd.edge.metadata_keys import FIELD_KEY, VALIDATION_KEY, WARNING_KEY, decoded

DEFAULT_ADDRESS = os.environ.get("POLICYD_ADDRESS", "127.0.0.1:50051")
DEFAULT_RENDERER = os.environ.get("POLICY_RENDER_ADDRESS", "unix:/tmp/policy-render.sock")
Resp = TypeVar("Resp", bound=Message)


PLAINTEXT = Connection()


def policy_stub(address: str, connection: Connection = PLAINTEXT) -> policy_pb2_grpc.PolicyServiceStub:
    return policy_pb2_grpc.PolicyServiceStub(connection.channel(address))


def renderer_stub(address: str, connection: Connection = PLAINTEXT) -> render_pb2_grpc.RendererServiceStub:
    return render_pb2_grpc.RendererServiceStub(connection.channel(address))


def as_objects(docs: list[dict[str, Any]]) -> list[rpb.Object]:
    return [rpb.Object(manifest=json.dumps(d)) for d in docs]


class Caller:
    """Calls policyd with the user's field validation (Strict, Warn or Ignore) and keeps the
    warnings the daemon sends back, to print on stderr."""

    def __init__(self, address: str, validation: str = "Warn", connection: Connection = PLAINTEXT) -> None:
        self.address = address
        self.stub = policy_stub(address, connection)
        self.validation = validation
        self.warnings: list[str] = []

    def __call__(self, method: str, request: Message, metadata: Metadata = ()) -> Any:
        rpc: Callable[..., tuple[Any, grpc.Call]] = getattr(self.stub, method).with_call
        try:
            response, call = rpc(request, metadata=((VALIDATION_KEY, self.validation), *metadata))
        except grpc.RpcError as err:
            self._keep(err.trailing_metadata() if isinstance(err, grpc.Call | TlsFault) else None)
            raise
        self._keep(call.trailing_metadata())
        return response

    def Decide(self, request: pb.DecideRequest, metadata: Metadata = ()) -> pb.DecideResponse:
        reply: pb.DecideResponse = self("Decide", request, metadata)
        return reply

    def GetObjects(self, request: pb.GetObjectsRequest, metadata: Metadata = ()) -> pb.GetObjectsResponse:
        reply: pb.GetObjectsResponse = self("GetObjects", request, metadata)
        return reply

    def _keep(self, trailers: Any) -> None:
        self.warnings.extend(decoded(v) for k, v in trailers or () if k == WARNING_KEY)


# kubectl's words for what the server said (its "Error from server (Reason)"), by gRPC code
_REASONS = {
    grpc.StatusCode.PERMISSION_DENIED: "Forbidden",
    grpc.StatusCode.UNAUTHENTICATED: "Unauthorized",
    grpc.StatusCode.NOT_FOUND: "NotFound",
    grpc.StatusCode.ALREADY_EXISTS: "AlreadyExists",
    grpc.StatusCode.ABORTED: "Conflict",
    grpc.StatusCode.FAILED_PRECONDITION: "MethodNotAllowed",  # ApplyObjects of a policyd that reads the cluster
    grpc.StatusCode.UNIMPLEMENTED: "NotFound",  # a daemon older than the call: "the server could not find…"
    grpc.StatusCode.INVALID_ARGUMENT: "BadRequest",
    grpc.StatusCode.OUT_OF_RANGE: "BadRequest",
    grpc.StatusCode.CANCELLED: "ServiceUnavailable",
}
# the calls a message may name, and the command that makes each
_COMMANDS = {
    "Select": "select",
    "Resolve": "resolve",
    "Explain": "explain",
    "Effective": "effective",
    "Decide": "render",
    "ApplyObjects": "apply",
    "DeleteObjects": "delete",
    "GetStatus": "status",
    "Simulate": "diff",
    "Lint": "lint",
    "InspectModel": "model inspect",
}
_CALL = re.compile(r"\b(call|use) (" + "|".join(_COMMANDS) + r")\b")


def _commands(details: str) -> str:
    """An RPC a message names, as the command a policyctl user runs: ``use Select`` is ``use
    `policyctl select```; ``call DeleteObjects`` keeps the name --authz lists it by."""

    def command(m: re.Match[str]) -> str:
        name = f"`policyctl {_COMMANDS[m[2]]}`"
        return f"use {name}" if m[1] == "use" else f"call {m[2]} ({name})"

    return _CALL.sub(command, details)


def rpc_error(err: grpc.RpcError, address: str, origins: Origins | None = None) -> list[str]:
    """The lines of ``error: …`` (or kubectl's ``Error from server (Reason): …``) for a failed
    call; a field policyd names by its request path is the file and object it came from."""
    if isinstance(err, TlsFault):
        return [f"policyd at {err.details()}"]
    code = err.code() if isinstance(err, grpc.Call) else grpc.StatusCode.UNKNOWN
    if code == grpc.StatusCode.UNAVAILABLE:
        if isinstance(err, grpc.Call) and "resolv" in (err.details() or ""):  # no daemon to start: a name for no host
            return [f"cannot reach policyd at {address}: its host name does not resolve (a typo, or no DNS here)"]
        return [f"cannot reach policyd at {address} (start it with `policyd`, or pass --address)"]
    if code == grpc.StatusCode.DEADLINE_EXCEEDED and "policyd" not in (err.details() or ""):
        return [f"policyd at {address} did not answer in time (--request-timeout)"]
    details = _commands(err.details() if isinstance(err, grpc.Call) else str(err))
    violations = _violations(err)
    if code == grpc.StatusCode.INVALID_ARGUMENT and violations:  # what is wrong with the input: kubectl's "error: …"
        origins = origins or Origins()
        return [origins.line(field, _commands(text)) for field, text in violations]
    reason = _REASONS.get(code, "InternalError")
    if code == grpc.StatusCode.RESOURCE_EXHAUSTED:  # past a limit of the request's (it names the field), or busy
        trailers = err.trailing_metadata() if isinstance(err, grpc.Call) else None
        reason = "RequestEntityTooLarge" if any(k == FIELD_KEY for k, _ in trailers or ()) else "TooManyRequests"
    return [f"Error from server ({reason}): {details}"]


def _violations(err: grpc.RpcError) -> list[tuple[str, str]]:
    status = rpc_status.from_call(err) if isinstance(err, grpc.Call) else None
    out: list[tuple[str, str]] = []
    for detail in status.details if status is not None else ():
        bad = error_details_pb2.BadRequest()
        if detail.Unpack(bad):
            out.extend((v.field, v.description) for v in bad.field_violations)
    return out

"""What a call that ends without its answer carries, from its CallError (policyd/errors.py): the
one table from the error's code to gRPC's status and the details that go with it — the standard
``google.rpc.Status`` (``grpc-status-details-bin``, read by grpcio-status and every other gRPC
stack) with ``BadRequest`` field violations for bad input — the ``policyd-field`` trailer naming
the field, and the call's warnings. policyd's servicer, its gate and the renderer all end calls
here."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import NoReturn

import grpc
from google.protobuf.message import Message
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status

from policyd.edge.metadata_keys import FIELD_KEY, WARNING_KEY, encoded
from policyd.errors import CallError

Trailers = tuple[tuple[str, str | bytes], ...]


@dataclass(frozen=True)
class _Status(grpc.Status):  # type: ignore[misc]  # grpc.Status is an untyped abstract class
    code: grpc.StatusCode
    details: str
    trailing_metadata: Trailers


def _bad_request(err: CallError) -> Message | None:
    if not any(field for field, _ in err.violations):
        return None  # about the request as a whole (it does not decode): the message says it all
    found: Message = error_details_pb2.BadRequest(
        field_violations=[
            error_details_pb2.BadRequest.FieldViolation(field=field, description=description)
            for field, description in err.violations
        ]
    )
    return found


# google.rpc's code name → the details a call ending so carries (none for the others)
DETAILS: dict[str, Callable[[CallError], Message | None]] = {"INVALID_ARGUMENT": _bad_request}


def grpc_code(err: CallError) -> grpc.StatusCode:
    return grpc.StatusCode[err.code]


def warning_trailers(warnings: Iterable[str]) -> Trailers:
    return tuple((WARNING_KEY, encoded(w)) for w in warnings)


def status(err: CallError, warnings: Iterable[str] = ()) -> grpc.Status:
    """The status a call ending in ``err`` answers with."""
    details = DETAILS.get(err.code)
    detail = details(err) if details is not None else None
    field = ((FIELD_KEY, encoded(err.field)),) if err.field else ()
    if detail is None:
        return _Status(grpc_code(err), str(err), (*field, *warning_trailers(warnings)))
    message = status_pb2.Status(code=code_pb2.Code.Value(err.code), message=str(err))
    message.details.add().Pack(detail)
    standard = rpc_status.to_status(message)
    return _Status(standard.code, standard.details, (*standard.trailing_metadata, *field, *warning_trailers(warnings)))


def abort(context: grpc.ServicerContext, err: CallError, warnings: Iterable[str] = ()) -> NoReturn:
    """End the call with ``err``'s status (what abort_with_status does, in two steps every
    ServicerContext has)."""
    found = status(err, warnings)
    context.set_trailing_metadata(found.trailing_metadata)
    context.abort(found.code, found.details)
    raise AssertionError("context.abort returns only by raising")

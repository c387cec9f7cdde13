"""What a refused call carries: the standard ``google.rpc.Status`` with ``BadRequest`` field
violations (``grpc-status-details-bin``, read by grpcio-status and every other gRPC stack),
the ``policyd-field`` trailer with the first field, and the call's warnings."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import grpc
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status

from policyd.edge.metadata_keys import FIELD_KEY, WARNING_KEY, encoded
from policyd.errors import InvalidInput

Trailers = tuple[tuple[str, str | bytes], ...]


@dataclass(frozen=True)
class _Status(grpc.Status):  # type: ignore[misc]  # grpc.Status is an untyped abstract class
    code: grpc.StatusCode
    details: str
    trailing_metadata: Trailers


def warning_trailers(warnings: Iterable[str]) -> Trailers:
    return tuple((WARNING_KEY, encoded(w)) for w in warnings)


def invalid_argument(err: InvalidInput, warnings: Iterable[str] = ()) -> grpc.Status:
    bad_request = error_details_pb2.BadRequest(
        field_violations=[
            error_details_pb2.BadRequest.FieldViolation(field=field, description=description)
            for field, description in err.violations
        ]
    )
    status = status_pb2.Status(code=code_pb2.INVALID_ARGUMENT, message=str(err))
    status.details.add().Pack(bad_request)
    standard = rpc_status.to_status(status)
    return _Status(
        standard.code,
        standard.details,
        (*standard.trailing_metadata, (FIELD_KEY, encoded(err.field)), *warning_trailers(warnings)),
    )

"""What one call may ask of the daemon: objects per request, the size of a manifest, and
time. Past a limit a call is RESOURCE_EXHAUSTED or DEADLINE_EXCEEDED, naming the limit
and the flag that sets it; message size and concurrent calls are gRPC's own options."""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from google.protobuf.message import Message

from policyd.contract import resources_pb2 as rpb
from policyd.errors import DeadlineExceeded, LimitExceeded

# Answers are kept within what a default gRPC client takes (4 MiB), with room for trailers.
RESPONSE_BUDGET = (4 << 20) - (64 << 10)


@dataclass(frozen=True)
class Limits:
    max_message_bytes: int = 16 << 20  # a request, on the wire
    max_objects: int = 1000  # objects or keys in one request
    max_manifest_bytes: int = 3 << 20  # one manifest (the API server's request limit)
    max_concurrent: int = 64  # calls in progress or queued
    call_timeout: float = 30.0  # seconds; a client's shorter deadline wins


_DEADLINE: ContextVar[float] = ContextVar("policyd_deadline", default=math.inf)


@contextmanager
def deadline_in(seconds: float) -> Iterator[None]:
    """Calls made inside give up (DeadlineExceeded from check_deadline) once ``seconds`` have passed."""
    token = _DEADLINE.set(time.monotonic() + seconds)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def check_deadline() -> None:
    """Between the steps of a call: stop the work nobody waits for any more."""
    if time.monotonic() > _DEADLINE.get():
        raise DeadlineExceeded


def _field(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def check_request(message: Message, limits: Limits, path: str = "") -> None:
    """LimitExceeded for too many objects or keys in a list, or a manifest too large."""
    for fd, value in message.ListFields():
        if fd.message_type is None:
            if fd.name == "manifest" and len(value) > limits.max_manifest_bytes:
                raise LimitExceeded(
                    _field(path, fd.name),
                    f"a manifest of {len(value):,} characters is more than the limit of "
                    f"{limits.max_manifest_bytes:,} bytes",
                )
            continue
        where = _field(path, fd.name)
        if fd.is_repeated and not fd.message_type.GetOptions().map_entry:
            if len(value) > limits.max_objects:
                raise LimitExceeded(where, f"{len(value):,} items are more than the limit of {limits.max_objects:,}")
            if fd.message_type.full_name == rpb.Object.DESCRIPTOR.full_name:
                for i, item in enumerate(value):
                    _check_object(item, f"{where}[{i}]", limits)
        elif fd.message_type.full_name == rpb.Object.DESCRIPTOR.full_name:
            _check_object(value, where, limits)
        elif not fd.is_repeated:
            check_request(value, limits, where)


def _check_object(obj: Message, path: str, limits: Limits) -> None:
    size = obj.ByteSize()
    if size > limits.max_manifest_bytes:
        limit = limits.max_manifest_bytes
        raise LimitExceeded(
            path, f"an object of {size:,} bytes is more than the limit of {limit:,} (--max-manifest-bytes)"
        )

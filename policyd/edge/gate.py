"""What every unary call passes before its handler runs: its bytes decode as the request
message (else INVALID_ARGUMENT, not gRPC's INTERNAL), the caller may call the method
(else PERMISSION_DENIED), the request is within the limits (else RESOURCE_EXHAUSTED), and
the handler runs under the call's deadline — the client's, or ``--call-timeout`` when that
is sooner (DEADLINE_EXCEEDED, also for a call that waited past it in the queue).

At shutdown the gate drains: new calls are UNAVAILABLE at once (clients retry elsewhere), the
calls it let in finish, and only then does gRPC stop — gRPC itself would cancel the calls that
reached the server but no handler yet."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import grpc
from google.protobuf.message import DecodeError

from policyd.edge.limits import Limits, check_request, deadline_in
from policyd.edge.status import abort, grpc_code
from policyd.errors import CallError, DeadlineExceeded, Forbidden, InvalidInput, LimitExceeded, NotServing

log = logging.getLogger("policyd.gate")
QUIET_SECONDS = 0.25  # draining ends once no call has arrived for this long (and none is in progress)
CallCounter = Callable[[str, grpc.StatusCode], None]  # a call of the method ended with the code


class Authorizing(Protocol):
    def allows(self, method: str, auth_context: Mapping[str, Sequence[bytes]]) -> bool: ...


class Preencoded:
    """A response already encoded: the gate sends its ``data`` as it is (the handler's answer
    is not decoded into a message only to be encoded again)."""

    __slots__ = ()
    data: bytes


def _uncounted(method: str, code: grpc.StatusCode) -> None:
    """A server without call metrics."""


class _Undecodable:
    def __init__(self, error: str) -> None:
        self.error = error


def _safe(deserialize: Callable[[bytes], Any]) -> Callable[[bytes], Any]:
    def decode(data: bytes) -> Any:
        try:
            return deserialize(data)
        except (DecodeError, ValueError, RuntimeError) as err:
            return _Undecodable(str(err))

    return decode


class Gate(grpc.ServerInterceptor):  # type: ignore[misc]  # grpc's classes are untyped
    def __init__(
        self,
        services: tuple[str, ...],
        limits: Limits,
        authorizer: Authorizing | None = None,
        count_call: CallCounter = _uncounted,
    ) -> None:
        self.services = services  # full names of the services gated (health and reflection are not)
        self.limits = limits
        self.authorizer = authorizer
        self.count_call = count_call  # the calls refused here, which never reach a handler
        self._lock = threading.Lock()
        self._active = 0
        self._arrived = 0.0
        self._draining = False
        self._gated: dict[str, tuple[Any, Any]] = {}  # by full method: (its handler, gated)

    def drain(self, grace: float) -> float:
        """Refuse new calls, and wait (up to ``grace`` seconds) for the ones let in; the grace left."""
        deadline = time.monotonic() + grace
        with self._lock:
            self._draining = True
        while time.monotonic() < deadline:
            with self._lock:
                if not self._active and time.monotonic() - self._arrived >= QUIET_SECONDS:
                    break
            time.sleep(0.02)
        return max(0.0, deadline - time.monotonic())

    def intercept_service(self, continuation: Callable[[Any], Any], details: grpc.HandlerCallDetails) -> Any:
        handler = continuation(details)
        if handler is None:
            return handler
        # one gated handler per method's handler: gRPC asks for it on every call
        gated = self._gated.get(details.method)
        if gated is None or gated[0] is not handler:
            gated = self._gated[details.method] = (handler, self._gate(handler, details.method))
        return gated[1]

    def _gate(self, handler: Any, full_method: str) -> Any:
        service, _, method = full_method.lstrip("/").rpartition("/")
        if handler.unary_unary is None or service not in self.services:
            return handler
        inner = handler.unary_unary

        def behavior(request: Any, context: grpc.ServicerContext) -> Any:
            with self._lock:
                self._arrived = time.monotonic()
                draining = self._draining
                if not draining:
                    self._active += 1
            if draining:
                self.count_call(method, grpc.StatusCode.UNAVAILABLE)
                abort(context, NotServing("shutting down: not taking new calls (retry)"))
            try:
                return self._serve(method, inner, request, context)
            finally:
                with self._lock:
                    self._active -= 1

        return grpc.unary_unary_rpc_method_handler(
            behavior,
            request_deserializer=_safe(handler.request_deserializer),
            response_serializer=_as_encoded(handler.response_serializer),
        )

    def _serve(self, method: str, inner: Callable[..., Any], request: Any, context: grpc.ServicerContext) -> Any:
        remaining = context.time_remaining()
        refusal = self._refusal(method, request, context, remaining)
        if refusal is not None:
            self.count_call(method, grpc_code(refusal))
            abort(context, refusal)
        timeout = self.limits.call_timeout if remaining is None else min(remaining, self.limits.call_timeout)
        with deadline_in(timeout):
            return inner(request, context)

    def _refusal(
        self, method: str, request: Any, context: grpc.ServicerContext, remaining: float | None
    ) -> CallError | None:
        if isinstance(request, _Undecodable):
            return InvalidInput("", f"the request is not a valid {method} request: {request.error}")
        if self.authorizer is not None and not self.authorizer.allows(method, context.auth_context()):
            names = context.auth_context().get("x509_common_name", ())
            who = ", ".join(sorted({v.decode(errors="replace") for v in names}))
            return Forbidden(f"{who or 'an anonymous caller'} may not call {method}")
        if remaining is not None and remaining <= 0:
            return DeadlineExceeded("the call's deadline passed before it was served")
        try:
            check_request(request, self.limits)
        except LimitExceeded as err:
            return err
        return None


def _as_encoded(serialize: Callable[[Any], bytes]) -> Callable[[Any], bytes]:
    """The method's serializer, and a Preencoded response's bytes as they are."""

    def encode(response: Any) -> bytes:
        return response.data if isinstance(response, Preencoded) else serialize(response)

    return encode

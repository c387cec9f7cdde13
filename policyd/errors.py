"""The errors a call can end in besides its answer, one vocabulary: each is a ``CallError`` with a
``code`` (google.rpc's name for how the call ended), the request ``field`` it is about (empty when
none) and the ``message``. policyd/edge/status.py is the one table from code to gRPC status and
details, for policyd's server, its gate and the renderer."""

from __future__ import annotations

from typing import ClassVar


class CallError(Exception):
    code: ClassVar[str] = "INTERNAL"

    def __init__(self, field: str, message: str, violations: tuple[tuple[str, str], ...] = ()) -> None:
        """``violations``: every (field, description) pair when there are several; otherwise the one."""
        super().__init__(f"{field}: {message}" if field else message)
        self.field = field
        self.message = message
        self.violations = violations or ((field, message),)


class InvalidInput(CallError, ValueError):
    """Input that cannot be decided on; ``field`` is a path such as
    ``spec.supportedModelFormats[1].modelFramework.version``. ``violations`` holds every
    (field, description) pair when there are several (strict field validation names each
    unknown field); otherwise the one pair."""

    code = "INVALID_ARGUMENT"

    def under(self, prefix: str) -> InvalidInput:
        """The same error with its field paths placed under ``prefix``."""
        if not prefix:
            return self
        violations = tuple((_under(prefix, f), m) for f, m in self.violations)
        return InvalidInput(_under(prefix, self.field), self.message, violations)


def _under(prefix: str, field: str) -> str:
    return f"{prefix}.{field}" if field and not field.startswith("[") else prefix + field


class CallRefused(CallError):
    """An error about the call as a whole, not one of its fields."""

    def __init__(self, message: str) -> None:
        super().__init__("", message)


class LimitExceeded(CallError):
    """A request past one of policyd's limits (the field names the list or manifest)."""

    code = "RESOURCE_EXHAUSTED"


class Busy(CallRefused):
    """Too many calls of the kind in progress: RESOURCE_EXHAUSTED, for the caller to retry."""

    code = "RESOURCE_EXHAUSTED"


class Forbidden(CallRefused):
    """The caller may not call the method (policyd --authz)."""

    code = "PERMISSION_DENIED"


class DeadlineExceeded(CallRefused):
    """The call ran past its deadline: the client's, or --call-timeout."""

    code = "DEADLINE_EXCEEDED"

    def __init__(self, message: str = "the call ran past its deadline (the client's, or --call-timeout)") -> None:
        super().__init__(message)


class NotServing(CallRefused):
    """policyd cannot answer now (its catalog has not listed the cluster yet, or has not seen what
    the caller has): UNAVAILABLE, for the caller to try again, or another replica."""

    code = "UNAVAILABLE"


class NotHere(CallRefused):
    """The call does not apply to this policyd as it runs (ApplyObjects under --cluster): FAILED_PRECONDITION."""

    code = "FAILED_PRECONDITION"

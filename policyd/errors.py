"""The errors a call can end in besides its answer: bad input (always naming its field), and a
daemon that cannot answer it now or here."""

from __future__ import annotations


class InvalidInput(ValueError):
    """Input that cannot be decided on; ``field`` is a path such as
    ``spec.supportedModelFormats[1].modelFramework.version``. ``violations`` holds every
    (field, description) pair when there are several (strict field validation names each
    unknown field); otherwise the one pair."""

    def __init__(self, field: str, message: str, violations: tuple[tuple[str, str], ...] = ()) -> None:
        super().__init__(f"{field}: {message}" if field else message)
        self.field = field
        self.message = message
        self.violations = violations or ((field, message),)

    def under(self, prefix: str) -> InvalidInput:
        """The same error with its field paths placed under ``prefix``."""
        if not prefix:
            return self
        violations = tuple((_under(prefix, f), m) for f, m in self.violations)
        return InvalidInput(_under(prefix, self.field), self.message, violations)


def _under(prefix: str, field: str) -> str:
    return f"{prefix}.{field}" if field and not field.startswith("[") else prefix + field


class NotServing(Exception):
    """policyd cannot answer now (its catalog has not listed the cluster yet, or has not seen what
    the caller has): UNAVAILABLE, for the caller to try again, or another replica."""


class NotHere(Exception):
    """The call does not apply to this policyd as it runs (ApplyObjects under --cluster): FAILED_PRECONDITION."""

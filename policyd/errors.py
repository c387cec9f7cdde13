"""The one error type for bad input: it always names the field it is about."""

from __future__ import annotations


class InvalidInput(ValueError):
    """Input that cannot be decided on; ``field`` is a path such as
    ``spec.supportedModelFormats[1].modelFramework.version``."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}" if field else message)
        self.field = field
        self.message = message

    def under(self, prefix: str) -> InvalidInput:
        """The same error with its field path placed under ``prefix``."""
        if not prefix:
            return self
        path = f"{prefix}.{self.field}" if self.field and not self.field.startswith("[") else prefix + self.field
        return InvalidInput(path, self.message)

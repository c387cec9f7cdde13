"""Text files read whole: within a size limit, as UTF-8 (catalog manifests and rule files)."""

from __future__ import annotations

from pathlib import Path

from policyd.errors import InvalidInput


def read_text(path: Path, limit: int) -> str:
    """The file's text; InvalidInput naming the file when it cannot be read, holds more than
    ``limit`` bytes (not read past them), or is not UTF-8."""
    try:
        with path.open("rb") as handle:
            data = handle.read(limit + 1)
    except OSError as err:
        raise InvalidInput(str(path), f"cannot read: {err.strerror or err}") from None
    if len(data) > limit:
        raise InvalidInput(str(path), f"more than the limit of {limit:,} bytes")
    return decoded(data, str(path))


def decoded(data: bytes, where: str) -> str:
    """``data`` as UTF-8 text; InvalidInput naming ``where`` and the first byte that is not."""
    try:
        return data.decode()
    except UnicodeDecodeError as err:
        raise InvalidInput(where, f"not UTF-8: byte {data[err.start]:#04x} at offset {err.start}") from None

"""OME model version semantics (its modelver package): grammar and the entry operators.

A version is ``[v]MAJOR[.MINOR[.PATCH]]`` — only a lowercase ``v`` prefix, numbers without
leading zeroes — where the patch part may carry, in this order of extraction, ``+build``
metadata, a ``-pre.release`` and a ``.dev`` tail: ``4.43.0+build``,
``4.51.3-SAM-HQ-preview``, ``4.45.0.dev0``, ``1.2.3.4``. Anything else is unreadable:
OME cannot read it either, and such a version matches none (``unreadable_version``).

A version with pre-release, build or dev parts is unofficial: it matches only the very
same version, whatever the operator. So does every comparison under ``Equal``, which
ignores precision and the ``v`` prefix. ``GreaterThan`` and ``GreaterThanOrEqual`` compare
only versions of the same precision and prefix, and the *entry's* version is an upper
limit on the model's.
"""

from __future__ import annotations

from dataclasses import dataclass

from policyd.errors import InvalidInput
from policyd.pickling import ByConstructor

OPERATORS = ("Equal", "GreaterThan", "GreaterThanOrEqual")
DEFAULT_OPERATOR = "Equal"
_DIGITS = frozenset("0123456789")
# A version longer than this is not a version: refuse it before reading it.
MAX_VERSION_LENGTH = 256


@dataclass(frozen=True, slots=True)
class Version(ByConstructor):
    text: str
    prefix: str
    major: int
    minor: int
    patch: int
    pre: tuple[str, ...]
    build: tuple[str, ...]
    dev: tuple[str, ...]
    precision: int  # how many of major.minor.patch were written

    @property
    def unofficial(self) -> bool:
        return bool(self.pre or self.build or self.dev)

    def _key(self) -> tuple[int, int, int, tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
        return (self.major, self.minor, self.patch, self.pre, self.build, self.dev)


def _number(text: str, part: str, source: str, field: str) -> int:
    if not text or not set(text) <= _DIGITS:
        raise InvalidInput(field, f"malformed version {source!r}: invalid character(s) in {part} number {text!r}")
    if len(text) > 1 and text[0] == "0":
        raise InvalidInput(field, f"malformed version {source!r}: {part} must not have leading zeroes: {text!r}")
    return int(text)


def _tags(text: str, what: str, source: str, field: str) -> tuple[str, ...]:
    tags = tuple(text.split("."))
    if any(not t for t in tags):
        raise InvalidInput(field, f"malformed version {source!r}: {what} is empty")
    return tags


def parse_version(text: str, field: str = "version") -> Version:
    """Parse ``text`` as OME does, or raise InvalidInput naming ``field``."""
    if not isinstance(text, str) or not text:
        raise InvalidInput(field, "malformed version: empty")
    if len(text) > MAX_VERSION_LENGTH:
        raise InvalidInput(field, f"malformed version: longer than {MAX_VERSION_LENGTH} characters")
    parts = text.split(".", 2)
    major_text = parts[0].removeprefix("v")
    prefix = "v" if major_text != parts[0] else ""
    major = _number(major_text, "major", text, field)
    minor = _number(parts[1], "minor", text, field) if len(parts) > 1 else 0
    rest = parts[2] if len(parts) > 2 else "0"
    build: tuple[str, ...] = ()
    pre: tuple[str, ...] = ()
    dev: tuple[str, ...] = ()
    if "+" in rest:
        rest, tail = rest.split("+", 1)
        build = _tags(tail, "build metadata", text, field)
    if "-" in rest:
        rest, tail = rest.split("-", 1)
        pre = _tags(tail, "prerelease metadata", text, field)
    if "." in rest:
        rest, tail = rest.split(".", 1)
        dev = _tags(tail, "dev metadata", text, field)
    patch = _number(rest, "patch", text, field)
    return Version(text, prefix, major, minor, patch, pre, build, dev, len(parts))


def read_operator(operator: str, field: str) -> tuple[str, str]:
    """The operator OME compares with (an unset or unknown one is Equal), and what a warning
    says of an unknown one ("" for a known one)."""
    if not operator or operator in OPERATORS:
        return operator or DEFAULT_OPERATOR, ""
    return DEFAULT_OPERATOR, f"{field}: {operator!r} is not an operator OME reads; it compares as {DEFAULT_OPERATOR}"


def unreadable_version(field: str, text: str) -> str:
    """What a warning says of a version OME cannot read (its comparisons fail)."""
    return f"{field}: {text!r} is not a version OME reads; it matches no version"


def version_satisfies(model: Version, entry: Version, operator: str) -> bool:
    """Whether the model's version passes the entry's version under ``operator``."""
    if model.unofficial or entry.unofficial or operator == "Equal":
        return entry._key() == model._key()
    if model.precision != entry.precision or model.prefix != entry.prefix:
        return False
    if operator == "GreaterThan":
        return entry._key() > model._key()
    return entry._key() >= model._key()

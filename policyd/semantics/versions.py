"""OME model version semantics: parsing and the entry operators.

A version is ``[v]N(.N)*`` optionally followed by a pre-release or dev tag
(``0.34.0.dev0``, ``1.0.0rc1``, ``2.0.0-beta.1``). Two versions are comparable
only when their precision (number of numeric parts) and ``v`` prefix agree; a
dev or pre-release version matches only the very same version, whatever the
operator. With GreaterThan / GreaterThanOrEqual the *entry's* version is an
upper limit on the model's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from policyd.errors import InvalidInput

OPERATORS = ("Equal", "GreaterThan", "GreaterThanOrEqual")
DEFAULT_OPERATOR = "Equal"

_VERSION = re.compile(
    r"^(?P<v>[vV]?)(?P<nums>\d+(?:\.\d+)*)"
    r"(?P<pre>(?:[.\-+]?(?:dev|a|alpha|b|beta|rc|pre|preview|post)\.?\d*)+)?$"
)


@dataclass(frozen=True)
class Version:
    text: str
    prefixed: bool
    parts: tuple[int, ...]
    prerelease: str

    @property
    def is_prerelease(self) -> bool:
        return bool(self.prerelease)


def parse_version(text: str, field: str = "version") -> Version:
    """Parse ``text`` or raise InvalidInput naming ``field``."""
    match = _VERSION.match(text.strip()) if isinstance(text, str) else None
    if match is None:
        raise InvalidInput(
            field, f"malformed version {text!r} (expected digits separated by dots, e.g. 4.45.0 or 4.45.0.dev0)"
        )
    return Version(
        text=text.strip(),
        prefixed=bool(match.group("v")),
        parts=tuple(int(p) for p in match.group("nums").split(".")),
        prerelease=match.group("pre") or "",
    )


def check_operator(operator: str, field: str = "operator") -> str:
    """The operator, defaulted, or InvalidInput for an unknown one."""
    if not operator:
        return DEFAULT_OPERATOR
    if operator not in OPERATORS:
        raise InvalidInput(field, f"unknown operator {operator!r} (one of {', '.join(OPERATORS)})")
    return operator


def version_satisfies(model: Version, entry: Version, operator: str) -> bool:
    """Whether the model's version passes the entry's version under ``operator``."""
    if model.is_prerelease or entry.is_prerelease:
        return model.text == entry.text
    if model.prefixed != entry.prefixed or len(model.parts) != len(entry.parts):
        return False
    if operator == "GreaterThan":
        return entry.parts > model.parts
    if operator == "GreaterThanOrEqual":
        return entry.parts >= model.parts
    return entry.parts == model.parts

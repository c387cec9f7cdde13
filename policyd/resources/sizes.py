"""Model parameter sizes as OME reads them: a number with an optional unit ``M``, ``B`` or
``T`` (``500M``, ``7B``, ``1.24B``, ``1T``); without a unit the number is a count of
parameters (``7000000000``). Units are upper-case and nothing else may follow: OME cannot
read ``7b`` or ``7 B`` (it takes them for 0), so they are refused."""

from __future__ import annotations

import re

from policyd.errors import InvalidInput

UNITS = {"M": 10**6, "B": 10**9, "T": 10**12}
_SIZE = re.compile(r"^(?P<num>\d{1,30}(?:\.\d{1,30})?(?:[eE][+-]?\d{1,2})?)(?P<unit>[MBT]?)$")


def parse_size(text: str, field: str = "size") -> float:
    """Number of parameters in ``text``, or InvalidInput naming ``field``."""
    match = _SIZE.match(text) if isinstance(text, str) else None
    if match is None:
        raise InvalidInput(
            field, f"malformed size {text!r} (expected a number with an optional unit M, B or T, e.g. 500M, 7B, 1T)"
        )
    return float(match.group("num")) * UNITS.get(match.group("unit"), 1)


def format_size(parameters: float) -> str:
    """The shortest OME-style text for a parameter count (``7B``, ``1.24B``, ``500M``)."""
    for unit in ("T", "B", "M"):
        scaled = round(parameters / UNITS[unit], 2)
        if scaled >= 1:
            return f"{scaled:g}{unit}"
    return f"{round(parameters / UNITS['M'], 2):g}M"


def range_distance(size: float, low: float, high: float) -> float:
    """How far a size range is from a model's size: the sum of the distances to
    both ends, which is the range's width when the size lies inside it."""
    return abs(size - low) + abs(high - size)

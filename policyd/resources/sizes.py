"""Model parameter sizes as OME reads them: a number with an optional unit ``M``, ``B`` or
``T`` (``500M``, ``7B``, ``1.24B``, ``1T``); without a unit the number is a count of
parameters (``7000000000``). Units are upper-case and nothing else may follow: OME reads
``7b`` or ``7 B`` as 0, and so does policyd, which says so (``unreadable_size``)."""

from __future__ import annotations

import re

UNITS = {"M": 10**6, "B": 10**9, "T": 10**12}
# Go's ParseFloat of a decimal (a sign, a leading or trailing dot), with lengths bounded
_SIZE = re.compile(r"^(?P<num>[+-]?(?:\d{1,30}(?:\.\d{0,30})?|\.\d{1,30})(?:[eE][+-]?\d{1,2})?)(?P<unit>[MBT]?)$")


def parse_size(text: str) -> float | None:
    """Number of parameters in ``text``, or None where OME cannot read it (it counts as 0)."""
    match = _SIZE.match(text) if isinstance(text, str) else None
    if match is None:
        return None
    return float(match.group("num")) * UNITS.get(match.group("unit"), 1)


def unreadable_size(field: str, text: str) -> str:
    """What a warning says of a size OME cannot read."""
    return f"{field}: {text!r} is not a size OME reads; it counts as 0"


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

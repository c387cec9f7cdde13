"""Kubernetes resource quantities (``80Gi``, ``16G``, ``1.5e9``) as OME's Go code reads them:
``resource.Quantity.Value()``, the number rounded up away from zero."""

from __future__ import annotations

import math
import re
from fractions import Fraction

from policyd.errors import InvalidInput

_QUANTITY = re.compile(
    r"(?P<number>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?:(?P<suffix>[KMGTPE]i|[numkMGTPE])|[eE](?P<exponent>[+-]?[0-9]+))?"
)
_BINARY = {f"{p}i": 1 << (10 * (i + 1)) for i, p in enumerate("KMGTPE")}
_DECIMAL = {"n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000), "": Fraction(1)}
_DECIMAL.update({p: Fraction(10 ** (3 * (i + 1))) for i, p in enumerate("kMGTPE")})
GIB = 1 << 30


def quantity_value(value: object, path: str) -> int:
    """The quantity ``value`` (a manifest's integer or string) as Go's ``Quantity.Value()``."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    match = _QUANTITY.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        raise InvalidInput(path, f"must be a quantity such as 80Gi, got {value!r}")
    number = Fraction(match["number"])
    if match["exponent"] is not None:
        number *= Fraction(10) ** int(match["exponent"])
    else:
        suffix = match["suffix"] or ""
        number *= _BINARY.get(suffix) or _DECIMAL[suffix]
    return math.ceil(number) if number >= 0 else math.floor(number)


def gib(value: int) -> int:
    """Whole GiB in ``value`` bytes, as Go's integer division by 1 GiB (toward zero)."""
    return int(Fraction(value, GIB))

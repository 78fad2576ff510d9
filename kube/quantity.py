"""Kubernetes resource quantities, parsed once at the edge into integers.

CPU becomes millicores and everything else whole base units (bytes, pods, devices),
both rounded up as the API server rounds a quantity's value (``resource.Quantity.Value``
and ``MilliValue`` round away from zero). Snapshots repeat the same strings many
times, so results are memoized per string, in tables with a bound (cleared when
full) so a long-running process does not grow.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from fractions import Fraction

__all__ = ["QuantityError", "parse_cpu_millis", "parse_quantity"]

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
_SYNTAX = re.compile(r"^([+-]?)(\d+\.?\d*|\.\d+)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?$")


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity (``cpu: lots``)."""


def _exact(text: str) -> Fraction:
    match = _SYNTAX.match(text.strip())
    if match is None:
        raise QuantityError(f"{text!r} is not a quantity (expected e.g. 500m, 2, 1.5Gi, 100G)")
    sign, number, suffix = match.groups()
    try:
        value = Fraction(Decimal(number))
    except InvalidOperation as exc:  # pragma: no cover - the regex admits only decimals
        raise QuantityError(f"{text!r} is not a quantity") from exc
    suffix = suffix or ""
    if suffix in _BINARY:
        value *= _BINARY[suffix]
    elif suffix in _DECIMAL:
        value *= _DECIMAL[suffix]
    else:
        value *= Fraction(10) ** int(suffix[1:])
    return -value if sign == "-" else value


def _ceil(value: Fraction) -> int:
    return -((-value.numerator) // value.denominator)


_BASE_CACHE: dict[str, int] = {}
_MILLI_CACHE: dict[str, int] = {}
_CACHE_BOUND = 10_000


def _remember(cache: dict[str, int], key: str, value: int) -> int:
    if len(cache) >= _CACHE_BOUND:
        cache.clear()
    cache[key] = value
    return value


def parse_quantity(value: object) -> int:
    """Whole base units (bytes, counts), rounded up: ``"1Gi" -> 1073741824``, ``"1.5" -> 2``."""
    if isinstance(value, bool):
        raise QuantityError(f"{value!r} is not a quantity")
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return _ceil(Fraction(value))
    if not isinstance(value, str):
        raise QuantityError(f"{value!r} is not a quantity")
    cached = _BASE_CACHE.get(value)
    if cached is None:
        cached = _remember(_BASE_CACHE, value, int(value) if value.isdigit() else _ceil(_exact(value)))
    return cached


def parse_cpu_millis(value: object) -> int:
    """CPU in millicores, rounded up: ``"250m" -> 250``, ``"2" -> 2000``, ``"0.1" -> 100``."""
    if isinstance(value, bool):
        raise QuantityError(f"{value!r} is not a quantity")
    if isinstance(value, int):
        return value * 1000
    if isinstance(value, float):
        return _ceil(Fraction(value) * 1000)
    if not isinstance(value, str):
        raise QuantityError(f"{value!r} is not a quantity")
    cached = _MILLI_CACHE.get(value)
    if cached is None:
        if value.isdigit():
            cached = int(value) * 1000
        elif value.endswith("m") and value[:-1].isdigit():
            cached = int(value[:-1])
        else:
            cached = _ceil(_exact(value) * 1000)
        _remember(_MILLI_CACHE, value, cached)
    return cached

"""Kubernetes resource quantities, parsed once at the edge into integers.

CPU becomes millicores and everything else whole base units (bytes, pods, devices),
both rounded up as the API server rounds a quantity's value (``resource.Quantity.Value``
and ``MilliValue`` round away from zero). Snapshots repeat the same strings many
times, so results are memoized per string, in tables with a bound (cleared when
full) so a long-running process does not grow.

Resource amounts are never negative and fit a signed 64-bit integer (the API
server's ``int64`` values); anything else is rejected rather than misread. Only
ASCII digits are digits (``"١٢"`` is not twelve), and the text and its exponent
are bounded so ``1e9999999999`` is an error, not a hang.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from fractions import Fraction

__all__ = ["INT64_MAX", "QuantityError", "parse_cpu_millis", "parse_quantity"]

INT64_MAX = 2**63 - 1
#: Longest quantity string read (the API server's canonical forms are far shorter).
MAX_LENGTH = 64
#: Exponents beyond this make any quantity of MAX_LENGTH characters round to 1 or overflow.
_MAX_EXPONENT = 200

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
_SYNTAX = re.compile(r"([+-]?)([0-9]+\.?[0-9]*|\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?",
                     re.ASCII)
_EXAMPLES = "expected e.g. 500m, 2, 1.5Gi, 100G"


class QuantityError(ValueError):
    """A value that is not a usable Kubernetes quantity (``cpu: lots``, ``-1``, ``1e999``)."""


def _exact(text: str) -> Fraction:
    if len(text) > MAX_LENGTH:
        raise QuantityError(f"{text[:20]!r}... is not a quantity (longer than {MAX_LENGTH} characters)")
    match = _SYNTAX.fullmatch(text.strip(" \t"))
    if match is None:
        raise QuantityError(f"{text!r} is not a quantity ({_EXAMPLES})")
    sign, number, suffix = match.groups()
    value = Fraction(Decimal(number))
    suffix = suffix or ""
    if suffix in _BINARY:
        value *= _BINARY[suffix]
    elif suffix in _DECIMAL:
        value *= _DECIMAL[suffix]
    else:
        # Clamped: past the bound the result is "too large" or "rounds to 1" either way.
        exponent = max(-_MAX_EXPONENT, min(_MAX_EXPONENT, int(suffix[1:])))
        value *= Fraction(10) ** exponent
    return -value if sign == "-" else value


def _ceil(value: Fraction) -> int:
    return -((-value.numerator) // value.denominator)


def _rounded(value: Fraction, shown: object) -> int:
    if value < 0:  # before rounding: -0.5 rounds to 0 but is still negative
        raise QuantityError(f"{shown!r} is negative (a resource amount is never negative)")
    return _checked(_ceil(value), shown)


def _checked(value: int, shown: object) -> int:
    if value < 0:
        raise QuantityError(f"{shown!r} is negative (a resource amount is never negative)")
    if value > INT64_MAX:
        raise QuantityError(f"{shown!r} is out of range (more than 2^63-1)")
    return value


def _number(value: object) -> Fraction:
    """A YAML/JSON number as an exact fraction; refuses booleans, NaN and infinities."""
    if isinstance(value, bool):
        raise QuantityError(f"{value!r} is not a quantity (a boolean)")
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise QuantityError(f"{value!r} is not a finite quantity")
        return Fraction(value)
    raise QuantityError(f"{_describe(value)} is not a quantity ({_EXAMPLES})")


def _describe(value: object) -> str:
    if isinstance(value, dict):
        return "a map"
    if isinstance(value, list):
        return "a list"
    return repr(value)


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
    if type(value) is str:
        cached = _BASE_CACHE.get(value)
        if cached is None:
            exact = _checked(int(value), value) if value.isascii() and value.isdigit() and len(value) <= 19 \
                else _rounded(_exact(value), value)
            cached = _remember(_BASE_CACHE, value, exact)
        return cached
    if type(value) is int:
        return _checked(value, value)
    return _rounded(_number(value), value)


def parse_cpu_millis(value: object) -> int:
    """CPU in millicores, rounded up: ``"250m" -> 250``, ``"2" -> 2000``, ``"0.1" -> 100``."""
    if type(value) is str:
        cached = _MILLI_CACHE.get(value)
        if cached is None:
            if value.isascii() and value.isdigit() and len(value) <= 15:
                exact = _checked(int(value) * 1000, value)
            elif value.endswith("m") and value[:-1].isascii() and value[:-1].isdigit() and len(value) <= 19:
                exact = _checked(int(value[:-1]), value)
            else:
                exact = _rounded(_exact(value) * 1000, value)
            cached = _remember(_MILLI_CACHE, value, exact)
        return cached
    if type(value) is int:
        return _checked(value * 1000, value)
    return _rounded(_number(value) * 1000, value)

"""Typed field readers shared by every converter.

Each reader takes the raw value and the field's path, returns the value in the
type the model wants, and raises ``FieldError`` naming the path when the input
has another type: a string where a boolean belongs (``"false"`` is not true), a
list where a label value belongs, a float where a port belongs. Absent values
(``None``) read as the documented default.
"""

from __future__ import annotations

import datetime as _dt
import math
from typing import Any

from kube.convert.errors import FieldError, Json
from kube.convert.memo import Memo
from kube.quantity import INT64_MAX, QuantityError, parse_cpu_millis, parse_quantity

__all__ = [
    "INT32_MAX",
    "as_bool",
    "as_int",
    "as_list",
    "as_map",
    "as_str",
    "cpu",
    "describe",
    "name_of",
    "parse_time",
    "qty",
    "required_str",
    "string_map",
]

INT32_MAX = 2**31 - 1


def describe(value: object) -> str:
    """A short, one-line description of a wrong value for an error message."""
    if isinstance(value, dict):
        return "a map"
    if isinstance(value, list):
        return "a list"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def cpu(value: object, field: str) -> int:
    try:
        return parse_cpu_millis(value)
    except QuantityError as exc:
        raise FieldError(field, str(exc)) from None


def qty(value: object, field: str) -> int:
    try:
        return parse_quantity(value)
    except QuantityError as exc:
        raise FieldError(field, str(exc)) from None


def as_map(value: object, field: str) -> Json:
    """A map; absent reads as empty."""
    if value is None:
        return {}
    if type(value) is dict:
        return value
    raise FieldError(field, f"expected a map, got {describe(value)}")


def as_list(value: object, field: str) -> list[Any]:
    """A list; absent reads as empty."""
    if value is None:
        return []
    if type(value) is list:
        return value
    raise FieldError(field, f"expected a list, got {describe(value)}")


def as_str(value: object, field: str, default: str = "") -> str:
    """A string; absent reads as ``default``. Numbers and booleans are not strings."""
    if value is None:
        return default
    if type(value) is str:
        return value
    raise FieldError(field, f"expected a string, got {describe(value)}")


def required_str(value: object, field: str) -> str:
    """A non-empty string: absent or empty is ``required``, another type as ``as_str`` says."""
    if type(value) is str and value:
        return value
    as_str(value, field)
    raise FieldError(field, "required")


def as_bool(value: object, field: str, default: bool = False) -> bool:
    """A boolean; ``"false"`` (a string) is refused rather than read as true."""
    if value is None:
        return default
    if type(value) is bool:
        return value
    raise FieldError(field, f"expected true or false, got {describe(value)}")


def as_int(value: object, field: str, *, minimum: int = 0, maximum: int = INT64_MAX) -> int | None:
    """An integer in ``[minimum, maximum]``; absent reads as None. ``3.0`` and ``"3"`` are refused."""
    if value is None:
        return None
    if type(value) is not int:
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            raise FieldError(field, f"expected an integer, got {describe(value)} (a float)")
        raise FieldError(field, f"expected an integer, got {describe(value)}")
    if value < minimum:
        raise FieldError(field, f"{value} is below {minimum}")
    if value > maximum:
        raise FieldError(field, f"{value} is above {maximum}")
    return value


def string_map(value: object, field: str) -> dict[str, str]:
    """Labels, annotations, selectors: string keys to string values."""
    if value is None:
        return {}
    if type(value) is not dict:
        raise FieldError(field, f"expected a map of strings, got {describe(value)}")
    if len(value) == 1:
        ((key, item),) = value.items()
        if type(key) is str and type(item) is str:
            return value
    for key, item in value.items():
        if type(key) is not str:
            raise FieldError(field, f"key {describe(key)} is not a string")
        if type(item) is not str:
            raise FieldError(f"{field}.{key}", f"expected a string, got {describe(item)}")
    return value


def name_of(meta: Json) -> str:
    """``metadata.name``: a non-empty string (every object the decision reads has one)."""
    name = meta.get("name")
    if type(name) is str and name:
        return name
    if name is None or name == "":
        raise FieldError("metadata.name", "required")
    raise FieldError("metadata.name", f"expected a string, got {describe(name)}")


def parse_time(value: object, field: str, memo: Memo[str, float] | None = None) -> float | None:
    """RFC 3339 -> seconds since the epoch (None when absent).

    YAML turns an unquoted timestamp into a ``datetime`` (and a bare date into a
    ``date``); those are read too, as ``simulate`` reads them. A time without a
    zone is UTC.
    """
    if value is None:
        return None
    if isinstance(value, _dt.datetime):
        parsed = value
    elif isinstance(value, _dt.date):
        parsed = _dt.datetime(value.year, value.month, value.day)
    elif type(value) is str:
        cached = memo.get(value) if memo is not None else None
        if cached is not None:
            return cached
        try:
            parsed = _dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise FieldError(field, f"{describe(value)} is not an RFC 3339 time") from None
    else:
        raise FieldError(field, f"{describe(value)} is not an RFC 3339 time")
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=_dt.UTC)
    try:
        seconds = parsed.timestamp()
    except (OverflowError, ValueError):
        raise FieldError(field, f"{describe(value)} is out of range") from None
    if memo is not None and type(value) is str:
        memo.put(value, seconds)
    return seconds

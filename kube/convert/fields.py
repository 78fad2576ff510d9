"""Field readers shared by every converter: quantities and times with field names."""

from __future__ import annotations

import datetime as _dt

from kube.convert.errors import FieldError
from kube.convert.memo import Memo
from kube.quantity import QuantityError, parse_cpu_millis, parse_quantity

__all__ = ["cpu", "parse_time", "qty"]


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


def parse_time(value: object, field: str, memo: Memo[str, float] | None = None) -> float | None:
    """RFC 3339 -> seconds since the epoch (None when absent)."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise FieldError(field, f"{value!r} is not an RFC 3339 time")
    cached = memo.get(value) if memo is not None else None
    if cached is None:
        try:
            parsed = _dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise FieldError(field, f"{value!r} is not an RFC 3339 time") from None
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=_dt.UTC)
        cached = parsed.timestamp()
        if memo is not None:
            memo.put(value, cached)
    return cached

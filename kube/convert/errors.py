"""The two errors of conversion and how an object is named in them."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["FieldError", "InputError", "Json", "escape", "object_ref"]

Json = dict[str, Any]

# C0/C1 controls, DEL and the Unicode line/paragraph separators: anything that
# could break the one-line error or move a terminal's cursor.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def escape(text: str) -> str:
    """``text`` with control characters written as ``\\xNN``/``\\uNNNN`` (one printable line)."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100
                        else f"\\u{ord(m.group()):04x}", text)


class InputError(Exception):
    """Bad input, reported as one line naming file, object and field."""

    def __init__(self, source: str, obj: str, field: str, message: str) -> None:
        self.source, self.obj, self.field, self.message = source, obj, field, message
        parts = [p for p in (source, obj, field) if p]
        super().__init__(escape(": ".join([*parts, message])))


class FieldError(Exception):
    """Raised inside converters; ``Converter.add`` adds source and object."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field, self.message = field, message


def _text(value: object, limit: int = 80) -> str | None:
    if type(value) is not str or not value:
        return None
    return value if len(value) <= limit else value[:limit] + "..."


def object_ref(obj: Mapping[str, Any]) -> str:
    """``Kind/namespace/name`` (``?`` for what is missing or not a string)."""
    raw_meta = obj.get("metadata")
    meta: Mapping[str, Any] = raw_meta if isinstance(raw_meta, dict) else {}
    kind = _text(obj.get("kind"), 40) or "?"
    name = _text(meta.get("name")) or "?"
    namespace = _text(meta.get("namespace"))
    return f"{kind}/{namespace}/{name}" if namespace else f"{kind}/{name}"

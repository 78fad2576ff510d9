"""The two errors of conversion and how an object is named in them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["FieldError", "InputError", "Json", "object_ref"]

Json = dict[str, Any]


class InputError(Exception):
    """Bad input, reported as one line naming file, object and field."""

    def __init__(self, source: str, obj: str, field: str, message: str) -> None:
        self.source, self.obj, self.field, self.message = source, obj, field, message
        parts = [p for p in (source, obj, field) if p]
        super().__init__(": ".join([*parts, message]))


class FieldError(Exception):
    """Raised inside converters; ``Converter.add`` adds source and object."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field, self.message = field, message


def object_ref(obj: Mapping[str, Any]) -> str:
    raw_meta = obj.get("metadata")
    meta: Mapping[str, Any] = raw_meta if isinstance(raw_meta, dict) else {}
    kind = obj.get("kind") or "?"
    name = meta.get("name") or "?"
    namespace = meta.get("namespace")
    return f"{kind}/{namespace}/{name}" if namespace else f"{kind}/{name}"

"""Hashable memo keys of raw JSON values, and the field path of one that cannot be a key.

The converter interns pods' scheduling constraints by the raw value they came from
(``kube.convert.pods``), so equal constraints are converted once. A value nested deeper
than ``MAX_KEY_DEPTH`` or holding something that is not JSON is refused, naming the full
path to it (``spec.affinity...values[0][0]``); the path is found only then, so the hot
path builds no strings.
"""

from __future__ import annotations

from typing import Any

from kube.convert.errors import FieldError
from kube.convert.fields import describe

__all__ = ["MAX_KEY_DEPTH", "freeze"]

#: Nesting a memo key may have; deeper constraints are refused, not recursed into.
MAX_KEY_DEPTH = 40


def freeze(value: Any, field: str) -> Any:
    """A hashable copy for memo keys; scalars carry their type (``1``, ``1.0`` and ``True`` differ).

    A value nested too deep, or one that is not JSON, is refused naming its full path
    (``spec.affinity.podAffinity...values[0][0]``), found only then: the hot path builds no paths.
    """
    try:
        return _frozen(value, 0)
    except _Unfreezable:
        path, why = _culprit(value, field, 0)
        raise FieldError(path, why) from None


class _Unfreezable(Exception):
    """Raised inside ``_frozen``; ``_culprit`` then finds where."""


def _frozen(value: Any, depth: int) -> Any:
    if depth > MAX_KEY_DEPTH:
        raise _Unfreezable
    if type(value) is str:
        return value
    if isinstance(value, dict):
        return ("{", *((_frozen(k, depth + 1), _frozen(v, depth + 1)) for k, v in value.items()))
    if isinstance(value, list):
        return ("[", *(_frozen(v, depth + 1) for v in value))
    try:
        hash(value)
    except TypeError:
        raise _Unfreezable from None
    return (type(value).__name__, value)


def _culprit(value: Any, field: str, depth: int) -> tuple[str, str]:
    """The path and reason of the first part of ``value`` that ``_frozen`` refuses."""
    if depth > MAX_KEY_DEPTH:
        return field, f"nested deeper than {MAX_KEY_DEPTH} levels"
    children: list[tuple[str, Any]] = []
    if isinstance(value, dict):
        children = [(f"{field}.{k}", v) for k, v in value.items()]
    elif isinstance(value, list):
        children = [(f"{field}[{i}]", v) for i, v in enumerate(value)]
    elif type(value) is not str:
        try:
            hash(value)
        except TypeError:
            return field, f"unexpected value {describe(value)}"
    for path, child in children:
        try:
            _frozen(child, depth + 1)
        except _Unfreezable:
            return _culprit(child, path, depth + 1)
    return field, "unreadable value"

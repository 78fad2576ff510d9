"""The API machinery's rules for label keys, values and selector requirements.

kube-scheduler builds selectors with ``labels.NewRequirement``, which refuses what the
API would not store: a key that is not a qualified name, a value that is not a label
value (for every operator, ``NotIn`` included), values given to ``Exists`` or
``DoesNotExist``, no value for ``In``/``NotIn``, anything but one integer for
``Gt``/``Lt`` (k8s.io/apimachinery/pkg/labels/selector.go). What it refuses selects
nothing: a node selector term with such a requirement matches no node (component-helpers'
lazy-error node selector) and a label selector matches no object
(``metav1.LabelSelectorAsSelector`` fails), so the converter records the reason instead
of failing the whole snapshot.
"""

from __future__ import annotations

import re

from kube.model import Requirement, parse_int64

__all__ = ["field_requirement_error", "label_key_error", "label_value_error", "requirement_error"]

_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_DNS_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS_SUBDOMAIN = re.compile(rf"{_DNS_LABEL}(\.{_DNS_LABEL})*")
_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")


def label_key_error(key: str) -> str | None:
    """``validation.IsQualifiedName``: ``[prefix/]name``, name at most 63 characters."""
    parts = key.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            return f"key {key!r}: prefix part must be non-empty"
        if len(prefix) > 253 or not _DNS_SUBDOMAIN.fullmatch(prefix):
            return f"key {key!r}: prefix part must be a DNS-1123 subdomain"
    else:
        return f"key {key!r}: a qualified name has at most one '/'"
    if not name:
        return f"key {key!r}: name part must be non-empty"
    if len(name) > 63 or not _NAME.fullmatch(name):
        return f"key {key!r}: name part must be at most 63 alphanumeric characters, '-', '_' or '.'"
    return None


def label_value_error(value: str) -> str | None:
    """``validation.IsValidLabelValue``: empty, or at most 63 characters of the label alphabet."""
    if len(value) > 63 or not _VALUE.fullmatch(value):
        return f"value {value!r} is not a valid label value"
    return None


def requirement_error(req: Requirement, *, label_selector: bool) -> str | None:
    """Why ``labels.NewRequirement`` refuses ``req`` (``Gt``/``Lt`` only in node selectors)."""
    error = label_key_error(req.key)
    if error is not None:
        return error
    op, values = req.operator, req.values
    if op in ("In", "NotIn"):
        if not values:
            return f"key {req.key!r}: values set can't be empty for '{op}'"
    elif op in ("Exists", "DoesNotExist"):
        if values:
            return f"key {req.key!r}: values set must be empty for '{op}'"
    elif op in ("Gt", "Lt") and not label_selector:
        if len(values) != 1:
            return f"key {req.key!r}: exactly one value is required for '{op}'"
        if parse_int64(values[0]) is None:
            return f"key {req.key!r}: the value for '{op}' must be an integer"
    else:
        return f"{op!r} is not a valid label selector operator"
    for value in values:
        error = label_value_error(value)
        if error is not None:
            return f"key {req.key!r}: {error}"
    return None


def field_requirement_error(req: Requirement) -> str | None:
    """Node selector ``matchFields``: ``In`` or ``NotIn`` with exactly one value."""
    if req.operator not in ("In", "NotIn"):
        return f"{req.operator!r} is not a valid field selector operator"
    if len(req.values) != 1:
        return f"field {req.key!r}: must have one element"
    return None

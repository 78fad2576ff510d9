"""Nodes: capacity, readiness, taints and the storage annotations."""

from __future__ import annotations

from kube.convert.errors import FieldError, Json
from kube.convert.fields import parse_time
from kube.convert.memo import Memo
from kube.convert.resources import resource_list
from kube.model import Node, Taint
from kube.names import SCALE_DOWN_DISABLED, StorageNames

__all__ = ["convert_node"]

_EMPTY: dict[str, str] = {}


def _int_label(value: object, what: str, node: str, warnings: list[str]) -> int | None:
    if value is None:
        return None
    text = str(value).strip()
    if text.isdigit():
        return int(text)
    warnings.append(f"Node/{node}: {what} {value!r} is not an integer number of bytes; treated as absent")
    return None


def convert_node(obj: Json, names: StorageNames, warnings: list[str], times: Memo[str, float] | None = None) -> Node:
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    name = str(meta.get("name") or "")
    if not name:
        raise FieldError("metadata.name", "required")
    labels = meta.get("labels") or {}
    annotations = meta.get("annotations") or _EMPTY
    capacity = resource_list(status.get("capacity"), "status.capacity")
    allocatable = resource_list(status.get("allocatable"), "status.allocatable") if status.get(
        "allocatable") else capacity
    ready = False
    ready_since = None
    seen_ready = False
    for i, cond in enumerate(status.get("conditions") or ()):
        if cond.get("type") == "Ready":
            seen_ready = True
            ready = cond.get("status") == "True"
            ready_since = parse_time(cond.get("lastTransitionTime"), f"status.conditions[{i}].lastTransitionTime",
                                     times)
    if not seen_ready:
        ready = False
    taints = tuple(
        Taint(str(t.get("key") or ""), str(t.get("value") or ""), str(t.get("effect") or ""))
        for t in (spec.get("taints") or ())
    )
    return Node(
        name=name,
        labels=labels,
        allocatable=allocatable,
        capacity=capacity,
        taints=taints,
        unschedulable=bool(spec.get("unschedulable")),
        ready=ready,
        ready_since=ready_since,
        created=parse_time(meta.get("creationTimestamp"), "metadata.creationTimestamp", times),
        deleting=meta.get("deletionTimestamp") is not None,
        provider_id=str(spec.get("providerID") or ""),
        free_local_bytes=_int_label(annotations.get(names.capacity_annotation), names.capacity_annotation, name,
                                    warnings),
        max_local_bytes=_int_label(labels.get(names.max_capacity_label), names.max_capacity_label, name,
                                   warnings),
        scale_down_disabled=annotations.get(SCALE_DOWN_DISABLED) == "true",  # exact, as upstream
        annotations=annotations,
    )



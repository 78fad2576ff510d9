"""Nodes: capacity, readiness, taints and the storage annotations."""

from __future__ import annotations

from collections.abc import Mapping

from kube.convert.errors import FieldError, Json
from kube.convert.fields import (
    as_bool,
    as_list,
    as_map,
    as_str,
    describe,
    name_of,
    parse_time,
    required_str,
    string_map,
)
from kube.convert.memo import Memo
from kube.convert.pods import TAINT_EFFECTS
from kube.convert.resources import resource_list
from kube.model import Node, Taint
from kube.names import DISRUPTION_COST, SCALE_DOWN_DISABLED, TOPOLVM_CAPACITY_PREFIX, StorageNames, annotation_int
from kube.quantity import INT64_MAX

__all__ = ["convert_node", "node_storage", "taints"]

_EMPTY: dict[str, str] = {}


def _int_label(value: str | None, what: str, node: str, warnings: list[str],
               meaning: str = "treated as absent") -> int | None:
    """The storage annotation/label as bytes. Per the storage semantics a value that is
    not an integer means "no capacity known" (the driver is not running there): a
    warning, not an error."""
    if value is None:
        return None
    text = value.strip()
    if text.isascii() and text.isdigit() and int(text) <= INT64_MAX:
        return int(text)
    warnings.append(f"Node/{node}: {what} {describe(value)} is not an integer number of bytes; {meaning}")
    return None


def taints(raw: object) -> tuple[Taint, ...]:
    """``spec.taints``, each checked (a key, an effect).

    An effect beyond the three this version knows is one a newer API server may hold:
    kept as written (``taint_notes`` warns), so kube-scheduler's filter, which acts on
    NoSchedule and NoExecute only, ignores it here too.
    """
    out = []
    for i, t in enumerate(as_list(raw, "spec.taints")):
        f = f"spec.taints[{i}]"
        t = as_map(t, f)
        key = required_str(t.get("key"), f"{f}.key")
        effect = as_str(t.get("effect"), f"{f}.effect")
        if not effect:
            raise FieldError(f"{f}.effect", f"empty taint effect (one of {', '.join(TAINT_EFFECTS)})")
        out.append(Taint(key, as_str(t.get("value"), f"{f}.value"), effect))
    return tuple(out)


def taint_notes(node: Node) -> list[str]:
    """Warnings for taints whose effect this version does not know (kept, never acted on)."""
    return [f"Node/{node.name}: spec.taints[{i}].effect: unknown taint effect {t.effect!r} (one of "
            f"{', '.join(TAINT_EFFECTS)} here): kept, and like kube-scheduler's filter it keeps no pod off"
            for i, t in enumerate(node.taints) if t.effect not in TAINT_EFFECTS]


def node_storage(name: str, labels: Mapping[str, str], annotations: Mapping[str, str], names: StorageNames,
                 warnings: list[str]) -> tuple[int | None, int | None]:
    """The local provisioner's free and total bytes; a warning for each storage value that is no number."""
    for key, value in annotations.items():
        if key.startswith(TOPOLVM_CAPACITY_PREFIX):
            # TopoLVM's free bytes per device class: a bad value means no capacity there.
            _int_label(value, key, name, warnings, "treated as no capacity")
    free = _int_label(annotations.get(names.capacity_annotation), names.capacity_annotation, name, warnings)
    most = _int_label(labels.get(names.max_capacity_label), names.max_capacity_label, name, warnings)
    return free, most


def convert_node(obj: Json, names: StorageNames, warnings: list[str], times: Memo[str, float] | None = None) -> Node:
    meta = as_map(obj.get("metadata"), "metadata")
    spec = as_map(obj.get("spec"), "spec")
    status = as_map(obj.get("status"), "status")
    name = name_of(meta)
    labels = string_map(meta.get("labels"), "metadata.labels")
    annotations = string_map(meta.get("annotations"), "metadata.annotations") or _EMPTY
    capacity = resource_list(status.get("capacity"), "status.capacity")
    raw_allocatable = status.get("allocatable")
    allocatable = capacity if raw_allocatable is None or raw_allocatable == {} else resource_list(
        raw_allocatable, "status.allocatable")
    ready = False
    ready_since = None
    for i, cond in enumerate(as_list(status.get("conditions"), "status.conditions")):
        f = f"status.conditions[{i}]"
        cond = as_map(cond, f)
        if as_str(cond.get("type"), f"{f}.type") == "Ready":
            ready = as_str(cond.get("status"), f"{f}.status") == "True"
            ready_since = parse_time(cond.get("lastTransitionTime"), f"{f}.lastTransitionTime", times)
    free, most = node_storage(name, labels, annotations, names, warnings)
    node = Node(
        name=name,
        labels=labels,
        allocatable=allocatable,
        capacity=capacity,
        taints=taints(spec.get("taints")),
        unschedulable=as_bool(spec.get("unschedulable"), "spec.unschedulable"),
        ready=ready,
        ready_since=ready_since,
        created=parse_time(meta.get("creationTimestamp"), "metadata.creationTimestamp", times),
        deleting=meta.get("deletionTimestamp") is not None
        and parse_time(meta.get("deletionTimestamp"), "metadata.deletionTimestamp", times) is not None,
        provider_id=as_str(spec.get("providerID"), "spec.providerID"),
        free_local_bytes=free,
        max_local_bytes=most,
        scale_down_disabled=annotations.get(SCALE_DOWN_DISABLED) == "true",  # exact, as upstream
        annotations=annotations,
        disruption_cost=annotation_int(annotations, DISRUPTION_COST),
    )
    warnings.extend(taint_notes(node))
    return node

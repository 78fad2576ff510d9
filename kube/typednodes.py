"""Nodes decoded straight into the model, as ``kube.typedpods`` does pods.

Scalars are typed in the Structs (msgspec checks them in C); taints and resource lists
stay undecoded bytes, converted once per distinct value by ``kube.convert.nodes``'
checked readers (the nodes of a group share them). Warnings (a storage annotation that
is not a number of bytes) are the node converter's own, word for word.

Whatever the Structs refuse, or the checks find wrong, raises, and the caller reads the
input through the dict path, which names the file, object and field; a result equals
``convert_node`` of the same object (``tests/kube/test_typed_decode.py``).
"""

from __future__ import annotations

import msgspec
from msgspec import Raw, Struct

from kube.convert.fields import parse_time
from kube.convert.memo import Memo, Memos
from kube.convert.nodes import node_storage, taints
from kube.convert.pods import TAINT_EFFECTS
from kube.convert.resources import resource_list
from kube.model import Node, Resources, Taint
from kube.names import DISRUPTION_COST, SCALE_DOWN_DISABLED, StorageNames, annotation_int
from kube.rawfields import ABSENT, Declined, raw_value

__all__ = ["NodeDecoder"]

_EMPTY: dict[str, str] = {}
_NO_RESOURCES = Resources()


# gc=False: short-lived decoding records holding strings and dicts of strings (no cycles).
class _Meta(Struct, frozen=True, gc=False):
    name: str | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    creationTimestamp: str | None = None  # noqa: N815 (the API's field names)
    deletionTimestamp: str | None = None  # noqa: N815


class _Spec(Struct, frozen=True, gc=False):
    taints: Raw = ABSENT
    unschedulable: bool | None = None
    providerID: str | None = None  # noqa: N815


class _Condition(Struct, frozen=True, gc=False):
    type: str | None = None
    status: str | None = None
    lastTransitionTime: str | None = None  # noqa: N815


class _Status(Struct, frozen=True, gc=False):
    capacity: Raw = ABSENT
    allocatable: Raw = ABSENT
    conditions: tuple[_Condition, ...] | None = None


_NO_META, _NO_SPEC, _NO_STATUS = _Meta(), _Spec(), _Status()


class _Node(Struct, frozen=True, gc=False):
    metadata: _Meta | None = None
    spec: _Spec | None = None
    status: _Status | None = None


class NodeDecoder:
    """JSON nodes into ``Node`` objects; bounded tables keyed by the undecoded bytes."""

    def __init__(self, names: StorageNames, memos: Memos) -> None:
        self.names = names
        self.memos = memos
        self._decode = msgspec.json.Decoder(_Node).decode
        self._resources: Memo[tuple[str, bytes], Resources | None] = Memo()
        self._taints: Memo[bytes, tuple[Taint, ...]] = Memo()

    def decode(self, raw: bytes | Raw, warnings: list[str]) -> Node:
        """The node in ``raw``; its warnings are appended to ``warnings`` (as ``convert_node`` does)."""
        doc = self._decode(raw)
        meta, spec, status = doc.metadata or _NO_META, doc.spec or _NO_SPEC, doc.status or _NO_STATUS
        name = meta.name
        if not name:
            raise Declined  # the dict path's "metadata.name: required"
        labels = meta.labels or {}
        annotations = meta.annotations or _EMPTY
        capacity = self._resource_list(status.capacity, "status.capacity") or _NO_RESOURCES
        # Absent, null or empty allocatable is the capacity (the dict path's rule).
        allocatable = self._resource_list(status.allocatable, "status.allocatable") or capacity
        ready, ready_since = False, None
        times = self.memos.times
        for cond in status.conditions or ():
            if cond.type == "Ready":
                ready = cond.status == "True"
                ready_since = parse_time(cond.lastTransitionTime, "lastTransitionTime", times)
        free, most = node_storage(name, labels, annotations, self.names, warnings)
        deleted = meta.deletionTimestamp
        return Node(
            name=name,
            labels=labels,
            allocatable=allocatable,
            capacity=capacity,
            taints=self._node_taints(spec.taints),
            unschedulable=bool(spec.unschedulable),
            ready=ready,
            ready_since=ready_since,
            created=parse_time(meta.creationTimestamp, "metadata.creationTimestamp", times),
            deleting=deleted is not None and parse_time(deleted, "metadata.deletionTimestamp", times) is not None,
            provider_id=spec.providerID or "",
            free_local_bytes=free,
            max_local_bytes=most,
            scale_down_disabled=annotations.get(SCALE_DOWN_DISABLED) == "true",
            annotations=annotations,
            disruption_cost=annotation_int(annotations, DISRUPTION_COST),
        )

    def _resource_list(self, raw: Raw, field: str) -> Resources | None:
        """The resource list in ``raw``, converted once per distinct bytes; None when absent, null or ``{}``."""
        key = (field, bytes(raw))
        cached = self._resources.get(key)
        if cached is None and key not in self._resources:
            value = raw_value(raw)
            cached = self._resources.put(key, None if value is None or value == {} else resource_list(value, field))
        return cached

    def _node_taints(self, raw: Raw) -> tuple[Taint, ...]:
        if not len(raw):
            return ()
        key = bytes(raw)
        cached = self._taints.get(key)
        if cached is None:
            cached = self._taints.put(key, taints(raw_value(raw)))
        if any(t.effect not in TAINT_EFFECTS for t in cached):
            raise Declined  # the dict path warns about the effect
        return cached

"""Pods decoded straight into the model: JSON bytes -> ``msgspec`` Structs -> ``Pod``.

Pods are three quarters of a snapshot's objects and most of its conversion time. Here
a pod is decoded into Structs whose scalar fields carry their types (a label value
that is not a string, a priority that is a float, fail in msgspec's C decoder), and
whose nested constraints (resources, ports, affinity, tolerations, spread, volumes,
owner references) stay undecoded ``Raw`` bytes. Equal bytes mean equal values, so
each distinct value is converted once, by the checked readers of ``kube.convert``,
and remembered in a bounded table keyed by its bytes: replicas of one workload cost a
few dictionary lookups and the ``Pod`` itself.

Anything unusual raises (``msgspec.ValidationError``, ``FieldError``, ``Declined``)
and the caller reads the input again through the ordinary dict path, whose one-line
error names the file, object and field; a result from here equals what
``kube.convert.convert_pod`` makes of the same object (the differential tests in
``tests/kube`` hold that, over broken inputs too).
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import Raw, Struct

from kube.convert.fields import INT32_MAX, as_int, parse_time
from kube.convert.memo import Memo, Memos
from kube.convert.pods import DAEMONSET_POD_ANNOTATION, controller_ref, pod_scheduling, pod_volumes
from kube.convert.resources import pod_requests
from kube.model import EMPTY_SCHEDULING, OwnerRef, Pod, PodScheduling, Resources, VolumeSource
from kube.names import MIRROR_ANNOTATION, POD_DELETION_COST, SAFE_TO_EVICT, SAFE_TO_EVICT_LOCAL_VOLUMES, annotation_int
from kube.quantity import parse_cpu_millis, parse_quantity
from kube.rawfields import ABSENT, Declined, decode_any, raw_value

__all__ = ["PodDecoder"]

_EMPTY: dict[str, str] = {}
_NO_NAMES: frozenset[str] = frozenset()
_NO_REQUESTS = Resources()
_NO_VOLUMES: tuple[tuple[str, ...], tuple[tuple[str, VolumeSource], ...], frozenset[str]] = ((), (), _NO_NAMES)


# gc=False: short-lived decoding records holding strings and dicts of strings (no cycles).
class _Meta(Struct, frozen=True, gc=False):
    name: str | None = None
    namespace: str | None = None
    uid: str | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    ownerReferences: Raw = ABSENT  # noqa: N815 (the API's field names)
    creationTimestamp: str | None = None  # noqa: N815
    deletionTimestamp: str | None = None  # noqa: N815


class _Resources(Struct, frozen=True, omit_defaults=True, gc=False):
    """Quantities as the API server writes them: strings (a number sends the pod to the dict path)."""

    requests: dict[str, str] | None = None
    limits: dict[str, str] | None = None


class _Container(Struct, frozen=True, gc=False):
    name: str | None = None
    image: str | None = None
    resources: _Resources | None = None
    ports: Raw = ABSENT
    restartPolicy: str | None = None  # noqa: N815


class _Spec(Struct, frozen=True, gc=False):
    containers: tuple[_Container, ...] | None = None
    initContainers: tuple[_Container, ...] | None = None  # noqa: N815
    overhead: Raw = ABSENT
    nodeSelector: Raw = ABSENT  # noqa: N815
    affinity: Raw = ABSENT
    tolerations: Raw = ABSENT
    topologySpreadConstraints: Raw = ABSENT  # noqa: N815
    volumes: Raw = ABSENT
    priority: int | None = None
    terminationGracePeriodSeconds: int | None = None  # noqa: N815
    nodeName: str | None = None  # noqa: N815
    restartPolicy: str | None = None  # noqa: N815


class _Condition(Struct, frozen=True, gc=False):
    type: str | None = None
    status: str | None = None
    reason: str | None = None


class _Status(Struct, frozen=True, gc=False):
    phase: str | None = None
    conditions: tuple[_Condition, ...] | None = None


_NO_META, _NO_SPEC, _NO_STATUS = _Meta(), _Spec(), _Status()


class _Pod(Struct, frozen=True, gc=False):
    metadata: _Meta | None = _NO_META
    spec: _Spec | None = _NO_SPEC
    status: _Status | None = _NO_STATUS


def _container(c: _Container) -> dict[str, Any]:
    resources = None if c.resources is None else msgspec.to_builtins(c.resources)
    return {"name": c.name, "image": c.image, "resources": resources, "ports": raw_value(c.ports),
            "restartPolicy": c.restartPolicy}


def _spec_dict(spec: _Spec, scheduling: bool) -> dict[str, Any]:
    """The parts of ``spec`` the requests (and, with ``scheduling``, the constraint) readers take."""
    out: dict[str, Any] = {
        "containers": None if spec.containers is None else [_container(c) for c in spec.containers],
        "initContainers": None if spec.initContainers is None else [_container(c) for c in spec.initContainers],
        "overhead": raw_value(spec.overhead),
    }
    if scheduling:
        out["nodeSelector"] = raw_value(spec.nodeSelector)
        out["affinity"] = raw_value(spec.affinity)
        out["tolerations"] = raw_value(spec.tolerations)
        out["topologySpreadConstraints"] = raw_value(spec.topologySpreadConstraints)
    return out


def _resources_key(res: _Resources | None) -> Any:
    if res is None:
        return None
    return (tuple(res.requests.items()) if res.requests is not None else None,
            tuple(res.limits.items()) if res.limits is not None else None)


class PodDecoder:
    """JSON pods into ``Pod`` objects, sharing a converter's memo tables and keeping its own.

    Every table is a bounded ``Memo`` keyed by undecoded bytes, so a decoder that lives
    as long as a watch does not grow.
    """

    def __init__(self, memos: Memos) -> None:
        self.memos = memos
        self._decode = msgspec.json.Decoder(_Pod).decode
        self._requests: Memo[Any, Resources] = Memo()
        self._scheduling: Memo[Any, PodScheduling] = Memo()
        self._owners: Memo[bytes, OwnerRef | None] = Memo()
        self._volumes: Memo[bytes, tuple[tuple[str, ...], tuple[tuple[str, VolumeSource], ...]]] = Memo()

    def decode(self, raw: bytes | Raw) -> Pod:
        """The pod in ``raw`` (one JSON object); raises when the dict path must read it instead."""
        return self.decode_keyed(raw)[0]

    def decode_keyed(self, raw: bytes | Raw) -> tuple[Pod, str]:
        """The pod and its namespace as written (``""`` when absent, where the model says ``default``)."""
        doc = self._decode(raw)
        meta, spec, status = doc.metadata or _NO_META, doc.spec or _NO_SPEC, doc.status or _NO_STATUS
        name = meta.name
        if not name:
            raise Declined  # the dict path's "metadata.name: required"
        namespace = meta.namespace or "default"
        labels = meta.labels or _EMPTY
        annotations = meta.annotations or _EMPTY
        claims, local, ephemeral = self._pod_volumes(spec.volumes, name)
        marked = False
        for cond in status.conditions or ():
            if cond.type == "PodScheduled":
                marked = cond.status == "False" and cond.reason == "Unschedulable"
        priority = spec.priority
        if priority is not None:
            as_int(priority, "spec.priority", minimum=-(2**31), maximum=INT32_MAX)
        grace = spec.terminationGracePeriodSeconds
        if grace is not None:
            as_int(grace, "spec.terminationGracePeriodSeconds")
        safe = annotations.get(SAFE_TO_EVICT)
        safe_local = annotations.get(SAFE_TO_EVICT_LOCAL_VOLUMES)
        times = self.memos.times
        created, deleted = meta.creationTimestamp, meta.deletionTimestamp
        return Pod(
            namespace,
            name,
            meta.uid or "",
            labels,
            self._owner(meta.ownerReferences),
            spec.nodeName or "",
            status.phase or "Pending",
            self._pod_requests(spec),
            self._pod_scheduling(spec, namespace, labels),
            claims,
            local,
            priority or 0,
            None if created is None else parse_time(created, "metadata.creationTimestamp", times),
            None if deleted is None else parse_time(deleted, "metadata.deletionTimestamp", times),
            30 if grace is None else grace,
            True if safe == "true" else False if safe == "false" else None,
            safe == "on-completion",
            frozenset(safe_local.split(",")) if safe_local else _NO_NAMES,
            MIRROR_ANNOTATION in annotations,
            marked,
            annotations.get(DAEMONSET_POD_ANNOTATION) == "true",
            ephemeral,
            spec.restartPolicy or "Always",
            annotation_int(annotations, POD_DELETION_COST),
        ), meta.namespace or ""

    def _owner(self, raw: Raw) -> OwnerRef | None:
        if not len(raw):
            return None
        key = bytes(raw)
        try:
            return self._owners[key]
        except KeyError:
            owner = controller_ref({"ownerReferences": decode_any(raw)}, self.memos)
            return self._owners.put(key, owner)

    def _pod_volumes(self, raw: Raw, pod_name: str
                     ) -> tuple[tuple[str, ...], tuple[tuple[str, VolumeSource], ...], frozenset[str]]:
        if not len(raw):
            return _NO_VOLUMES
        key = bytes(raw)
        cached = self._volumes.get(key)
        if cached is not None:
            return cached[0], cached[1], _NO_NAMES
        claims, local, ephemeral = pod_volumes(decode_any(raw), pod_name)
        if not ephemeral:  # ephemeral claims are named after the pod: not shared
            self._volumes.put(key, (claims, local))
        return claims, local, ephemeral

    def _pod_requests(self, spec: _Spec) -> Resources:
        containers = spec.containers or ()
        if len(containers) == 1 and spec.initContainers is None and not len(spec.overhead):
            # The common pod: one container asking for cpu and memory, as the dict path's
            # memo table keys it (``kube.convert.resources``), so both paths share it.
            res = containers[0].resources
            if res is None:
                return _NO_REQUESTS
            requests = res.requests
            if not res.limits and requests is not None and len(requests) == 2:
                cpu, memory = requests.get("cpu"), requests.get("memory")
                if cpu is not None and memory is not None:
                    # ``cpu_memory_requests`` inlined (both are strings here, so always memoized):
                    # a bad quantity raises and the dict path names it.
                    memo = self.memos.requests
                    pair = (cpu, memory)
                    cached = memo.get(pair)
                    if cached is None:
                        cached = memo.put(pair, Resources(parse_cpu_millis(cpu), parse_quantity(memory)))
                    return cached
        key = (tuple(_resources_key(c.resources) for c in containers),
               tuple((_resources_key(c.resources), c.restartPolicy) for c in spec.initContainers or ()),
               bytes(spec.overhead))
        cached = self._requests.get(key)
        if cached is None:
            cached = self._requests.put(key, pod_requests(_spec_dict(spec, False), self.memos.requests))
        return cached

    def _pod_scheduling(self, spec: _Spec, namespace: str, labels: dict[str, str]) -> PodScheduling:
        selector, affinity, tolerations, spread = (spec.nodeSelector, spec.affinity, spec.tolerations,
                                                   spec.topologySpreadConstraints)
        containers = spec.containers
        if (containers is not None and len(containers) == 1 and not len(containers[0].ports)
                and spec.initContainers is None
                and not (len(selector) or len(affinity) or len(tolerations) or len(spread))):
            return EMPTY_SCHEDULING  # the common pod, without the lists below
        ports = [c.ports for c in spec.containers or () if len(c.ports)]
        sidecar_ports = [(c.ports, c.restartPolicy) for c in spec.initContainers or () if len(c.ports)]
        if not (ports or sidecar_ports or len(selector) or len(affinity) or len(tolerations) or len(spread)):
            return EMPTY_SCHEDULING
        key = (namespace, tuple(bytes(p) for p in ports), tuple((bytes(p), r) for p, r in sidecar_ports),
               bytes(selector), bytes(affinity), bytes(tolerations), bytes(spread),
               # matchLabelKeys read the pod's own labels: then they are part of what is converted.
               tuple(labels.items()) if len(spread) else ())
        cached = self._scheduling.get(key)
        if cached is None:
            cached = self._scheduling.put(key, pod_scheduling(_spec_dict(spec, True), namespace, self.memos, labels))
        if cached.notes:
            raise Declined  # read leniently: the dict path's converter warns about it
        return cached


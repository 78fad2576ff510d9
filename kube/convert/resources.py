"""Resource lists and a pod's effective requests, as kube-scheduler computes them."""

from __future__ import annotations

from typing import Any

from kube.convert.errors import FieldError, Json
from kube.convert.fields import cpu as _cpu
from kube.convert.fields import qty as _qty
from kube.convert.memo import Memo
from kube.model import Resources

__all__ = ["pod_requests", "resource_list"]


def resource_list(raw: object, field: str) -> Resources:
    """A ``ResourceList`` (``{cpu: 2, memory: 4Gi, ...}``) as integers."""
    if not raw:
        return Resources()
    if not isinstance(raw, dict):
        raise FieldError(field, f"expected a map of quantities, got {raw!r}")
    cpu = memory = eph = pods = 0
    extended: list[tuple[str, int]] = []
    for name, value in raw.items():
        if name == "cpu":
            cpu = _cpu(value, f"{field}.cpu")
        elif name == "memory":
            memory = _qty(value, f"{field}.memory")
        elif name == "ephemeral-storage":
            eph = _qty(value, f"{field}.ephemeral-storage")
        elif name == "pods":
            pods = _qty(value, f"{field}.pods")
        elif "/" in name or name.startswith(("hugepages-", "attachable-volumes-")):
            # kube-scheduler's scalar resources: extended and prefixed native resources,
            # huge pages and attachable volumes, each fitted like cpu and memory.
            extended.append((name, _qty(value, f"{field}.{name}")))
    return Resources(cpu, memory, eph, pods, tuple(sorted(extended)))


def _add(a: Resources, b: Resources) -> Resources:
    if not b.extended and not a.extended:
        return Resources(
            a.cpu + b.cpu, a.memory + b.memory, a.ephemeral_storage + b.ephemeral_storage, a.pods + b.pods
        )
    ext = dict(a.extended)
    for k, v in b.extended:
        ext[k] = ext.get(k, 0) + v
    return Resources(
        a.cpu + b.cpu,
        a.memory + b.memory,
        a.ephemeral_storage + b.ephemeral_storage,
        a.pods + b.pods,
        tuple(sorted(ext.items())),
    )


def _max(a: Resources, b: Resources) -> Resources:
    ext = dict(a.extended)
    for k, v in b.extended:
        ext[k] = max(ext.get(k, 0), v)
    return Resources(
        max(a.cpu, b.cpu),
        max(a.memory, b.memory),
        max(a.ephemeral_storage, b.ephemeral_storage),
        max(a.pods, b.pods),
        tuple(sorted(ext.items())),
    )


def _container_requests(container: Json, field: str, memo: Memo[tuple[Any, ...], Resources] | None) -> Resources:
    res = container.get("resources")
    if not res:
        return Resources()
    requests = res.get("requests")
    limits = res.get("limits")
    if limits:
        # API-server defaulting: a limit without a request is also the request.
        merged = dict(limits)
        merged.update(requests or {})
        requests = merged
    if not requests:
        return Resources()
    if len(requests) <= 2 and "cpu" in requests and "memory" in requests:
        key = (requests["cpu"], requests["memory"])
        cached = memo.get(key) if memo is not None else None
        if cached is None:
            cached = Resources(
                _cpu(requests["cpu"], f"{field}.resources.requests.cpu"),
                _qty(requests["memory"], f"{field}.resources.requests.memory"),
            )
            if memo is not None:
                memo.put(key, cached)
        return cached
    return resource_list(requests, f"{field}.resources.requests")


def pod_requests(spec: Json, memo: Memo[tuple[Any, ...], Resources] | None = None) -> Resources:
    """Effective requests as kube-scheduler computes them.

    Containers add up; an init container needs its own request plus the sidecars
    (restartable init containers) started before it; sidecars run for the pod's
    life and add to the containers; pod overhead adds on top.
    """
    containers: list[Json] = spec.get("containers") or []
    if len(containers) == 1 and not spec.get("initContainers") and not spec.get("overhead"):
        return _container_requests(containers[0], "spec.containers[0]", memo)
    total = Resources()
    for i, c in enumerate(containers):
        total = _add(total, _container_requests(c, f"spec.containers[{i}]", memo))
    sidecars = Resources()
    init_peak = Resources()
    for i, c in enumerate(spec.get("initContainers") or ()):
        req = _container_requests(c, f"spec.initContainers[{i}]", memo)
        if c.get("restartPolicy") == "Always":
            sidecars = _add(sidecars, req)
            init_peak = _max(init_peak, sidecars)
        else:
            init_peak = _max(init_peak, _add(req, sidecars))
    total = _max(_add(total, sidecars), init_peak)
    if spec.get("overhead"):
        total = _add(total, resource_list(spec["overhead"], "spec.overhead"))
    return total



"""Resource lists and a pod's effective requests, as kube-scheduler computes them."""

from __future__ import annotations

from typing import Any

from kube.convert.errors import FieldError, Json
from kube.convert.fields import as_list, as_map, as_str, describe
from kube.convert.fields import cpu as _cpu
from kube.convert.fields import qty as _qty
from kube.convert.memo import Memo
from kube.model import Resources

__all__ = ["cpu_memory_requests", "pod_requests", "resource_list"]


def resource_list(raw: object, field: str) -> Resources:
    """A ``ResourceList`` (``{cpu: 2, memory: 4Gi, ...}``) as integers."""
    if not raw:
        if raw is None or raw == {}:
            return Resources()
        raise FieldError(field, f"expected a map of quantities, got {describe(raw)}")
    if type(raw) is not dict:
        raise FieldError(field, f"expected a map of quantities, got {describe(raw)}")
    cpu = memory = eph = pods = 0
    extended: list[tuple[str, int]] = []
    for name, value in raw.items():
        if type(name) is not str:
            raise FieldError(field, f"resource name {describe(name)} is not a string")
        if name == "cpu":
            cpu = _cpu(value, f"{field}.cpu")
        elif name == "memory":
            memory = _qty(value, f"{field}.memory")
        elif name == "ephemeral-storage":
            eph = _qty(value, f"{field}.ephemeral-storage")
        elif name == "pods":
            pods = _qty(value, f"{field}.pods")
        else:
            amount = _qty(value, f"{field}.{name}")
            if "/" in name or name.startswith(("hugepages-", "attachable-volumes-")):
                # kube-scheduler's scalar resources: extended and prefixed native resources,
                # huge pages and attachable volumes, each fitted like cpu and memory.
                extended.append((name, amount))
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


def _container_requests(container: object, field: str, memo: Memo[tuple[Any, ...], Resources] | None) -> Resources:
    if type(container) is not dict:
        raise FieldError(field, f"expected a container (a map), got {describe(container)}")
    for attribute in ("name", "image"):
        text = container.get(attribute)
        if text is not None and type(text) is not str:
            raise FieldError(f"{field}.{attribute}", f"expected a string, got {describe(text)}")
    res = container.get("resources")
    if not res:
        as_map(res, f"{field}.resources")
        return Resources()
    if type(res) is not dict:
        as_map(res, f"{field}.resources")
    requests = res.get("requests")
    if type(requests) is not dict:
        requests = as_map(requests, f"{field}.resources.requests")
    limits = res.get("limits")
    if limits is not None:
        limits = as_map(limits, f"{field}.resources.limits")
    if limits:
        # Limits are validated whole; a limit without a request is also the request
        # (API-server defaulting).
        resource_list(limits, f"{field}.resources.limits")
        merged = dict(limits)
        merged.update(requests)
        requests = merged
    if not requests:
        return Resources()
    if len(requests) <= 2 and "cpu" in requests and "memory" in requests:
        return cpu_memory_requests(requests["cpu"], requests["memory"], field, memo)
    return resource_list(requests, f"{field}.resources.requests")


def cpu_memory_requests(cpu: object, memory: object, field: str,
                        memo: Memo[tuple[Any, ...], Resources] | None) -> Resources:
    """A container asking for cpu and memory only (most do), remembered per pair of strings.

    ``field`` is the container's path (``spec.containers[0]``). Only strings are memoized:
    ``1 == 1.0 == True`` as dict keys, but not as quantities.
    """
    key = (cpu, memory) if type(cpu) is str and type(memory) is str else None
    cached = memo.get(key) if memo is not None and key is not None else None
    if cached is None:
        cached = Resources(
            _cpu(cpu, f"{field}.resources.requests.cpu"),
            _qty(memory, f"{field}.resources.requests.memory"),
        )
        if memo is not None and key is not None:
            memo.put(key, cached)
    return cached


def pod_requests(spec: Json, memo: Memo[tuple[Any, ...], Resources] | None = None) -> Resources:
    """Effective requests as kube-scheduler computes them.

    Containers add up; an init container needs its own request plus the sidecars
    (restartable init containers) started before it; sidecars run for the pod's
    life and add to the containers; pod overhead adds on top.
    """
    containers = spec.get("containers")
    if type(containers) is not list:
        containers = as_list(containers, "spec.containers")
    init = spec.get("initContainers")
    if len(containers) == 1 and not init and not spec.get("overhead"):
        if init is not None:
            as_list(init, "spec.initContainers")
        return _container_requests(containers[0], "spec.containers[0]", memo)
    total = Resources()
    for i, c in enumerate(containers):
        total = _add(total, _container_requests(c, f"spec.containers[{i}]", memo))
    sidecars = Resources()
    init_peak = Resources()
    for i, c in enumerate(as_list(init, "spec.initContainers")):
        req = _container_requests(c, f"spec.initContainers[{i}]", memo)
        if as_str(c.get("restartPolicy"), f"spec.initContainers[{i}].restartPolicy") == "Always":
            sidecars = _add(sidecars, req)
            init_peak = _max(init_peak, sidecars)
        else:
            init_peak = _max(init_peak, _add(req, sidecars))
    total = _max(_add(total, sidecars), init_peak)
    if spec.get("overhead"):
        total = _add(total, resource_list(spec["overhead"], "spec.overhead"))
    return total

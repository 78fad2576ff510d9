"""Pods: identity, volumes, owners, requests and the scheduling constraints, interned."""

from __future__ import annotations

from typing import Any

from kube.convert.errors import FieldError, Json
from kube.convert.fields import parse_time
from kube.convert.memo import Memos
from kube.convert.resources import pod_requests
from kube.convert.selectors import affinity_terms, label_selector, node_selector
from kube.model import (
    EMPTY_SCHEDULING,
    HostPort,
    OwnerRef,
    Pod,
    PodScheduling,
    SpreadConstraint,
    Toleration,
    VolumeSource,
)
from kube.names import MIRROR_ANNOTATION, SAFE_TO_EVICT, SAFE_TO_EVICT_LOCAL_VOLUMES

__all__ = ["convert_pod", "pod_scheduling"]

_EMPTY: dict[str, str] = {}
def _freeze(value: Any) -> Any:
    if isinstance(value, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    return value


def pod_scheduling(spec: Json, namespace: str, memos: Memos | None = None) -> PodScheduling:
    """The pod's filter-relevant constraints, interned (equal constraints, one object)."""
    selector = spec.get("nodeSelector")
    affinity = spec.get("affinity")
    tolerations = spec.get("tolerations")
    ports = None
    for c in spec.get("containers") or ():
        for p in c.get("ports") or ():
            if p.get("hostPort"):
                ports = True
    spread = spec.get("topologySpreadConstraints")
    if not (selector or affinity or tolerations or ports or spread):
        return EMPTY_SCHEDULING
    key = (namespace, _freeze(selector), _freeze(affinity), _freeze(tolerations), ports and _freeze(
        spec.get("containers")), _freeze(spread))
    memo = memos.scheduling if memos is not None else None
    cached = memo.get(key) if memo is not None else None
    if cached is not None:
        return cached
    host_ports = []
    for i, c in enumerate(spec.get("containers") or ()):
        for j, p in enumerate(c.get("ports") or ()):
            if p.get("hostPort"):
                try:
                    port = int(p["hostPort"])
                except (TypeError, ValueError):
                    raise FieldError(f"spec.containers[{i}].ports[{j}].hostPort", "not a port number") from None
                host_ports.append(HostPort(str(p.get("protocol") or "TCP"), str(p.get("hostIP") or ""), port))
    tol = tuple(
        Toleration(str(t.get("key") or ""), str(t.get("operator") or "Equal"), str(t.get("value") or ""),
                   str(t.get("effect") or ""))
        for t in (tolerations or ())
    )
    node_aff = pod_aff = anti = None
    if affinity:
        node_aff = (affinity.get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
        pod_aff = (affinity.get("podAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
        anti = (affinity.get("podAntiAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
    constraints = []
    for i, c in enumerate(spread or ()):
        if c.get("whenUnsatisfiable", "DoNotSchedule") != "DoNotSchedule":
            continue
        f = f"spec.topologySpreadConstraints[{i}]"
        constraints.append(
            SpreadConstraint(
                max_skew=int(c.get("maxSkew") or 1),
                topology_key=str(c.get("topologyKey") or ""),
                selector=label_selector(c.get("labelSelector"), f"{f}.labelSelector"),
                min_domains=int(c.get("minDomains") or 1),
                node_affinity_policy=str(c.get("nodeAffinityPolicy") or "Honor"),
                node_taints_policy=str(c.get("nodeTaintsPolicy") or "Ignore"),
            )
        )
    cached = PodScheduling(
        node_selector=tuple(sorted((str(k), str(v)) for k, v in (selector or {}).items())),
        required_affinity=node_selector(node_aff, "spec.affinity.nodeAffinity.required"),
        tolerations=tol,
        host_ports=tuple(host_ports),
        affinity=affinity_terms(pod_aff, namespace, "spec.affinity.podAffinity.required"),
        anti_affinity=affinity_terms(anti, namespace, "spec.affinity.podAntiAffinity.required"),
        spread=tuple(constraints),
    )
    if memo is not None:
        memo.put(key, cached)
    return cached


def _controller_ref(meta: Json, memos: Memos | None) -> OwnerRef | None:
    refs = meta.get("ownerReferences")
    if not refs:
        return None
    for ref in refs:
        if ref.get("controller"):
            key = (ref.get("kind") or "", ref.get("name") or "", ref.get("uid") or "")
            owner = memos.owners.get(key) if memos is not None else None
            if owner is None:
                owner = OwnerRef(key[0], key[1], key[2], ref.get("apiVersion") or "")
                if memos is not None:
                    memos.owners.put(key, owner)
            return owner
    return None


def convert_pod(obj: Json, namespace_default: str = "default", memos: Memos | None = None) -> Pod:
    """One ``Pod``; ``memos`` (a converter's) shares repeated values between pods."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    namespace = meta.get("namespace") or namespace_default
    annotations = meta.get("annotations") or _EMPTY
    claims: tuple[str, ...] = ()
    local: tuple[tuple[str, VolumeSource], ...] = ()
    volumes = spec.get("volumes")
    if volumes:
        claim_list = []
        local_list = []
        for v in volumes:
            pvc = v.get("persistentVolumeClaim")
            if pvc is not None:
                claim_list.append(str(pvc.get("claimName")))
            elif "hostPath" in v:
                local_list.append((str(v.get("name")), VolumeSource.HOST_PATH))
            elif "emptyDir" in v and (v.get("emptyDir") or {}).get("medium") != "Memory":
                local_list.append((str(v.get("name")), VolumeSource.EMPTY_DIR))
            elif "ephemeral" in v:
                claim_list.append(f"{meta.get('name')}-{v.get('name')}")
        claims, local = tuple(claim_list), tuple(local_list)
    marked = False
    for cond in status.get("conditions") or ():
        if cond.get("type") == "PodScheduled":
            marked = cond.get("status") == "False" and cond.get("reason") == "Unschedulable"
    safe = annotations.get(SAFE_TO_EVICT)
    safe_local = annotations.get(SAFE_TO_EVICT_LOCAL_VOLUMES)
    priority = spec.get("priority")
    created = meta.get("creationTimestamp")
    deleted = meta.get("deletionTimestamp")
    times = memos.times if memos is not None else None
    return Pod(
        namespace=namespace,
        name=str(meta.get("name") or ""),
        uid=str(meta.get("uid") or ""),
        labels=meta.get("labels") or _EMPTY,
        owner=_controller_ref(meta, memos),
        node_name=str(spec.get("nodeName") or ""),
        phase=str(status.get("phase") or "Pending"),
        requests=pod_requests(spec, memos.requests if memos is not None else None),
        scheduling=pod_scheduling(spec, namespace, memos),
        claims=claims,
        local_volumes=local,
        priority=int(priority) if priority is not None else 0,
        created=parse_time(created, "metadata.creationTimestamp", times) if created else None,
        deleted=parse_time(deleted, "metadata.deletionTimestamp", times) if deleted else None,
        grace_seconds=int(spec.get("terminationGracePeriodSeconds") or 30),
        safe_to_evict=None if safe is None else str(safe).lower() == "true",
        safe_to_evict_local_volumes=frozenset(
            s.strip() for s in str(safe_local).split(",") if s.strip()) if safe_local else frozenset(),
        is_mirror=MIRROR_ANNOTATION in annotations,
        marked_unschedulable=marked,
    )



"""Pods: identity, volumes, owners, requests and the scheduling constraints, interned."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kube.convert.errors import FieldError, Json
from kube.convert.fields import parse_time
from kube.convert.memo import Memos
from kube.convert.resources import pod_requests
from kube.convert.selectors import affinity_error, affinity_terms, label_selector, node_selector
from kube.model import (
    EMPTY_SCHEDULING,
    HostPort,
    LabelSelector,
    OwnerRef,
    Pod,
    PodScheduling,
    Requirement,
    SpreadConstraint,
    Toleration,
    VolumeSource,
)
from kube.names import MIRROR_ANNOTATION, SAFE_TO_EVICT, SAFE_TO_EVICT_LOCAL_VOLUMES

#: Upstream ``pod_util.DaemonSetPodAnnotationKey``: a pod to treat as a DaemonSet's.
DAEMONSET_POD_ANNOTATION = "cluster-autoscaler.kubernetes.io/daemonset-pod"

__all__ = ["convert_pod", "pod_scheduling"]

_EMPTY: dict[str, str] = {}
#: Shared by every pod without such names: an empty frozenset per pod costs 30 MB at 150,000 pods.
_NO_NAMES: frozenset[str] = frozenset()


def _freeze(value: Any) -> Any:
    if isinstance(value, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    return value


def _port_containers(spec: Json) -> list[tuple[str, Json]]:
    """Containers whose host ports the pod holds: app containers and sidecars.

    Restartable init containers (``restartPolicy: Always``) run for the pod's life, so
    their host ports count like an app container's (kube-scheduler's NodePorts).
    """
    out = [(f"spec.containers[{i}]", c) for i, c in enumerate(spec.get("containers") or ())]
    out += [(f"spec.initContainers[{i}]", c) for i, c in enumerate(spec.get("initContainers") or ())
            if c.get("restartPolicy") == "Always"]
    return out


def _spread_selector(c: Json, labels: Mapping[str, str], field: str) -> LabelSelector | None:
    """``labelSelector`` with ``matchLabelKeys`` merged in from the pod's own labels, as the scheduler does."""
    selector = label_selector(c.get("labelSelector"), f"{field}.labelSelector")
    keys = c.get("matchLabelKeys") or ()
    extra = tuple(Requirement(str(k), "In", (str(labels[k]),)) for k in keys if k in labels)
    if selector is None or not extra:
        return selector  # no selector selects nothing, merged or not
    return LabelSelector((*selector.requirements, *extra), selector.error)


def pod_scheduling(spec: Json, namespace: str, memos: Memos | None = None,
                   labels: Mapping[str, str] | None = None) -> PodScheduling:
    """The pod's filter-relevant constraints, interned (equal constraints, one object)."""
    labels = labels or _EMPTY
    selector = spec.get("nodeSelector")
    affinity = spec.get("affinity")
    tolerations = spec.get("tolerations")
    ports = False
    for c in spec.get("containers") or ():
        for p in c.get("ports") or ():
            if p.get("hostPort"):
                ports = True
    if not ports and spec.get("initContainers"):
        ports = any(p.get("hostPort") for _, c in _port_containers(spec) for p in c.get("ports") or ())
    spread = spec.get("topologySpreadConstraints")
    if not (selector or affinity or tolerations or ports or spread):
        return EMPTY_SCHEDULING
    label_keys = tuple(sorted({str(k) for c in spread or () for k in c.get("matchLabelKeys") or ()}))
    containers = _port_containers(spec) if ports else []
    key = (namespace, _freeze(selector), _freeze(affinity), _freeze(tolerations),
           ports and _freeze([c for _, c in containers]), _freeze(spread),
           tuple(labels.get(k) for k in label_keys))
    memo = memos.scheduling if memos is not None else None
    cached = memo.get(key) if memo is not None else None
    if cached is not None:
        return cached
    host_ports = []
    for where, c in containers:
        for j, p in enumerate(c.get("ports") or ()):
            if p.get("hostPort"):
                try:
                    port = int(p["hostPort"])
                except (TypeError, ValueError):
                    raise FieldError(f"{where}.ports[{j}].hostPort", "not a port number") from None
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
                selector=_spread_selector(c, labels, f),
                min_domains=int(c.get("minDomains") or 1),
                node_affinity_policy=str(c.get("nodeAffinityPolicy") or "Honor"),
                node_taints_policy=str(c.get("nodeTaintsPolicy") or "Ignore"),
            )
        )
    required = affinity_terms(pod_aff, namespace, "spec.affinity.podAffinity.required")
    required_anti = affinity_terms(anti, namespace, "spec.affinity.podAntiAffinity.required")
    # Terms kube-scheduler cannot parse: the pod fits nowhere, and as an existing pod
    # its unparsable terms are dropped (framework.PodInfo keeps none of them).
    parse_error = None
    spread_error = next((c.selector.error for c in constraints if c.selector is not None and c.selector.error), None)
    affinity_problem, anti_problem = affinity_error(required), affinity_error(required_anti)
    if affinity_problem is not None:
        required, parse_error = (), f"requiredAffinityTerms: {affinity_problem}"
    if anti_problem is not None:
        required_anti = ()
        parse_error = parse_error or f"requiredAntiAffinityTerms: {anti_problem}"
    if spread_error is not None:
        parse_error = parse_error or f"topologySpreadConstraints: {spread_error}"
    cached = PodScheduling(
        node_selector=tuple(sorted((str(k), str(v)) for k, v in (selector or {}).items())),
        required_affinity=node_selector(node_aff, "spec.affinity.nodeAffinity.required"),
        tolerations=tol,
        host_ports=tuple(host_ports),
        affinity=required,
        anti_affinity=required_anti,
        spread=tuple(constraints),
        parse_error=parse_error,
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
    labels = meta.get("labels") or _EMPTY
    annotations = meta.get("annotations") or _EMPTY
    claims: tuple[str, ...] = ()
    ephemeral = _NO_NAMES
    local: tuple[tuple[str, VolumeSource], ...] = ()
    volumes = spec.get("volumes")
    if volumes:
        claim_list = []
        ephemeral_list = []
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
                # The ephemeral volume controller names the claim <pod>-<volume>.
                ephemeral_list.append(f"{meta.get('name')}-{v.get('name')}")
                claim_list.append(ephemeral_list[-1])
        claims, local = tuple(claim_list), tuple(local_list)
        if ephemeral_list:
            ephemeral = frozenset(ephemeral_list)
    marked = False
    for cond in status.get("conditions") or ():
        if cond.get("type") == "PodScheduled":
            marked = cond.get("status") == "False" and cond.get("reason") == "Unschedulable"
    safe = annotations.get(SAFE_TO_EVICT)
    safe_local = annotations.get(SAFE_TO_EVICT_LOCAL_VOLUMES)
    priority = spec.get("priority")
    created = meta.get("creationTimestamp")
    deleted = meta.get("deletionTimestamp")
    grace = spec.get("terminationGracePeriodSeconds")
    times = memos.times if memos is not None else None
    return Pod(
        namespace=namespace,
        name=str(meta.get("name") or ""),
        uid=str(meta.get("uid") or ""),
        labels=labels,
        owner=_controller_ref(meta, memos),
        node_name=str(spec.get("nodeName") or ""),
        phase=str(status.get("phase") or "Pending"),
        requests=pod_requests(spec, memos.requests if memos is not None else None),
        scheduling=pod_scheduling(spec, namespace, memos, labels),
        claims=claims,
        local_volumes=local,
        priority=int(priority) if priority is not None else 0,
        created=parse_time(created, "metadata.creationTimestamp", times) if created else None,
        deleted=parse_time(deleted, "metadata.deletionTimestamp", times) if deleted else None,
        # 0 is an immediate kill, not "unset": 30 s is the default only when absent.
        grace_seconds=30 if grace is None else int(grace),
        # Upstream compares the strings exactly: only "true" and "false" mean anything
        # ("on-completion" and "True" are neither).
        safe_to_evict=True if safe == "true" else False if safe == "false" else None,
        evict_on_completion=safe == "on-completion",
        # Split on commas and nothing else, as upstream: " data" names no volume.
        safe_to_evict_local_volumes=frozenset(str(safe_local).split(",")) if safe_local else _NO_NAMES,
        is_mirror=MIRROR_ANNOTATION in annotations,
        marked_unschedulable=marked,
        daemonset_annotation=annotations.get(DAEMONSET_POD_ANNOTATION) == "true",
        ephemeral_claims=ephemeral,
        restart_policy=spec.get("restartPolicy") or "Always",
    )



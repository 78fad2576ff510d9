"""Kubernetes JSON -> snapshot model, once, at the edge.

Only the fields the decision reads are parsed. Bad input raises ``InputError``
naming the source, the object (``kind/namespace/name``) and the field; the CLI
turns it into one line on stderr and exit status 2. Converting ~200,000 objects
is on the critical path of ``plan``, so the pod converter avoids per-field
helpers on the common path and memoizes repeated values.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kube.model import (
    EMPTY_SCHEDULING,
    BindingMode,
    ClusterObjects,
    Controller,
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    HostPort,
    LabelSelector,
    Node,
    NodeGroupSpec,
    NodeSelector,
    NodeSelectorTerm,
    OwnerRef,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    PodAffinityTerm,
    PodDisruptionBudget,
    PodScheduling,
    Requirement,
    Resources,
    SpreadConstraint,
    StorageClass,
    Taint,
    Toleration,
    VolumeSource,
)
from kube.names import (
    MIRROR_ANNOTATION,
    PRIORITY_CONFIGMAP,
    SAFE_TO_EVICT,
    SAFE_TO_EVICT_LOCAL_VOLUMES,
    SCALE_DOWN_DISABLED,
    StorageNames,
)
from kube.quantity import QuantityError, parse_cpu_millis, parse_quantity

__all__ = ["Converter", "FieldError", "InputError", "object_ref"]

Json = dict[str, Any]

NODE_GROUP_KIND = "NodeGroup"
NODE_GROUP_API = "autoscaler.storage.dev/v1alpha1"


class InputError(Exception):
    """Bad input, reported as one line naming file, object and field."""

    def __init__(self, source: str, obj: str, field: str, message: str) -> None:
        self.source, self.obj, self.field, self.message = source, obj, field, message
        parts = [p for p in (source, obj, field) if p]
        super().__init__(": ".join([*parts, message]))


class FieldError(Exception):
    """Raised inside converters; ``Converter.add`` adds source and object."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field, self.message = field, message


def object_ref(obj: Mapping[str, Any]) -> str:
    raw_meta = obj.get("metadata")
    meta: Mapping[str, Any] = raw_meta if isinstance(raw_meta, dict) else {}
    kind = obj.get("kind") or "?"
    name = meta.get("name") or "?"
    namespace = meta.get("namespace")
    return f"{kind}/{namespace}/{name}" if namespace else f"{kind}/{name}"


def _cpu(value: object, field: str) -> int:
    try:
        return parse_cpu_millis(value)
    except QuantityError as exc:
        raise FieldError(field, str(exc)) from None


def _qty(value: object, field: str) -> int:
    try:
        return parse_quantity(value)
    except QuantityError as exc:
        raise FieldError(field, str(exc)) from None


_TIMES: dict[str, float] = {}


def parse_time(value: object, field: str) -> float | None:
    """RFC 3339 -> seconds since the epoch (None when absent)."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise FieldError(field, f"{value!r} is not an RFC 3339 time")
    cached = _TIMES.get(value)
    if cached is None:
        try:
            parsed = _dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise FieldError(field, f"{value!r} is not an RFC 3339 time") from None
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=_dt.UTC)
        cached = _TIMES[value] = parsed.timestamp()
    return cached


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
        elif "/" in name and not name.startswith(("hugepages-", "attachable-volumes-")):
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


_REQ_CACHE: dict[tuple[Any, ...], Resources] = {}


def _container_requests(container: Json, field: str) -> Resources:
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
        cached = _REQ_CACHE.get(key)
        if cached is None:
            cached = Resources(
                _cpu(requests["cpu"], f"{field}.resources.requests.cpu"),
                _qty(requests["memory"], f"{field}.resources.requests.memory"),
            )
            if len(_REQ_CACHE) < 100_000:
                _REQ_CACHE[key] = cached
        return cached
    return resource_list(requests, f"{field}.resources.requests")


def pod_requests(spec: Json) -> Resources:
    """Effective requests as kube-scheduler computes them.

    Containers add up; an init container needs its own request plus the sidecars
    (restartable init containers) started before it; sidecars run for the pod's
    life and add to the containers; pod overhead adds on top.
    """
    containers: list[Json] = spec.get("containers") or []
    if len(containers) == 1 and not spec.get("initContainers") and not spec.get("overhead"):
        return _container_requests(containers[0], "spec.containers[0]")
    total = Resources()
    for i, c in enumerate(containers):
        total = _add(total, _container_requests(c, f"spec.containers[{i}]"))
    sidecars = Resources()
    init_peak = Resources()
    for i, c in enumerate(spec.get("initContainers") or ()):
        req = _container_requests(c, f"spec.initContainers[{i}]")
        if c.get("restartPolicy") == "Always":
            sidecars = _add(sidecars, req)
            init_peak = _max(init_peak, sidecars)
        else:
            init_peak = _max(init_peak, _add(req, sidecars))
    total = _max(_add(total, sidecars), init_peak)
    if spec.get("overhead"):
        total = _add(total, resource_list(spec["overhead"], "spec.overhead"))
    return total


def _requirements(raw: Iterable[Json] | None, field: str) -> tuple[Requirement, ...]:
    out = []
    for i, expr in enumerate(raw or ()):
        op = expr.get("operator")
        if op not in ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"):
            raise FieldError(f"{field}[{i}].operator", f"unknown operator {op!r}")
        values = tuple(str(v) for v in (expr.get("values") or ()))
        out.append(Requirement(str(expr.get("key", "")), op, values))
    return tuple(out)


def node_selector(raw: Json | None, field: str) -> NodeSelector | None:
    if raw is None:
        return None
    terms = []
    for i, term in enumerate(raw.get("nodeSelectorTerms") or ()):
        terms.append(
            NodeSelectorTerm(
                _requirements(term.get("matchExpressions"), f"{field}.nodeSelectorTerms[{i}].matchExpressions"),
                _requirements(term.get("matchFields"), f"{field}.nodeSelectorTerms[{i}].matchFields"),
            )
        )
    return NodeSelector(tuple(terms))


def label_selector(raw: Json | None, field: str) -> LabelSelector | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise FieldError(field, f"expected a label selector, got {raw!r}")
    reqs = [Requirement(str(k), "In", (str(v),)) for k, v in sorted((raw.get("matchLabels") or {}).items())]
    reqs.extend(_requirements(raw.get("matchExpressions"), f"{field}.matchExpressions"))
    return LabelSelector(tuple(reqs))


def parse_label_selector_string(text: str) -> LabelSelector:
    """``app=x,tier!=y,env`` (equality-based selectors, as flags take them)."""
    reqs = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        if "!=" in part:
            key, value = part.split("!=", 1)
            reqs.append(Requirement(key.strip(), "NotIn", (value.strip(),)))
        elif "=" in part:
            key, value = part.split("==", 1) if "==" in part else part.split("=", 1)
            reqs.append(Requirement(key.strip(), "In", (value.strip(),)))
        elif part.startswith("!"):
            reqs.append(Requirement(part[1:].strip(), "DoesNotExist"))
        else:
            reqs.append(Requirement(part, "Exists"))
    return LabelSelector(tuple(reqs))


def _affinity_terms(raw: Iterable[Json] | None, namespace: str, field: str) -> tuple[PodAffinityTerm, ...]:
    out = []
    for i, term in enumerate(raw or ()):
        f = f"{field}[{i}]"
        ns_sel = label_selector(term.get("namespaceSelector"), f"{f}.namespaceSelector")
        namespaces = frozenset(term.get("namespaces") or ())
        if not namespaces and ns_sel is None:
            namespaces = frozenset((namespace,))
        topology_key = term.get("topologyKey")
        if not topology_key:
            raise FieldError(f"{f}.topologyKey", "required")
        out.append(
            PodAffinityTerm(label_selector(term.get("labelSelector"), f"{f}.labelSelector"), namespaces, ns_sel,
                            str(topology_key))
        )
    return tuple(out)


_SCHEDULING: dict[Any, PodScheduling] = {}


def _freeze(value: Any) -> Any:
    if isinstance(value, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    return value


def pod_scheduling(spec: Json, namespace: str) -> PodScheduling:
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
    cached = _SCHEDULING.get(key)
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
        affinity=_affinity_terms(pod_aff, namespace, "spec.affinity.podAffinity.required"),
        anti_affinity=_affinity_terms(anti, namespace, "spec.affinity.podAntiAffinity.required"),
        spread=tuple(constraints),
    )
    _SCHEDULING[key] = cached
    return cached


_OWNERS: dict[tuple[str, str, str], OwnerRef] = {}
_EMPTY: dict[str, str] = {}


def _controller_ref(meta: Json) -> OwnerRef | None:
    refs = meta.get("ownerReferences")
    if not refs:
        return None
    for ref in refs:
        if ref.get("controller"):
            key = (ref.get("kind") or "", ref.get("name") or "", ref.get("uid") or "")
            owner = _OWNERS.get(key)
            if owner is None:
                owner = _OWNERS[key] = OwnerRef(key[0], key[1], key[2], ref.get("apiVersion") or "")
            return owner
    return None


def convert_pod(obj: Json, namespace_default: str = "default") -> Pod:
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
    return Pod(
        namespace=namespace,
        name=str(meta.get("name") or ""),
        uid=str(meta.get("uid") or ""),
        labels=meta.get("labels") or _EMPTY,
        owner=_controller_ref(meta),
        node_name=str(spec.get("nodeName") or ""),
        phase=str(status.get("phase") or "Pending"),
        requests=pod_requests(spec),
        scheduling=pod_scheduling(spec, namespace),
        claims=claims,
        local_volumes=local,
        priority=int(priority) if priority is not None else 0,
        created=parse_time(created, "metadata.creationTimestamp") if created else None,
        deleted=parse_time(deleted, "metadata.deletionTimestamp") if deleted else None,
        grace_seconds=int(spec.get("terminationGracePeriodSeconds") or 30),
        safe_to_evict=None if safe is None else str(safe).lower() == "true",
        safe_to_evict_local_volumes=frozenset(
            s.strip() for s in str(safe_local).split(",") if s.strip()) if safe_local else frozenset(),
        is_mirror=MIRROR_ANNOTATION in annotations,
        marked_unschedulable=marked,
    )


def _int_label(value: object, what: str, node: str, warnings: list[str]) -> int | None:
    if value is None:
        return None
    text = str(value).strip()
    if text.isdigit():
        return int(text)
    warnings.append(f"Node/{node}: {what} {value!r} is not an integer number of bytes; treated as absent")
    return None


def convert_node(obj: Json, names: StorageNames, warnings: list[str]) -> Node:
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
            ready_since = parse_time(cond.get("lastTransitionTime"), f"status.conditions[{i}].lastTransitionTime")
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
        created=parse_time(meta.get("creationTimestamp"), "metadata.creationTimestamp"),
        deleting=meta.get("deletionTimestamp") is not None,
        provider_id=str(spec.get("providerID") or ""),
        free_local_bytes=_int_label(annotations.get(names.capacity_annotation), names.capacity_annotation, name,
                                    warnings),
        max_local_bytes=_int_label(labels.get(names.max_capacity_label), names.max_capacity_label, name,
                                   warnings),
        scale_down_disabled=str(annotations.get(SCALE_DOWN_DISABLED, "")).lower() == "true",
        annotations=annotations,
    )


def _access_modes(spec: Json) -> tuple[str, ...]:
    return tuple(str(m) for m in spec.get("accessModes") or ())


def convert_pvc(obj: Json) -> PersistentVolumeClaim:
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    requests = (spec.get("resources") or {}).get("requests") or {}
    storage = requests.get("storage")
    cls = spec.get("storageClassName")
    return PersistentVolumeClaim(
        namespace=str(meta.get("namespace") or "default"),
        name=str(meta.get("name") or ""),
        storage_class=None if cls is None else str(cls),
        request=_qty(storage, "spec.resources.requests.storage") if storage is not None else 0,
        volume_name=str(spec.get("volumeName") or ""),
        phase=str((obj.get("status") or {}).get("phase") or "Pending"),
        access_modes=_access_modes(spec),
    )


def convert_pv(obj: Json) -> PersistentVolume:
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    storage = (spec.get("capacity") or {}).get("storage")
    ref = spec.get("claimRef")
    if "csi" in spec:
        driver = str((spec.get("csi") or {}).get("driver") or "")
    elif "local" in spec:
        driver = "local"
    elif "hostPath" in spec:
        driver = "hostPath"
    else:
        driver = ""
    affinity = (spec.get("nodeAffinity") or {}).get("required")
    cls = spec.get("storageClassName")
    return PersistentVolume(
        name=str(meta.get("name") or ""),
        storage_class=None if cls is None else str(cls),
        capacity=_qty(storage, "spec.capacity.storage") if storage is not None else 0,
        node_affinity=node_selector(affinity, "spec.nodeAffinity.required"),
        claim=(str(ref.get("namespace") or "default"), str(ref.get("name") or "")) if ref else None,
        phase=str((obj.get("status") or {}).get("phase") or "Available"),
        access_modes=_access_modes(spec),
        driver=driver,
    )


def convert_storage_class(obj: Json) -> StorageClass:
    meta = obj.get("metadata") or {}
    mode = obj.get("volumeBindingMode") or "Immediate"
    try:
        binding = BindingMode(mode)
    except ValueError:
        raise FieldError("volumeBindingMode", f"unknown mode {mode!r}") from None
    topologies = obj.get("allowedTopologies")
    allowed = None
    if topologies:
        terms = []
        for term in topologies:
            reqs = tuple(
                Requirement(str(e.get("key")), "In", tuple(str(v) for v in e.get("values") or ()))
                for e in term.get("matchLabelExpressions") or ()
            )
            terms.append(NodeSelectorTerm(reqs))
        allowed = NodeSelector(tuple(terms))
    return StorageClass(str(meta.get("name") or ""), str(obj.get("provisioner") or ""), binding, allowed)


def convert_pdb(obj: Json) -> PodDisruptionBudget:
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    allowed = status.get("disruptionsAllowed")
    if allowed is None:
        # No status (a hand-written snapshot): the budget is unknown, so be careful.
        allowed = 0
    return PodDisruptionBudget(
        namespace=str(meta.get("namespace") or "default"),
        name=str(meta.get("name") or ""),
        selector=label_selector(spec.get("selector"), "spec.selector"),
        disruptions_allowed=int(allowed),
    )


def convert_csi_capacity(obj: Json) -> CSIStorageCapacity:
    meta = obj.get("metadata") or {}
    cap = obj.get("capacity")
    max_size = obj.get("maximumVolumeSize")
    return CSIStorageCapacity(
        namespace=str(meta.get("namespace") or ""),
        name=str(meta.get("name") or ""),
        storage_class=str(obj.get("storageClassName") or ""),
        node_topology=label_selector(obj.get("nodeTopology"), "nodeTopology"),
        capacity=_qty(cap, "capacity") if cap is not None else None,
        maximum_volume_size=_qty(max_size, "maximumVolumeSize") if max_size is not None else None,
    )


class Converter:
    """Accumulates converted objects into a ``ClusterObjects``."""

    def __init__(self, names: StorageNames) -> None:
        self.names = names
        self.objects = ClusterObjects()
        self._pending_groups: list[tuple[str, Json]] = []
        self._handlers: dict[str, Callable[[Json], None]] = {
            "Pod": self._pod,
            "Node": self._node,
            "PersistentVolumeClaim": self._pvc,
            "PersistentVolume": self._pv,
            "StorageClass": self._sc,
            "PodDisruptionBudget": self._pdb,
            "CSIStorageCapacity": self._csi_capacity,
            "CSIDriver": self._csi_driver,
            "CSINode": self._csi_node,
            "Namespace": self._namespace,
            "ConfigMap": self._configmap,
            NODE_GROUP_KIND: self._node_group_later,
        }
        for kind in ("ReplicaSet", "StatefulSet", "Deployment", "Job", "ReplicationController", "DaemonSet",
                     "CronJob"):
            self._handlers[kind] = self._controller
        self._source = ""

    def add(self, obj: object, source: str) -> None:
        """Convert one object; unknown kinds are ignored (a kubectl dump holds many)."""
        if not isinstance(obj, dict):
            raise InputError(source, "", "", f"expected a Kubernetes object, got {type(obj).__name__}")
        handler = self._handlers.get(obj.get("kind"))  # type: ignore[arg-type]
        if handler is None:
            return
        try:
            handler(obj)
        except FieldError as exc:
            raise InputError(source, object_ref(obj), exc.field, exc.message) from None
        except (TypeError, AttributeError, ValueError, KeyError) as exc:
            raise InputError(source, object_ref(obj), "", f"malformed object ({exc})") from None

    # --- handlers -------------------------------------------------------
    def _pod(self, obj: Json) -> None:
        self.objects.pods.append(convert_pod(obj))

    def _node(self, obj: Json) -> None:
        self.objects.nodes.append(convert_node(obj, self.names, self.objects.warnings))

    def _pvc(self, obj: Json) -> None:
        pvc = convert_pvc(obj)
        self.objects.claims[(pvc.namespace, pvc.name)] = pvc

    def _pv(self, obj: Json) -> None:
        pv = convert_pv(obj)
        self.objects.volumes[pv.name] = pv

    def _sc(self, obj: Json) -> None:
        sc = convert_storage_class(obj)
        self.objects.storage_classes[sc.name] = sc

    def _pdb(self, obj: Json) -> None:
        self.objects.pdbs.append(convert_pdb(obj))

    def _csi_capacity(self, obj: Json) -> None:
        self.objects.csi_capacities.append(convert_csi_capacity(obj))

    def _csi_driver(self, obj: Json) -> None:
        name = str((obj.get("metadata") or {}).get("name") or "")
        capacity = bool((obj.get("spec") or {}).get("storageCapacity"))
        self.objects.csi_drivers[name] = CSIDriver(name, capacity)

    def _csi_node(self, obj: Json) -> None:
        name = str((obj.get("metadata") or {}).get("name") or "")
        drivers = tuple(str(d.get("name")) for d in (obj.get("spec") or {}).get("drivers") or ())
        self.objects.csi_nodes[name] = CSINode(name, drivers)

    def _namespace(self, obj: Json) -> None:
        meta = obj.get("metadata") or {}
        self.objects.namespaces[str(meta.get("name"))] = meta.get("labels") or {}

    def _configmap(self, obj: Json) -> None:
        meta = obj.get("metadata") or {}
        if meta.get("name") == PRIORITY_CONFIGMAP:
            data = obj.get("data") or {}
            if "priorities" not in data:
                raise FieldError("data.priorities", "the priority expander's ConfigMap needs this key")
            self.objects.priority_config = str(data["priorities"])

    def _controller(self, obj: Json) -> None:
        meta = obj.get("metadata") or {}
        spec = obj.get("spec") or {}
        kind = str(obj["kind"])
        namespace = str(meta.get("namespace") or "default")
        name = str(meta.get("name") or "")
        template = None
        if kind == "DaemonSet":
            tmpl = spec.get("template") or {}
            tmeta = dict(tmpl.get("metadata") or {})
            tmeta.update({"name": f"{name}-template", "namespace": namespace, "ownerReferences": [
                {"kind": "DaemonSet", "name": name, "uid": meta.get("uid") or "", "controller": True}]})
            try:
                template = convert_pod({"metadata": tmeta, "spec": tmpl.get("spec") or {}})
            except FieldError as exc:
                raise FieldError(f"spec.template.{exc.field}", exc.message) from None
        replicas = spec.get("replicas")
        self.objects.controllers[(kind, namespace, name)] = Controller(
            kind, namespace, name, str(meta.get("uid") or ""), int(replicas) if replicas is not None else None,
            template,
        )

    def _node_group_later(self, obj: Json) -> None:
        # Templates may need storage names and warnings; groups are converted as found.
        self.objects.node_groups.append(convert_node_group(obj, self.names, self.objects.warnings))


def _int_field(spec: Json, key: str, *, required: bool, minimum: int = 0) -> int | None:
    value = spec.get(key)
    if value is None:
        if required:
            raise FieldError(f"spec.{key}", "required")
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise FieldError(f"spec.{key}", f"{value!r} is not an integer")
    if value < minimum:
        raise FieldError(f"spec.{key}", f"{value} is below {minimum}")
    return value


def convert_node_group(obj: Json, names: StorageNames, warnings: list[str]) -> NodeGroupSpec:
    meta = obj.get("metadata") or {}
    spec = obj.get("spec")
    name = str(meta.get("name") or "")
    if not name:
        raise FieldError("metadata.name", "required")
    if not isinstance(spec, dict):
        raise FieldError("spec", "required")
    min_size = _int_field(spec, "minSize", required=True)
    max_size = _int_field(spec, "maxSize", required=True)
    assert min_size is not None and max_size is not None
    if min_size > max_size:
        raise FieldError("spec.minSize", f"minSize {min_size} is greater than maxSize {max_size}")
    target = _int_field(spec, "targetSize", required=False)
    if target is not None and target > max_size:
        raise FieldError("spec.targetSize", f"targetSize {target} is greater than maxSize {max_size}")
    selector = spec.get("nodeSelector") or {}
    if not isinstance(selector, dict):
        raise FieldError("spec.nodeSelector", "expected a map of labels")
    node_names = spec.get("nodes") or []
    if not isinstance(node_names, list):
        raise FieldError("spec.nodes", "expected a list of node names")
    template = None
    raw_template = spec.get("template")
    if raw_template is not None:
        if not isinstance(raw_template, dict):
            raise FieldError("spec.template", "expected a Node")
        tmpl = dict(raw_template)
        tmeta = dict(tmpl.get("metadata") or {})
        tmeta.setdefault("name", f"template-{name}")
        tmpl["metadata"] = tmeta
        status = dict(tmpl.get("status") or {})
        if not status.get("capacity") and not status.get("allocatable"):
            raise FieldError("spec.template.status.capacity", "a template needs capacity or allocatable")
        status.setdefault("conditions", [{"type": "Ready", "status": "True"}])
        tmpl["status"] = status
        try:
            template = convert_node(tmpl, names, warnings)
        except FieldError as exc:
            raise FieldError(f"spec.template.{exc.field}", exc.message) from None
    price = spec.get("pricePerHour")
    if price is not None and (isinstance(price, bool) or not isinstance(price, int | float) or price < 0):
        raise FieldError("spec.pricePerHour", f"{price!r} is not a non-negative number")
    return NodeGroupSpec(
        name=name,
        min_size=min_size,
        max_size=max_size,
        target_size=target,
        node_names=tuple(str(n) for n in node_names),
        node_selector=tuple(sorted((str(k), str(v)) for k, v in selector.items())),
        template=template,
        price_per_hour=float(price) if price is not None else None,
    )

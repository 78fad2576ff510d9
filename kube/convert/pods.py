"""Pods: identity, volumes, owners, requests and the scheduling constraints, interned."""

from __future__ import annotations

from collections.abc import Mapping

from kube.convert.errors import FieldError, Json
from kube.convert.fields import (
    INT32_MAX,
    as_bool,
    as_int,
    as_list,
    as_map,
    as_str,
    describe,
    name_of,
    parse_time,
    qty,
    required_str,
    string_map,
)
from kube.convert.memo import Memos
from kube.convert.memokey import freeze
from kube.convert.resources import pod_requests
from kube.convert.selectors import affinity_error, affinity_terms, label_selector, node_selector
from kube.featuregates import FeatureGates
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
from kube.names import MIRROR_ANNOTATION, POD_DELETION_COST, SAFE_TO_EVICT, SAFE_TO_EVICT_LOCAL_VOLUMES, annotation_int

#: Upstream ``pod_util.DaemonSetPodAnnotationKey``: a pod to treat as a DaemonSet's.
DAEMONSET_POD_ANNOTATION = "cluster-autoscaler.kubernetes.io/daemonset-pod"

__all__ = ["TAINT_EFFECTS", "controller_ref", "convert_pod", "pod_scheduling", "pod_volumes"]

_EMPTY: dict[str, str] = {}
#: Shared by every pod without such names: an empty frozenset per pod costs 30 MB at 150,000 pods.
_NO_NAMES: frozenset[str] = frozenset()
#: ``core/v1`` taint effects (a toleration's empty effect matches all of them).
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
_PROTOCOLS = ("TCP", "UDP", "SCTP")
#: Toleration operators behind feature gate TaintTolerationComparisonOperators (Kubernetes 1.35).
COMPARISON_OPERATORS = ("Gt", "Lt")
DEFAULT_GATES = FeatureGates()
_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"


def _host_ports(spec: Json, notes: list[tuple[str, str]]) -> tuple[HostPort, ...]:
    """Every container's ports checked; the host ports of the pod's lifetime kept.

    App containers and restartable init containers (``restartPolicy: Always``, sidecars)
    run for the pod's life, so their host ports count (kube-scheduler's NodePorts);
    other init containers have exited before the app containers start.
    """
    out = []
    for where, c in _port_containers(spec):
        ports = c.get("ports")
        if not ports:
            if ports is not None:
                as_list(ports, f"{where}.ports")
            continue
        for j, p in enumerate(as_list(ports, f"{where}.ports")):
            f = f"{where}.ports[{j}]"
            p = as_map(p, f)
            as_int(p.get("containerPort"), f"{f}.containerPort", minimum=1, maximum=65535)
            host_port = as_int(p.get("hostPort"), f"{f}.hostPort", minimum=0, maximum=65535)
            protocol = as_str(p.get("protocol"), f"{f}.protocol", "TCP")
            if protocol not in _PROTOCOLS:
                # A protocol a newer API server accepts: kube-scheduler's NodePorts compares it as written.
                notes.append((f"{f}.protocol", f"unknown protocol {describe(protocol)} (TCP, UDP or SCTP here): "
                                               "it conflicts only with host ports of the same protocol"))
            if host_port:
                out.append(HostPort(protocol, as_str(p.get("hostIP"), f"{f}.hostIP"), host_port))
    return tuple(out)


def _tolerations(raw: object, notes: list[tuple[str, str]], gates: FeatureGates) -> tuple[Toleration, ...]:
    """Tolerations; operators and effects the API may hold beyond Equal/Exists are kept with a note."""
    out = []
    for i, t in enumerate(as_list(raw, "spec.tolerations")):
        f = f"spec.tolerations[{i}]"
        t = as_map(t, f)
        operator = as_str(t.get("operator"), f"{f}.operator", "Equal") or "Equal"
        if operator in COMPARISON_OPERATORS and not gates.taint_toleration_comparison_operators:
            notes.append((f"{f}.operator", f"operator {operator!r} needs feature gate "
                                           "TaintTolerationComparisonOperators, which is off: this toleration "
                                           "tolerates no taint, as kube-scheduler "
                                           "(--feature-gates=TaintTolerationComparisonOperators=true)"))
        elif operator not in ("Equal", "Exists", *COMPARISON_OPERATORS):
            notes.append((f"{f}.operator", f"unknown operator {describe(operator)} (Equal, Exists, Gt or Lt "
                                           "here): this toleration tolerates no taint"))
        effect = as_str(t.get("effect"), f"{f}.effect")
        if effect and effect not in TAINT_EFFECTS:
            notes.append((f"{f}.effect", f"unknown taint effect {describe(effect)} (one of "
                                         f"{', '.join(TAINT_EFFECTS)} here): this toleration matches only "
                                         "taints of that effect"))
        value = as_str(t.get("value"), f"{f}.value")
        if operator == "Exists" and value:
            raise FieldError(f"{f}.value", "must be empty for operator Exists")
        as_int(t.get("tolerationSeconds"), f"{f}.tolerationSeconds", minimum=-(2**63))
        out.append(Toleration(as_str(t.get("key"), f"{f}.key"), operator, value, effect,
                              compare=gates.taint_toleration_comparison_operators))
    return tuple(out)


def _spread(raw: object, labels: Mapping[str, str], notes: list[tuple[str, str]]) -> tuple[SpreadConstraint, ...]:
    out = []
    for i, c in enumerate(as_list(raw, "spec.topologySpreadConstraints")):
        f = f"spec.topologySpreadConstraints[{i}]"
        c = as_map(c, f)
        when = as_str(c.get("whenUnsatisfiable"), f"{f}.whenUnsatisfiable", "DoNotSchedule")
        if when not in ("DoNotSchedule", "ScheduleAnyway"):
            # kube-scheduler's filter reads only DoNotSchedule constraints.
            notes.append((f"{f}.whenUnsatisfiable", f"unknown value {describe(when)} (DoNotSchedule or "
                                                    "ScheduleAnyway here): the constraint does not filter nodes"))
        max_skew = as_int(c.get("maxSkew"), f"{f}.maxSkew", minimum=1, maximum=INT32_MAX)
        min_domains = as_int(c.get("minDomains"), f"{f}.minDomains", minimum=1, maximum=INT32_MAX)
        topology_key = as_str(c.get("topologyKey"), f"{f}.topologyKey")
        selector = _spread_selector(c, labels, f)
        policies = []
        for name, default in (("nodeAffinityPolicy", "Honor"), ("nodeTaintsPolicy", "Ignore")):
            policy = as_str(c.get(name), f"{f}.{name}", default)
            if policy not in ("Honor", "Ignore"):
                # kube-scheduler honours a policy only when it is Honor.
                notes.append((f"{f}.{name}", f"unknown policy {describe(policy)} (Honor or Ignore here): "
                                             "read as Ignore"))
            policies.append(policy)
        if when != "DoNotSchedule":
            continue
        out.append(SpreadConstraint(
            max_skew=max_skew or 1,
            topology_key=topology_key,
            selector=selector,
            min_domains=min_domains or 1,
            node_affinity_policy=policies[0],
            node_taints_policy=policies[1],
        ))
    return tuple(out)


def _port_containers(spec: Json) -> list[tuple[str, Json]]:
    """App containers and restartable init containers, with the field path of each."""
    out = []
    containers = spec.get("containers")
    for i, c in enumerate(containers if type(containers) is list else as_list(containers, "spec.containers")):
        if type(c) is not dict:
            raise FieldError(f"spec.containers[{i}]", f"expected a container (a map), got {describe(c)}")
        out.append((f"spec.containers[{i}]", c))
    init = spec.get("initContainers")
    if init:
        for i, c in enumerate(as_list(init, "spec.initContainers")):
            f = f"spec.initContainers[{i}]"
            c = as_map(c, f)
            if as_str(c.get("restartPolicy"), f"{f}.restartPolicy") == "Always":
                out.append((f, c))
    return out


def _spread_selector(c: Json, labels: Mapping[str, str], field: str) -> LabelSelector | None:
    """``labelSelector`` with ``matchLabelKeys`` merged in from the pod's own labels, as the scheduler does."""
    selector = label_selector(c.get("labelSelector"), f"{field}.labelSelector")
    keys = [as_str(k, f"{field}.matchLabelKeys[{i}]") for i, k in enumerate(as_list(c.get("matchLabelKeys"),
                                                                                      f"{field}.matchLabelKeys"))]
    extra = tuple(Requirement(k, "In", (labels[k],)) for k in keys if k in labels)
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
    notes: list[tuple[str, str]] = []
    host_ports = _host_ports(spec, notes)
    spread = spec.get("topologySpreadConstraints")
    if not (selector or affinity or tolerations or host_ports or spread):
        if not (selector is None and affinity is None and tolerations is None and spread is None):
            as_map(selector, "spec.nodeSelector")
            as_map(affinity, "spec.affinity")
            as_list(tolerations, "spec.tolerations")
            as_list(spread, "spec.topologySpreadConstraints")
        return EMPTY_SCHEDULING
    label_keys = tuple(sorted({k for c in spread or () if type(c) is dict
                               for k in (c.get("matchLabelKeys") or ()) if type(k) is str}))
    key = (namespace, freeze(selector, "spec.nodeSelector"), freeze(affinity, "spec.affinity"),
           freeze(tolerations, "spec.tolerations"), host_ports,
           freeze(spread, "spec.topologySpreadConstraints"), tuple(labels.get(k) for k in label_keys))
    memo = memos.scheduling if memos is not None else None
    cached = memo.get(key) if memo is not None else None
    if cached is not None:
        return cached
    affinity = as_map(affinity, "spec.affinity")
    node_aff = as_map(affinity.get("nodeAffinity"), "spec.affinity.nodeAffinity").get(_REQUIRED)
    pod_aff = as_map(affinity.get("podAffinity"), "spec.affinity.podAffinity").get(_REQUIRED)
    anti = as_map(affinity.get("podAntiAffinity"), "spec.affinity.podAntiAffinity").get(_REQUIRED)
    required = affinity_terms(pod_aff, namespace, f"spec.affinity.podAffinity.{_REQUIRED}")
    required_anti = affinity_terms(anti, namespace, f"spec.affinity.podAntiAffinity.{_REQUIRED}")
    constraints = _spread(spread, labels, notes)
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
        node_selector=tuple(sorted(string_map(selector, "spec.nodeSelector").items())),
        required_affinity=node_selector(node_aff, f"spec.affinity.nodeAffinity.{_REQUIRED}", notes),
        tolerations=_tolerations(tolerations, notes, memos.gates if memos is not None else DEFAULT_GATES),
        host_ports=host_ports,
        affinity=required,
        anti_affinity=required_anti,
        spread=constraints,
        parse_error=parse_error,
        notes=tuple(notes),
    )
    if memo is not None:
        memo.put(key, cached)
    return cached


def controller_ref(meta: Json, memos: Memos | None) -> OwnerRef | None:
    refs = meta.get("ownerReferences")
    if not refs:
        as_list(refs, "metadata.ownerReferences")
        return None
    found = None
    for i, ref in enumerate(as_list(refs, "metadata.ownerReferences")):
        if type(ref) is not dict:
            raise FieldError(f"metadata.ownerReferences[{i}]", f"expected a map, got {describe(ref)}")
        controller = ref.get("controller")
        if controller is not True:
            if controller is None or controller is False:
                continue
            as_bool(controller, f"metadata.ownerReferences[{i}].controller")
        if found is not None:
            raise FieldError(f"metadata.ownerReferences[{i}].controller", "only one owner may be the controller")
        # The raw values are the memo key: a hit means the same strings were checked before
        # (a string equals only a string, so 1 or true never hit an entry for "1" or "true").
        key = (ref.get("kind"), ref.get("name"), ref.get("uid"), ref.get("apiVersion"))
        try:
            owner = memos.owners.get(key) if memos is not None else None
        except TypeError:  # an unhashable (so wrong) value: as_str below names it
            owner = None
        if owner is None:
            f = f"metadata.ownerReferences[{i}]"
            owner = OwnerRef(as_str(key[0], f"{f}.kind"), as_str(key[1], f"{f}.name"), as_str(key[2], f"{f}.uid"),
                             as_str(key[3], f"{f}.apiVersion"))
            if memos is not None:
                memos.owners.put(key, owner)
        found = owner
    return found


def pod_volumes(raw: object, pod_name: str) -> tuple[tuple[str, ...], tuple[tuple[str, VolumeSource], ...],
                                                frozenset[str]]:
    """Claims (with generic ephemeral volumes' ``<pod>-<volume>`` claims), local volumes, and the ephemeral claims."""
    claims: list[str] = []
    local: list[tuple[str, VolumeSource]] = []
    ephemeral: list[str] = []
    for i, v in enumerate(as_list(raw, "spec.volumes")):
        f = f"spec.volumes[{i}]"
        v = as_map(v, f)
        name = required_str(v.get("name"), f"{f}.name")
        if "persistentVolumeClaim" in v:
            pvc = as_map(v.get("persistentVolumeClaim"), f"{f}.persistentVolumeClaim")
            claim = required_str(pvc.get("claimName"), f"{f}.persistentVolumeClaim.claimName")
            claims.append(claim)
        elif "hostPath" in v:
            as_map(v.get("hostPath"), f"{f}.hostPath")
            local.append((name, VolumeSource.HOST_PATH))
        elif "emptyDir" in v:
            empty_dir = as_map(v.get("emptyDir"), f"{f}.emptyDir")
            if empty_dir.get("sizeLimit") is not None:
                qty(empty_dir["sizeLimit"], f"{f}.emptyDir.sizeLimit")
            medium = as_str(empty_dir.get("medium"), f"{f}.emptyDir.medium")
            if medium != "Memory":
                local.append((name, VolumeSource.EMPTY_DIR))
        elif "ephemeral" in v:
            as_map(v.get("ephemeral"), f"{f}.ephemeral")
            # The ephemeral volume controller names the claim <pod>-<volume>; the pod
            # may use it only if it owns it (checked by the volume binding).
            ephemeral.append(f"{pod_name}-{name}")
            claims.append(ephemeral[-1])
    return tuple(claims), tuple(local), frozenset(ephemeral) if ephemeral else _NO_NAMES


def convert_pod(obj: Json, namespace_default: str = "default", memos: Memos | None = None) -> Pod:
    """One ``Pod``; ``memos`` (a converter's) shares repeated values between pods."""
    # Checks are written out (``type(x) is str or ...``) on this path: it runs per pod.
    meta = obj.get("metadata")
    meta = meta if type(meta) is dict else as_map(meta, "metadata")
    spec = obj.get("spec")
    spec = spec if type(spec) is dict else as_map(spec, "spec")
    status = obj.get("status")
    status = status if type(status) is dict else as_map(status, "status")
    name = meta.get("name")
    if type(name) is not str or not name:
        name = name_of(meta)
    namespace = meta.get("namespace")
    if type(namespace) is not str:
        namespace = as_str(namespace, "metadata.namespace")
    namespace = namespace or namespace_default
    annotations = meta.get("annotations")
    annotations = string_map(annotations, "metadata.annotations") if annotations else (
        _EMPTY if annotations is None else string_map(annotations, "metadata.annotations"))
    labels = string_map(meta.get("labels"), "metadata.labels") or _EMPTY
    volumes = spec.get("volumes")
    claims, local, ephemeral = pod_volumes(volumes, name) if volumes is not None else ((), (), _NO_NAMES)
    marked = False
    conditions = status.get("conditions")
    for i, cond in enumerate(as_list(conditions, "status.conditions") if conditions is not None else ()):
        f = f"status.conditions[{i}]"
        cond = as_map(cond, f)
        if as_str(cond.get("type"), f"{f}.type") == "PodScheduled":
            marked = (as_str(cond.get("status"), f"{f}.status") == "False"
                      and as_str(cond.get("reason"), f"{f}.reason") == "Unschedulable")
    safe = annotations.get(SAFE_TO_EVICT)
    safe_local = annotations.get(SAFE_TO_EVICT_LOCAL_VOLUMES)
    priority = spec.get("priority")
    if priority is not None:
        priority = as_int(priority, "spec.priority", minimum=-(2**31), maximum=INT32_MAX)
    grace = spec.get("terminationGracePeriodSeconds")
    if grace is not None:
        grace = as_int(grace, "spec.terminationGracePeriodSeconds")
    uid = meta.get("uid")
    node_name = spec.get("nodeName")
    phase = status.get("phase")
    times = memos.times if memos is not None else None
    return Pod(
        namespace=namespace,
        name=name,
        uid=uid if type(uid) is str else as_str(uid, "metadata.uid"),
        labels=labels,
        owner=controller_ref(meta, memos),
        node_name=node_name if type(node_name) is str else as_str(node_name, "spec.nodeName"),
        phase=(phase if type(phase) is str else as_str(phase, "status.phase")) or "Pending",
        requests=pod_requests(spec, memos.requests if memos is not None else None),
        scheduling=pod_scheduling(spec, namespace, memos, labels),
        claims=claims,
        local_volumes=local,
        priority=priority or 0,
        created=parse_time(meta.get("creationTimestamp"), "metadata.creationTimestamp", times),
        deleted=parse_time(meta.get("deletionTimestamp"), "metadata.deletionTimestamp", times),
        # 0 is an immediate kill, not "unset": 30 s is the default only when absent.
        grace_seconds=30 if grace is None else grace,
        # Upstream compares the strings exactly: only "true" and "false" mean anything
        # ("on-completion" and "True" are neither).
        safe_to_evict=True if safe == "true" else False if safe == "false" else None,
        evict_on_completion=safe == "on-completion",
        # Split on commas and nothing else, as upstream: " data" names no volume.
        safe_to_evict_local_volumes=frozenset(safe_local.split(",")) if safe_local else _NO_NAMES,
        is_mirror=MIRROR_ANNOTATION in annotations,
        marked_unschedulable=marked,
        daemonset_annotation=annotations.get(DAEMONSET_POD_ANNOTATION) == "true",
        ephemeral_claims=ephemeral,
        restart_policy=as_str(spec.get("restartPolicy"), "spec.restartPolicy") or "Always",
        deletion_cost=annotation_int(annotations, POD_DELETION_COST),
    )

"""Domain factories for tests: ``node("w1", cpu="4", storage_free="100Gi")``, ``pod("web", claims=[...])``.

Every factory builds the small Kubernetes JSON a ``kubectl get -o yaml`` would show
and sends it through the real converters (``kube.convert``), so tests exercise
the edge too: quantities are strings, the capacity annotation and max-capacity label
are integer strings, times are RFC 3339. The ``*_json`` twins return the raw objects,
for tests that write snapshot files for the CLI.

``world(...)`` builds the simulator stack (snapshot, volume index, predicate checker)
over a ``ClusterObjects``; ``plan(...)`` runs one loop through ``run_once`` with
``Options`` parsed from real CLI flags.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from app.cli import build_parser
from autoscaler.config import Options, options_from_args
from autoscaler.runonce import LoopDecision, run_once
from cloudproviders.snapshot import SnapshotProvider
from kube.convert import (
    Converter,
    convert_csi_capacity,
    convert_node,
    convert_node_group,
    convert_pod,
    convert_pv,
    convert_pvc,
    convert_storage_class,
)
from kube.model import (
    ClusterObjects,
    Controller,
    CSIDriver,
    CSIStorageCapacity,
    Node,
    NodeGroupSpec,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    StorageClass,
)
from kube.names import HOSTNAME_LABEL, StorageNames
from kube.quantity import parse_quantity
from simulator.predicates import PredicateChecker
from simulator.snapshot import ClusterSnapshot
from simulator.volumes import VolumeIndex, VolumePlan

Json = dict[str, Any]

GiB = 2**30
TiB = 2**40
NAMES = StorageNames()
LOCAL = NAMES.provisioner
ZONE = "topology.kubernetes.io/zone"
#: The loop's clock in every test (plan-contract's ``--now``).
NOW = dt.datetime(2026, 6, 1, 12, 0, 0, tzinfo=dt.UTC).timestamp()
#: Old enough to be past every startup and provisioning time.
LONG_AGO = NOW - 30 * 86400


def rfc3339(seconds: float) -> str:
    return dt.datetime.fromtimestamp(seconds, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _bytes(value: str | int) -> str:
    """A quantity as the integer string the storage driver writes (``"100Gi"`` -> bytes)."""
    return str(parse_quantity(value))


# --- nodes -------------------------------------------------------------------------------


def taint(key: str, value: str = "", effect: str = "NoSchedule") -> Json:
    return {"key": key, "value": value, "effect": effect}


def node_json(
    name: str,
    cpu: str = "4",
    memory: str = "8Gi",
    pods: int = 110,
    *,
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Json] = (),
    storage_free: str | int | None = None,
    storage_max: str | int | None = None,
    ready: bool = True,
    created: float | None = LONG_AGO,
    unschedulable: bool = False,
    ephemeral: str | None = None,
    extended: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
) -> Json:
    """A Node; ``storage_free`` is the capacity annotation, ``storage_max`` the max-capacity label."""
    all_labels = {HOSTNAME_LABEL: name, **(labels or {})}
    if storage_max is not None:
        all_labels[NAMES.max_capacity_label] = _bytes(storage_max)
    all_annotations = dict(annotations or {})
    if storage_free is not None:
        all_annotations[NAMES.capacity_annotation] = _bytes(storage_free)
    resources: Json = {"cpu": cpu, "memory": memory, "pods": str(pods)}
    if ephemeral is not None:
        resources["ephemeral-storage"] = ephemeral
    resources.update(extended or {})
    metadata: Json = {"name": name, "labels": all_labels, "annotations": all_annotations}
    condition: Json = {"type": "Ready", "status": "True" if ready else "False"}
    if created is not None:
        metadata["creationTimestamp"] = rfc3339(created)
        condition["lastTransitionTime"] = rfc3339(created)
    spec: Json = {"taints": list(taints)}
    if unschedulable:
        spec["unschedulable"] = True
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": metadata,
        "spec": spec,
        "status": {"capacity": resources, "allocatable": dict(resources), "conditions": [condition]},
    }


def node(name: str, cpu: str = "4", memory: str = "8Gi", pods: int = 110, *, warns: bool = False,
         **kw: Any) -> Node:
    """A Node model object, converted from ``node_json``; see it for the keywords.

    ``warns``: the node is meant to be converted with warnings (a malformed capacity value).
    """
    warnings: list[str] = []
    converted = convert_node(node_json(name, cpu, memory, pods, **kw), NAMES, warnings)
    assert warns or not warnings, warnings
    return converted


# --- pods --------------------------------------------------------------------------------


def toleration(key: str = "", value: str = "", effect: str = "NoSchedule", operator: str = "Equal") -> Json:
    return {"key": key, "operator": operator, "value": value, "effect": effect}


def expr(key: str, operator: str, *values: str) -> Json:
    """One ``matchExpressions`` entry."""
    out: Json = {"key": key, "operator": operator}
    if values:
        out["values"] = list(values)
    return out


def node_affinity(*terms: Sequence[Json]) -> Json:
    """Required node affinity: terms ORed, each a list of expressions ANDed."""
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": list(t)} for t in terms]}}}


def pod_affinity(match: Mapping[str, str], topology_key: str = HOSTNAME_LABEL, *, anti: bool = False) -> Json:
    """Required (anti-)affinity to pods with labels ``match`` in the same ``topology_key`` domain."""
    kind = "podAntiAffinity" if anti else "podAffinity"
    return {kind: {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": dict(match)}, "topologyKey": topology_key}]}}


def spread(match: Mapping[str, str], topology_key: str = ZONE, max_skew: int = 1) -> Json:
    """A ``DoNotSchedule`` topology spread constraint."""
    return {"maxSkew": max_skew, "topologyKey": topology_key, "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": dict(match)}}


def pod_json(
    name: str,
    cpu: str | None = "1",
    memory: str | None = "1Gi",
    node: str = "",
    *,
    namespace: str = "default",
    owner: tuple[str, str] | None = ("ReplicaSet", "rs"),
    claims: Sequence[str] = (),
    labels: Mapping[str, str] | None = None,
    node_selector: Mapping[str, str] | None = None,
    tolerations: Sequence[Json] = (),
    affinity: Json | None = None,
    spread_constraints: Sequence[Json] = (),
    host_ports: Sequence[int | tuple[int, str]] = (),
    pending: bool = True,
    priority: int | None = None,
    ephemeral: str | None = None,
    extended: Mapping[str, str] | None = None,
    created: float | None = None,
) -> Json:
    """A Pod. Unbound and ``pending``: the scheduler marked it ``PodScheduled=False/Unschedulable``.

    ``owner`` is ``(kind, name)`` of its controller, None for a bare pod; ``claims`` are
    PVC names; ``host_ports`` are ports, or ``(port, protocol)``.
    """
    requests: Json = {}
    if cpu is not None:
        requests["cpu"] = cpu
    if memory is not None:
        requests["memory"] = memory
    if ephemeral is not None:
        requests["ephemeral-storage"] = ephemeral
    requests.update(extended or {})
    container: Json = {"name": "main", "image": "busybox", "resources": {"requests": requests}}
    if host_ports:
        container["ports"] = [
            {"containerPort": p, "hostPort": p, "protocol": "TCP"} if isinstance(p, int)
            else {"containerPort": p[0], "hostPort": p[0], "protocol": p[1]}
            for p in host_ports
        ]
    metadata: Json = {"name": name, "namespace": namespace, "uid": f"uid-{namespace}-{name}",
                      "labels": dict(labels or {})}
    if owner is not None:
        kind, owner_name = owner
        metadata["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": kind, "name": owner_name,
                                        "uid": f"uid-{kind}-{owner_name}", "controller": True}]
    if created is not None:
        metadata["creationTimestamp"] = rfc3339(created)
    spec: Json = {"containers": [container]}
    if node:
        spec["nodeName"] = node
    if claims:
        spec["volumes"] = [{"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}} for i, c in enumerate(claims)]
    if node_selector:
        spec["nodeSelector"] = dict(node_selector)
    if tolerations:
        spec["tolerations"] = list(tolerations)
    if affinity:
        spec["affinity"] = affinity
    if spread_constraints:
        spec["topologySpreadConstraints"] = list(spread_constraints)
    if priority is not None:
        spec["priority"] = priority
    status: Json = {"phase": "Running" if node else "Pending"}
    if not node and pending:
        status["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec, "status": status}


def pod(name: str, cpu: str | None = "1", memory: str | None = "1Gi", node: str = "", **kw: Any) -> Pod:
    """A Pod model object, converted from ``pod_json``; see it for the keywords."""
    return convert_pod(pod_json(name, cpu, memory, node, **kw))


# --- storage -------------------------------------------------------------------------------


def pvc_json(name: str, size: str = "10Gi", storage_class: str | None = "rok", *, volume: str = "",
             namespace: str = "default", access_modes: Sequence[str] = ("ReadWriteOnce",),
             selected_node: str = "") -> Json:
    """A claim; ``selected_node``: kube-scheduler's ``volume.kubernetes.io/selected-node``."""
    spec: Json = {"accessModes": list(access_modes), "resources": {"requests": {"storage": size}}}
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    if volume:
        spec["volumeName"] = volume
    metadata: Json = {"name": name, "namespace": namespace}
    if selected_node:
        metadata["annotations"] = {"volume.kubernetes.io/selected-node": selected_node}
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": metadata, "spec": spec,
            "status": {"phase": "Bound" if volume else "Pending"}}


def pvc(name: str, size: str = "10Gi", storage_class: str | None = "rok", **kw: Any) -> PersistentVolumeClaim:
    """A claim; bound when ``volume`` names its PV."""
    return convert_pvc(pvc_json(name, size, storage_class, **kw))


def pv_json(name: str, size: str = "10Gi", storage_class: str | None = "rok", *,
            hosts: Sequence[str] = (), affinity: Json | None = None, claim: tuple[str, str] | None = None,
            driver: str | None = LOCAL, access_modes: Sequence[str] = ("ReadWriteOnce",)) -> Json:
    """A PV; ``hosts`` pins it (hostname node affinity), ``driver`` is a CSI driver, "local" or None."""
    spec: Json = {"capacity": {"storage": size}, "accessModes": list(access_modes)}
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    if driver == "local":
        spec["local"] = {"path": "/mnt/disk"}
    elif driver is not None:
        spec["csi"] = {"driver": driver, "volumeHandle": name}
    if hosts:
        affinity = {"nodeSelectorTerms": [{"matchExpressions": [expr(HOSTNAME_LABEL, "In", *hosts)]}]}
    if affinity is not None:
        spec["nodeAffinity"] = {"required": affinity}
    if claim is not None:
        spec["claimRef"] = {"namespace": claim[0], "name": claim[1]}
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name}, "spec": spec,
            "status": {"phase": "Bound" if claim else "Available"}}


def pv(name: str, size: str = "10Gi", storage_class: str | None = "rok", **kw: Any) -> PersistentVolume:
    return convert_pv(pv_json(name, size, storage_class, **kw))


def storage_class_json(name: str = "rok", provisioner: str = LOCAL, *, binding: str = "WaitForFirstConsumer",
                       allowed_topologies: Mapping[str, Sequence[str]] | None = None,
                       parameters: Mapping[str, str] | None = None) -> Json:
    out: Json = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name},
                 "provisioner": provisioner, "volumeBindingMode": binding}
    if parameters is not None:
        out["parameters"] = dict(parameters)
    if allowed_topologies is not None:
        out["allowedTopologies"] = [{"matchLabelExpressions": [
            {"key": k, "values": list(v)} for k, v in allowed_topologies.items()]}]
    return out


def storage_class(name: str = "rok", provisioner: str = LOCAL, **kw: Any) -> StorageClass:
    """A class; the default is the local provisioner with ``WaitForFirstConsumer``."""
    return convert_storage_class(storage_class_json(name, provisioner, **kw))


def csi_capacity(name: str, storage_class_name: str, topology: Mapping[str, str], capacity: str,
                 maximum_volume_size: str | None = None) -> CSIStorageCapacity:
    obj: Json = {"apiVersion": "storage.k8s.io/v1", "kind": "CSIStorageCapacity",
                 "metadata": {"name": name, "namespace": "kube-system"}, "storageClassName": storage_class_name,
                 "nodeTopology": {"matchLabels": dict(topology)}, "capacity": capacity}
    if maximum_volume_size is not None:
        obj["maximumVolumeSize"] = maximum_volume_size
    return convert_csi_capacity(obj)


def csi_driver(name: str, storage_capacity: bool = True) -> CSIDriver:
    converter = Converter(NAMES)
    converter.add({"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": name},
                   "spec": {"storageCapacity": storage_capacity}}, "factory")
    return converter.objects.csi_drivers[name]


# --- node groups and whole clusters ------------------------------------------------------------


def node_group_json(name: str, min_size: int = 0, max_size: int = 10, *, target_size: int | None = None,
                    nodes: Sequence[str] = (), node_selector: Mapping[str, str] | None = None,
                    template: Json | None = None, price: float | None = None,
                    autoscaling_options: Mapping[str, object] | None = None) -> Json:
    """A ``NodeGroup``; ``template`` is a Node (e.g. ``node_json("t", storage_max="200Gi")``).

    ``autoscaling_options``: CA's per-group option tags (``scaledownunneededtime: 2m``).
    """
    spec: Json = {"minSize": min_size, "maxSize": max_size}
    if target_size is not None:
        spec["targetSize"] = target_size
    if nodes:
        spec["nodes"] = list(nodes)
    if node_selector:
        spec["nodeSelector"] = dict(node_selector)
    if template is not None:
        spec["template"] = template
    if price is not None:
        spec["pricePerHour"] = price
    if autoscaling_options is not None:
        spec["autoscalingOptions"] = dict(autoscaling_options)
    return {"apiVersion": "autoscaler.storage.dev/v1alpha1", "kind": "NodeGroup", "metadata": {"name": name},
            "spec": spec}


def node_group(name: str, min_size: int = 0, max_size: int = 10, **kw: Any) -> NodeGroupSpec:
    warnings: list[str] = []
    converted = convert_node_group(node_group_json(name, min_size, max_size, **kw), NAMES, warnings)
    assert not warnings, warnings
    return converted


def template(cpu: str = "4", memory: str = "8Gi", pods: int = 110, **kw: Any) -> Json:
    """A group's cloud template (a Node object without a meaningful name)."""
    return node_json("template", cpu, memory, pods, **kw)


ClusterObject = (Node | Pod | PersistentVolumeClaim | PersistentVolume | StorageClass | NodeGroupSpec
                 | CSIStorageCapacity | CSIDriver | Controller)


def cluster(*objects: ClusterObject, namespaces: Mapping[str, Mapping[str, str]] | None = None) -> ClusterObjects:
    """A ``ClusterObjects`` holding these model objects, indexed as ``load_snapshot`` indexes them."""
    out = ClusterObjects(namespaces=dict(namespaces or {}))
    for obj in objects:
        if isinstance(obj, Node):
            out.nodes.append(obj)
        elif isinstance(obj, Pod):
            out.pods.append(obj)
        elif isinstance(obj, PersistentVolumeClaim):
            out.claims[(obj.namespace, obj.name)] = obj
        elif isinstance(obj, PersistentVolume):
            out.volumes[obj.name] = obj
        elif isinstance(obj, StorageClass):
            out.storage_classes[obj.name] = obj
        elif isinstance(obj, NodeGroupSpec):
            out.node_groups.append(obj)
        elif isinstance(obj, CSIStorageCapacity):
            out.csi_capacities.append(obj)
        elif isinstance(obj, CSIDriver):
            out.csi_drivers[obj.name] = obj
        else:
            out.controllers[(obj.kind, obj.namespace, obj.name)] = obj
    out.nodes.sort(key=lambda n: n.name)
    return out


def yaml_snapshot(*docs: Json) -> str:
    """A multi-document YAML snapshot, as ``kubectl get -o yaml`` objects concatenated."""
    return yaml.safe_dump_all(list(docs), sort_keys=False)


# --- the simulator stack and the loop ------------------------------------------------------------


@dataclass(slots=True)
class World:
    """A snapshot of a cluster with its volume index and predicate checker."""

    objects: ClusterObjects
    snapshot: ClusterSnapshot
    volumes: VolumeIndex
    checker: PredicateChecker

    def plan(self, subject: Pod) -> VolumePlan:
        return self.volumes.plan(subject)

    def idx(self, name: str) -> int:
        return self.snapshot.index[name]


def world(objects: ClusterObjects, *, storage_aware: bool = True, appended: bool = False) -> World:
    """The simulator over ``objects``; their bound pods are placed on their nodes.

    ``appended``: the nodes are added after the checker was built (as templates and
    upcoming nodes are), which takes the predicates' per-node path instead of the
    precomputed label index.
    """
    scheduled = [p for p in objects.pods if p.node_name]
    snapshot = ClusterSnapshot(() if appended else objects.nodes)
    if not appended:
        snapshot.load_pods(scheduled)
    volumes = VolumeIndex(objects, NAMES, storage_aware=storage_aware)
    checker = PredicateChecker(snapshot, volumes, objects.namespaces)
    if appended:
        for n in objects.nodes:
            snapshot.add_node(n, [p for p in scheduled if p.node_name == n.name], role="template")
    return World(objects, snapshot, volumes, checker)


def options(*flags: str) -> Options:
    """``Options`` from CLI flags, exactly as ``autoscaler plan`` parses them."""
    args = build_parser().parse_args(["plan", "snapshot.yaml", *flags])
    return options_from_args(args)


def plan(objects: ClusterObjects, *flags: str, now: float = NOW) -> LoopDecision:
    """One steady-state loop (what ``plan`` answers) over ``objects`` with these flags."""
    provider = SnapshotProvider(objects.node_groups, objects.nodes)
    return run_once(objects, provider, options(*flags), now, steady_state=True)


def refs(pods: Iterable[Pod]) -> list[str]:
    return sorted(p.ref for p in pods)

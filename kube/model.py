"""The cluster as the autoscaler sees it: typed, immutable objects.

Kubernetes JSON is converted into these once, at the edge (``kube.convert``);
quantities are integers (millicores, bytes), times are seconds since the epoch, and
every field the decision code needs is already parsed. Nothing below this module
reads raw annotations or strings. Objects are frozen and slotted: a 5,000-node
snapshot holds ~150,000 pods, so they are kept small and shared where identical
(see ``PodScheduling``). The scheduling constraints live in ``kube.scheduling`` and
are re-exported here, so the model is one import.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum

import msgspec
import msgspec.structs

from kube.scheduling import (
    EMPTY_SCHEDULING,
    HOSTNAME_LABEL,
    HostPort,
    LabelSelector,
    NodeSelector,
    NodeSelectorTerm,
    PodAffinityTerm,
    PodScheduling,
    Requirement,
    SpreadConstraint,
    Taint,
    Toleration,
    parse_int64,
)

__all__ = [
    "EMPTY_SCHEDULING",
    "HOSTNAME_LABEL",
    "UNBOUNDED_BYTES",
    "BindingMode",
    "CSIDriver",
    "CSINode",
    "CSIStorageCapacity",
    "ClusterObjects",
    "Controller",
    "HostPort",
    "LabelSelector",
    "Node",
    "NodeGroupSpec",
    "NodeSelector",
    "NodeSelectorTerm",
    "OwnerRef",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "Pod",
    "PodAffinityTerm",
    "PodDisruptionBudget",
    "PodScheduling",
    "Requirement",
    "Resources",
    "SpreadConstraint",
    "StorageClass",
    "Taint",
    "Toleration",
    "Unreadable",
    "VolumeAttachment",
    "VolumeSource",
    "parse_int64",
]

#: Free local bytes of a template about which nothing is known (thesis: MaxInt64).
UNBOUNDED_BYTES = 2**63 - 1

class Resources(msgspec.Struct, frozen=True, gc=False):
    """Amounts of each resource: cpu in millicores, the rest in whole units.

    A ``msgspec.Struct`` (as ``Pod``): one is built per distinct request of 150,000 pods.
    """

    cpu: int = 0
    memory: int = 0
    ephemeral_storage: int = 0
    pods: int = 0
    #: Every other resource the scheduler fits as a scalar, sorted by name: extended
    #: resources (``nvidia.com/gpu``...) and huge pages (``hugepages-2Mi``), as
    #: kube-scheduler's ``NodeResourcesFit`` does.
    extended: tuple[tuple[str, int], ...] = ()

    def get_extended(self, name: str) -> int:
        for key, value in self.extended:
            if key == name:
                return value
        return 0




@dataclass(frozen=True, slots=True)
class OwnerRef:
    kind: str
    name: str
    uid: str
    api_version: str = ""


class VolumeSource(Enum):
    """Pod volume kinds that matter to the autoscaler."""

    HOST_PATH = "hostPath"
    EMPTY_DIR = "emptyDir"  # disk-backed (medium != Memory)


class Pod(msgspec.Struct, frozen=True, gc=False):
    """A pod. A ``msgspec.Struct`` rather than a dataclass: a snapshot holds 150,000 of them,
    and a Struct is built ten times faster and is not tracked by the cyclic collector (a pod
    holds no reference back to anything that holds it). Copy with changes through
    ``msgspec.structs.replace``."""

    namespace: str
    name: str
    uid: str
    labels: Mapping[str, str]
    owner: OwnerRef | None
    node_name: str
    phase: str
    requests: Resources
    scheduling: PodScheduling
    #: Names of the PersistentVolumeClaims the pod mounts, in its namespace.
    claims: tuple[str, ...] = ()
    #: Volumes kept on the node's own disk (hostPath, disk-backed emptyDir): name -> kind.
    local_volumes: tuple[tuple[str, VolumeSource], ...] = ()
    priority: int = 0
    created: float | None = None
    deleted: float | None = None
    grace_seconds: int = 30
    #: ``cluster-autoscaler.kubernetes.io/safe-to-evict``: True ("true"), False ("false") or None.
    safe_to_evict: bool | None = None
    #: ``safe-to-evict: "on-completion"``: left to finish, never evicted or rescheduled.
    evict_on_completion: bool = False
    #: ``cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes``.
    safe_to_evict_local_volumes: frozenset[str] = frozenset()
    is_mirror: bool = False
    #: PodScheduled=False with reason Unschedulable: the scheduler gave up on it.
    marked_unschedulable: bool = False
    #: ``cluster-autoscaler.kubernetes.io/daemonset-pod: "true"``: treated as a DaemonSet
    #: pod whoever owns it (upstream ``pod_util.IsDaemonSetPod``).
    daemonset_annotation: bool = False
    #: Names in ``claims`` that come from generic ephemeral volumes: the pod must own them.
    ephemeral_claims: frozenset[str] = frozenset()
    #: ``spec.restartPolicy`` (Always when absent), for upstream's ``IsPodTerminal``.
    restart_policy: str = "Always"
    #: ``controller.kubernetes.io/pod-deletion-cost`` (0 when absent or not an int32).
    deletion_cost: int = 0
    #: ``namespace/name``, set from them on construction (whatever is passed): the pod's key
    #: in every table of a loop, read millions of times in a large scale-up.
    ref: str = ""

    def __post_init__(self) -> None:
        msgspec.structs.force_setattr(self, "ref", f"{self.namespace}/{self.name}")

    @property
    def is_daemonset(self) -> bool:
        return self.daemonset_annotation or (self.owner is not None and self.owner.kind == "DaemonSet")

    @property
    def is_terminal(self) -> bool:
        return self.phase in ("Succeeded", "Failed")


@dataclass(frozen=True, slots=True)
class Node:
    name: str
    labels: Mapping[str, str]
    allocatable: Resources
    capacity: Resources
    taints: tuple[Taint, ...] = ()
    unschedulable: bool = False
    ready: bool = True
    #: When the Ready condition last changed (seconds since the epoch).
    ready_since: float | None = None
    created: float | None = None
    deleting: bool = False
    provider_id: str = ""
    #: Free bytes for new local volumes (the capacity annotation); None: driver not seen.
    free_local_bytes: int | None = None
    #: Total local bytes (the max-capacity label); None: unknown.
    max_local_bytes: int | None = None
    scale_down_disabled: bool = False
    annotations: Mapping[str, str] = field(default_factory=dict)
    #: ``autoscaler.storage.dev/disruption-cost``: seconds an operator adds to the removal cost.
    disruption_cost: int = 0

    def has_taint(self, key: str) -> bool:
        return any(t.key == key for t in self.taints)


@dataclass(frozen=True, slots=True)
class PersistentVolumeClaim:
    namespace: str
    name: str
    storage_class: str | None
    request: int
    volume_name: str
    phase: str
    access_modes: tuple[str, ...] = ()
    #: UID of the controlling owner (``ownerReferences[controller=true]``); None without one.
    #: A generic ephemeral volume's claim belongs to the pod whose UID this is.
    controller_uid: str | None = None
    #: The ``volume.kubernetes.io/selected-node`` annotation: the node kube-scheduler chose
    #: for a WaitForFirstConsumer claim (empty when it has not chosen).
    selected_node: str = ""

    @property
    def ref(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class PersistentVolume:
    name: str
    storage_class: str | None
    capacity: int
    node_affinity: NodeSelector | None
    claim: tuple[str, str] | None  # (namespace, name) of claimRef
    phase: str
    access_modes: tuple[str, ...] = ()
    #: CSI driver name, or "local"/"hostPath" for in-tree node-bound sources, else "".
    driver: str = ""
    #: Zone and region labels of the PV (kube-scheduler's VolumeZone): label key -> the
    #: values it allows (``a__b`` lists several).
    zones: tuple[tuple[str, frozenset[str]], ...] = ()


class BindingMode(Enum):
    IMMEDIATE = "Immediate"
    WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"


@dataclass(frozen=True, slots=True)
class StorageClass:
    name: str
    provisioner: str
    binding_mode: BindingMode
    allowed_topologies: NodeSelector | None = None
    #: The class's ``parameters`` (opaque to Kubernetes, read by its provisioner, e.g.
    #: TopoLVM's ``topolvm.io/device-class``). Not hashed: a class stays usable as a key.
    parameters: Mapping[str, str] = field(default_factory=dict, hash=False)


@dataclass(frozen=True, slots=True)
class PodDisruptionBudget:
    namespace: str
    name: str
    selector: LabelSelector | None  # None selects no pod
    disruptions_allowed: int

    @property
    def ref(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class CSIStorageCapacity:
    namespace: str
    name: str
    storage_class: str
    node_topology: LabelSelector | None
    capacity: int | None
    maximum_volume_size: int | None


@dataclass(frozen=True, slots=True)
class CSIDriver:
    name: str
    storage_capacity: bool
    #: ``spec.attachRequired`` (true when absent): the driver's volumes get VolumeAttachments.
    attach_required: bool = True


@dataclass(frozen=True, slots=True)
class CSINode:
    name: str
    drivers: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class VolumeAttachment:
    """A ``storage.k8s.io/v1`` VolumeAttachment: a volume attached to a node, or being attached or detached.

    The attach-detach controller deletes it once the volume is detached, so while it
    exists the volume may still be attached; the actuator waits for it to go before the
    instance does (``autoscaler/actuation/detach.py``).
    """

    name: str
    #: ``spec.nodeName``.
    node: str
    #: ``spec.attacher``: the CSI driver.
    attacher: str = ""
    #: ``spec.source.persistentVolumeName``; None for an inline (CSI migration) volume.
    volume: str | None = None
    #: ``status.attached``.
    attached: bool = False


@dataclass(frozen=True, slots=True)
class Controller:
    """A workload owner (ReplicaSet, StatefulSet, DaemonSet, Job, ...)."""

    kind: str
    namespace: str
    name: str
    uid: str
    replicas: int | None
    #: For DaemonSets: the pod they would run on a new node (requests, selectors).
    pod_template: Pod | None = None


@dataclass(frozen=True, slots=True)
class NodeGroupSpec:
    """A node group as the cloud knows it (the snapshot's ``NodeGroup`` kind)."""

    name: str
    min_size: int
    max_size: int
    target_size: int | None
    node_names: tuple[str, ...]
    node_selector: tuple[tuple[str, str], ...]
    template: Node | None
    price_per_hour: float | None = None
    #: ``spec.autoscalingOptions``: CA's per-group options as (``GroupOptions`` field, value), sorted.
    autoscaling_options: tuple[tuple[str, float | bool], ...] = ()

    def selects(self, node: Node) -> bool:
        if node.name in self.node_names:
            return True
        if not self.node_selector:
            return False
        return all(node.labels.get(k) == v for k, v in self.node_selector)


@dataclass(frozen=True, slots=True)
class Unreadable:
    """An object the converter refused (the live view drops it), with what is known of where its data lives.

    Read leniently from the raw JSON (``kube/unreadable.py``) so the decision code can keep
    every node the object could pin (storage-semantics 3.8).
    """

    kind: str
    #: ``Kind/namespace/name`` or ``Kind/name``.
    ref: str
    #: Why the converter refused it (names the field).
    message: str
    #: Pods: the node it runs on; VolumeAttachments: the node the volume is attached to ("" when none).
    node_name: str = ""
    #: Claims: their (namespace, name), so the PVs bound to them are known.
    claim: tuple[str, str] | None = None
    #: PersistentVolumes: every string its required node affinity names (any key); empty
    #: when it has no node affinity (pins nothing); None when the affinity cannot be read.
    affinity_values: frozenset[str] | None = frozenset()


@dataclass(slots=True)
class ClusterObjects:
    """Every object of one snapshot, indexed the way the decision code reads them."""

    nodes: list[Node] = field(default_factory=list)
    pods: list[Pod] = field(default_factory=list)
    claims: dict[tuple[str, str], PersistentVolumeClaim] = field(default_factory=dict)
    volumes: dict[str, PersistentVolume] = field(default_factory=dict)
    storage_classes: dict[str, StorageClass] = field(default_factory=dict)
    pdbs: list[PodDisruptionBudget] = field(default_factory=list)
    csi_capacities: list[CSIStorageCapacity] = field(default_factory=list)
    csi_drivers: dict[str, CSIDriver] = field(default_factory=dict)
    csi_nodes: dict[str, CSINode] = field(default_factory=dict)
    #: (kind, namespace, name) -> controller.
    controllers: dict[tuple[str, str, str], Controller] = field(default_factory=dict)
    node_groups: list[NodeGroupSpec] = field(default_factory=list)
    #: Namespace labels, for pod affinity namespace selectors.
    namespaces: dict[str, Mapping[str, str]] = field(default_factory=dict)
    #: The ``priorities`` YAML of the priority expander's ConfigMap, when present.
    priority_config: str | None = None
    #: VolumeAttachments (the actuator waits for a drained node's to go before deleting it).
    volume_attachments: list[VolumeAttachment] = field(default_factory=list)
    #: Things worth telling a person that do not stop the decision (bad annotations).
    warnings: list[str] = field(default_factory=list)
    #: Objects the live view could not convert (``plan`` refuses them instead).
    unreadable: list[Unreadable] = field(default_factory=list)

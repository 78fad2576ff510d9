"""The cluster as the autoscaler sees it: typed, immutable objects.

Kubernetes JSON is converted into these once, at the edge (``kube.convert``);
quantities are integers (millicores, bytes), times are seconds since the epoch, and
every field the decision code needs is already parsed. Nothing below this module
reads raw annotations or strings. Objects are frozen and slotted: a 5,000-node
snapshot holds ~150,000 pods, so they are kept small and shared where identical
(see ``PodScheduling``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum

__all__ = [
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
    "VolumeSource",
]

#: Free local bytes of a template about which nothing is known (thesis: MaxInt64).
UNBOUNDED_BYTES = 2**63 - 1

HOSTNAME_LABEL = "kubernetes.io/hostname"

_INT64 = re.compile(r"[+-]?[0-9]+")


def parse_int64(text: str) -> int | None:
    """Go's ``strconv.ParseInt(text, 10, 64)``: no spaces, no underscores, in range."""
    if not _INT64.fullmatch(text):
        return None
    value = int(text)
    return value if -(2**63) <= value < 2**63 else None


@dataclass(frozen=True, slots=True)
class Resources:
    """Amounts of each resource: cpu in millicores, the rest in whole units."""

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
class Requirement:
    """One label requirement, as in node selector terms and label selectors."""

    key: str
    operator: str  # In, NotIn, Exists, DoesNotExist, Gt, Lt
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.operator
        if op == "In":
            return labels.get(self.key) in self.values
        if op == "NotIn":
            return labels.get(self.key) not in self.values
        if op == "Exists":
            return self.key in labels
        if op == "DoesNotExist":
            return self.key not in labels
        if op not in ("Gt", "Lt"):
            return False  # an operator the API machinery does not know selects nothing
        value = labels.get(self.key)
        if value is None or len(self.values) != 1:
            return False
        have, want = parse_int64(value), parse_int64(self.values[0])
        if have is None or want is None:
            return False
        return have > want if op == "Gt" else have < want


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    """Requirements ANDed; ``fields`` holds ``metadata.name`` requirements."""

    requirements: tuple[Requirement, ...] = ()
    fields: tuple[Requirement, ...] = ()
    #: Why the API machinery would refuse to parse the term (then it selects nothing,
    #: as component-helpers' lazy-error node selector does), or None.
    error: str | None = None

    def matches(self, labels: Mapping[str, str], node_name: str) -> bool:
        if self.error is not None or (not self.requirements and not self.fields):
            return False  # an empty or unparsable term selects nothing (upstream nodeaffinity)
        if not all(r.matches(labels) for r in self.requirements):
            return False
        return all(r.matches({"metadata.name": node_name}) for r in self.fields)


@dataclass(frozen=True, slots=True)
class NodeSelector:
    """Terms ORed: a node matches if any term matches."""

    terms: tuple[NodeSelectorTerm, ...]

    def matches(self, labels: Mapping[str, str], node_name: str) -> bool:
        return any(t.matches(labels, node_name) for t in self.terms)


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """``matchLabels`` and ``matchExpressions`` ANDed; the empty selector matches all."""

    requirements: tuple[Requirement, ...] = ()
    #: Why ``metav1.LabelSelectorAsSelector`` would fail on it (then it matches nothing), or None.
    error: str | None = None

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.error is not None:
            return False
        return all(r.matches(labels) for r in self.requirements)

    @property
    def everything(self) -> bool:
        """The empty selector ``{}``: every object (not the absent one, which is nothing)."""
        return self.error is None and not self.requirements


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str
    effect: str  # NoSchedule, PreferNoSchedule, NoExecute


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str
    operator: str  # Equal, Exists
    value: str
    effect: str  # "" matches every effect

    def tolerates(self, taint: Taint) -> bool:
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        if self.operator in ("Equal", ""):
            return self.value == taint.value
        return False  # an operator the API does not know tolerates nothing


@dataclass(frozen=True, slots=True)
class HostPort:
    protocol: str
    ip: str
    port: int

    def conflicts(self, other: HostPort) -> bool:
        if self.port <= 0 or self.port != other.port or self.protocol != other.protocol:
            return False
        # Upstream HostPortInfo: only 0.0.0.0 (or no IP) binds every address; "::" is one IP.
        wildcard = ("", "0.0.0.0")
        return self.ip in wildcard or other.ip in wildcard or self.ip == other.ip


@dataclass(frozen=True, slots=True)
class PodAffinityTerm:
    selector: LabelSelector | None
    #: Namespaces the selector applies to; empty with no namespace selector = the pod's own.
    namespaces: frozenset[str]
    namespace_selector: LabelSelector | None
    topology_key: str


@dataclass(frozen=True, slots=True)
class SpreadConstraint:
    """A ``DoNotSchedule`` topology spread constraint (soft ones do not filter)."""

    max_skew: int
    topology_key: str
    selector: LabelSelector | None
    min_domains: int
    #: Honor (default) or Ignore: whether the pod's node affinity limits the domains counted.
    node_affinity_policy: str
    #: Ignore (default) or Honor: whether tainted nodes the pod does not tolerate count.
    node_taints_policy: str


@dataclass(frozen=True, slots=True)
class PodScheduling:
    """What the scheduler's filters read from a pod besides requests and volumes.

    Interned by the converter: pods with the same constraints share one instance,
    which makes the equivalence of pods a cheap identity check.
    """

    node_selector: tuple[tuple[str, str], ...] = ()
    required_affinity: NodeSelector | None = None
    tolerations: tuple[Toleration, ...] = ()
    host_ports: tuple[HostPort, ...] = ()
    affinity: tuple[PodAffinityTerm, ...] = ()
    anti_affinity: tuple[PodAffinityTerm, ...] = ()
    spread: tuple[SpreadConstraint, ...] = ()
    #: Set when a pod (anti-)affinity or topology spread selector cannot be parsed:
    #: kube-scheduler then refuses the pod on every node.
    parse_error: str | None = None

    @property
    def has_pod_constraints(self) -> bool:
        return bool(self.affinity or self.anti_affinity or self.spread)


EMPTY_SCHEDULING = PodScheduling()


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


@dataclass(frozen=True, slots=True)
class Pod:
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

    @property
    def ref(self) -> str:
        return f"{self.namespace}/{self.name}"

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


@dataclass(frozen=True, slots=True)
class CSINode:
    name: str
    drivers: tuple[str, ...]


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

    def selects(self, node: Node) -> bool:
        if node.name in self.node_names:
            return True
        if not self.node_selector:
            return False
        return all(node.labels.get(k) == v for k, v in self.node_selector)


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
    #: Things worth telling a person that do not stop the decision (bad annotations).
    warnings: list[str] = field(default_factory=list)

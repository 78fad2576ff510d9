"""The simulated API server's store: every object of the world, indexed.

``ClusterStore`` keeps immutable model objects (``kube.model``) and replaces them
with ``dataclasses.replace`` when they change. Indices (pods per node, per owner, per
label; volumes pinned per host) keep the controllers, the scheduler and the storage
driver away from full scans. Mutations record what changed in three change sets the
world drains after every step (``World.settle``): nodes that changed, owners that
lost or gained pods, and whether a pending pod may now fit somewhere
(``needs_schedule``). ``emulator.cluster.SimCluster`` adds the ``ClusterAPI`` the
autoscaler calls.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from emulator.budgets import PdbSpec
from emulator.clock import SimClock
from emulator.metrics import Metrics
from kube.clusterapi import NotFound
from kube.model import (
    Controller,
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    Node,
    NodeGroupSpec,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    PodDisruptionBudget,
    StorageClass,
    VolumeAttachment,
)
from kube.names import CA_TO_BE_DELETED_TAINT, HOSTNAME_LABEL, StorageNames

__all__ = ["ClusterStore", "OwnerKey", "PodKey", "hostname", "is_draining", "pinned_host"]

PodKey = tuple[str, str]
#: (kind, namespace, name) of a pod's controller.
OwnerKey = tuple[str, str, str]


def is_draining(node: Node) -> bool:
    """Marked for removal or cordoned: the storage driver starts unpinning (thesis 3.2.1)."""
    return node.unschedulable or node.has_taint(CA_TO_BE_DELETED_TAINT)


def pinned_host(pv: PersistentVolume) -> str | None:
    """The one hostname a PV's node affinity allows, if it allows exactly one."""
    affinity = pv.node_affinity
    if affinity is None:
        return None
    hosts: set[str] = set()
    for term in affinity.terms:
        for req in (*term.requirements, *term.fields):
            if req.key in (HOSTNAME_LABEL, "metadata.name") and req.operator == "In":
                hosts.update(req.values)
    return next(iter(hosts)) if len(hosts) == 1 else None


def hostname(node: Node) -> str:
    return node.labels.get(HOSTNAME_LABEL, node.name)


def _node_wakes_pods(old: Node | None, new: Node) -> bool:
    """Could this node change let a pending pod fit where it did not?"""
    if old is None:
        return True
    if any(t not in new.taints for t in old.taints) or (old.unschedulable and not new.unschedulable):
        return True
    if (new.free_local_bytes or 0) > (old.free_local_bytes or 0):
        return True
    return old.labels != new.labels or old.allocatable != new.allocatable or (new.ready and not old.ready)


class ClusterStore:
    """In-memory Kubernetes objects with the indices the world reads; ``SimCluster`` serves them."""

    def __init__(self, clock: SimClock, names: StorageNames, metrics: Metrics) -> None:
        self.clock = clock
        #: Pods created before the run started count as pending from the start.
        self.start = clock.now
        self.names = names
        self.metrics = metrics
        self._nodes: dict[str, Node] = {}
        self._sorted_nodes: list[Node] | None = None
        self._by_hostname: dict[str, str] = {}
        self._pods: dict[PodKey, Pod] = {}
        self._pods_on: dict[str, dict[PodKey, None]] = {}
        self._pending: dict[PodKey, None] = {}
        self._by_owner: dict[OwnerKey, dict[PodKey, None]] = {}
        self._by_namespace: dict[str, dict[PodKey, None]] = {}
        self._by_label: dict[tuple[str, str, str], set[PodKey]] = {}
        self._pods_version = 0
        self._claims: dict[tuple[str, str], PersistentVolumeClaim] = {}
        self._volumes: dict[str, PersistentVolume] = {}
        self._pinned: dict[str, set[str]] = {}  # hostname -> PV names pinned there
        self.storage_classes: dict[str, StorageClass] = {}
        self.csi_capacities: list[CSIStorageCapacity] = []
        self.csi_drivers: dict[str, CSIDriver] = {}
        self.csi_nodes: dict[str, CSINode] = {}
        #: By name; kept by ``emulator.attach_detach.AttachDetachController``.
        self.volume_attachments: dict[str, VolumeAttachment] = {}
        self.namespaces: dict[str, Mapping[str, str]] = {}
        self.priority_config: str | None = None
        self.warnings: list[str] = []
        self._pdbs: dict[tuple[str, str], PdbSpec] = {}
        self._pdbs_version = 0
        self._pdb_cache: tuple[tuple[int, int], list[PodDisruptionBudget]] | None = None
        self._controllers: dict[OwnerKey, Controller] = {}
        #: The cloud's groups as ``NodeGroup`` objects (set by the cloud).
        self.node_group_specs: Callable[[], list[NodeGroupSpec]] = list
        # change sets, drained by the world
        self.changed_nodes: set[str] = set()
        #: owner -> recreate missing pods as replacements (marked unschedulable at once).
        self.changed_owners: dict[OwnerKey, bool] = {}
        self.needs_schedule = False
        self.on_change: Callable[[], None] | None = None
        #: Runs an action at a later time (the world's timeline); None: terminations are immediate.
        self.schedule: Callable[[float, str, Callable[[], None]], None] | None = None

    # --- reads ---------------------------------------------------------------------------
    def nodes(self) -> list[Node]:
        """Nodes sorted by name (cached until a node changes)."""
        if self._sorted_nodes is None:
            self._sorted_nodes = sorted(self._nodes.values(), key=lambda n: n.name)
        return self._sorted_nodes

    def node(self, name: str) -> Node | None:
        return self._nodes.get(name)

    def node_by_hostname(self, host: str) -> Node | None:
        name = self._by_hostname.get(host)
        return self._nodes.get(name) if name is not None else self._nodes.get(host)

    def pod(self, namespace: str, name: str) -> Pod | None:
        return self._pods.get((namespace, name))

    def pods(self) -> Iterable[Pod]:
        return self._pods.values()

    def pods_on(self, node: str) -> list[Pod]:
        return list(map(self._pods.__getitem__, self._pods_on.get(node, ())))

    def pending_pods(self) -> list[Pod]:
        return list(map(self._pods.__getitem__, self._pending))

    def pending_count(self) -> int:
        return len(self._pending)

    def owned_pods(self, owner: OwnerKey) -> list[Pod]:
        return list(map(self._pods.__getitem__, self._by_owner.get(owner, ())))

    def pods_with_labels(self, namespace: str, labels: Mapping[str, str]) -> list[Pod]:
        """Pods in ``namespace`` carrying every one of ``labels``."""
        sets = [self._by_label.get((namespace, k, v), set()) for k, v in labels.items()]
        if not sets:
            return [self._pods[k] for k in self._by_namespace.get(namespace, ())]
        keys = set.intersection(*sorted(sets, key=len))
        return [self._pods[k] for k in sorted(keys)]

    def claim(self, namespace: str, name: str) -> PersistentVolumeClaim | None:
        return self._claims.get((namespace, name))

    def claims(self) -> Mapping[tuple[str, str], PersistentVolumeClaim]:
        return self._claims

    def volume(self, name: str) -> PersistentVolume | None:
        return self._volumes.get(name)

    def volumes(self) -> Mapping[str, PersistentVolume]:
        return self._volumes

    def volumes_pinned_to(self, node: Node) -> list[PersistentVolume]:
        return [self._volumes[v] for v in sorted(self._pinned.get(hostname(node), ()))]

    def is_local_volume(self, pv: PersistentVolume) -> bool:
        """A volume of the migratable local provisioner (Rok): it can be unpinned and restored."""
        if pv.driver == self.names.provisioner:
            return True
        sc = self.storage_classes.get(pv.storage_class or "")
        return pv.driver == "" and sc is not None and sc.provisioner == self.names.provisioner

    def controller(self, key: OwnerKey) -> Controller | None:
        return self._controllers.get(key)

    def pdb(self, namespace: str, name: str) -> PdbSpec | None:
        return self._pdbs.get((namespace, name))

    def pdbs_matching(self, pod: Pod) -> list[PdbSpec]:
        return [s for s in self._pdbs.values()
                if s.namespace == pod.namespace and s.selector is not None and s.selector.matches(pod.labels)]

    def pdb_status(self, spec: PdbSpec) -> PodDisruptionBudget:
        """The budget as the disruption controller computes it now."""
        if spec.selector is None:
            return spec.status(0, 0)
        equal = {r.key: r.values[0] for r in spec.selector.requirements if r.operator == "In" and len(r.values) == 1}
        candidates = self.pods_with_labels(spec.namespace, equal)
        matching = [p for p in candidates if spec.selector.matches(p.labels) and not p.is_terminal]
        # A terminating pod is not healthy (the disruption controller's rule).
        healthy = sum(1 for p in matching if p.node_name and p.phase == "Running" and p.deleted is None)
        return spec.status(healthy, len(matching))

    def _pdb_statuses(self) -> list[PodDisruptionBudget]:
        version = (self._pods_version, self._pdbs_version)
        if self._pdb_cache is None or self._pdb_cache[0] != version:
            self._pdb_cache = (version, [self.pdb_status(s) for s in self._pdbs.values()])
        return self._pdb_cache[1]

    # --- writes (the world's parts; no notification) ----------------------------------------
    def _require_node(self, name: str) -> Node:
        node = self._nodes.get(name)
        if node is None:
            raise NotFound(f'nodes "{name}" not found')
        return node

    def _notify(self) -> None:
        if self.on_change is not None:
            self.on_change()

    def put_node(self, node: Node) -> None:
        old = self._nodes.get(node.name)
        if old is not None and hostname(old) != hostname(node):
            self._by_hostname.pop(hostname(old), None)
        self._nodes[node.name] = node
        self._by_hostname[hostname(node)] = node.name
        self._sorted_nodes = None
        self.changed_nodes.add(node.name)
        if _node_wakes_pods(old, node):
            self.needs_schedule = True

    def remove_node(self, name: str) -> list[Pod]:
        """Delete a node and every pod bound to it (their controllers recreate them); returns the pods."""
        node = self._nodes.pop(name, None)
        if node is None:
            return []
        self._by_hostname.pop(hostname(node), None)
        self._sorted_nodes = None
        removed = self.pods_on(name)
        for pod in removed:
            self.remove_pod((pod.namespace, pod.name), replacement=True)
        self._pods_on.pop(name, None)
        self.changed_nodes.add(name)
        return removed

    def add_pod(self, pod: Pod) -> None:
        namespace = pod.namespace
        key = (namespace, pod.name)
        if key in self._pods:
            raise ValueError(f"pod {pod.ref} already exists")
        self._pods[key] = pod
        self._index_pod(key, pod)
        owner = pod.owner
        if owner is not None:
            self._by_owner.setdefault((owner.kind, namespace, owner.name), {})[key] = None
        self._by_namespace.setdefault(namespace, {})[key] = None
        by_label = self._by_label
        for label, value in pod.labels.items():
            keys = by_label.get((namespace, label, value))
            if keys is None:
                by_label[(namespace, label, value)] = {key}
            else:
                keys.add(key)
        if not pod.node_name and not pod.is_terminal:
            self.needs_schedule = True
            self.metrics.pod_pending(pod.ref, pod.uid, max(pod.created or self.clock.now, self.start))
        self._pods_version += 1

    def _index_pod(self, key: PodKey, pod: Pod) -> None:
        if pod.node_name:
            self._pods_on.setdefault(pod.node_name, {})[key] = None
            self.changed_nodes.add(pod.node_name)
        elif not pod.is_terminal:
            self._pending[key] = None

    def _unindex_pod(self, key: PodKey, pod: Pod) -> None:
        if pod.node_name:
            on = self._pods_on.get(pod.node_name)
            if on is not None:
                on.pop(key, None)
            self.changed_nodes.add(pod.node_name)
        else:
            self._pending.pop(key, None)

    def replace_pod(self, pod: Pod) -> None:
        """Store a changed pod (same name; labels and owner must not change)."""
        key = (pod.namespace, pod.name)
        old = self._pods[key]
        self._unindex_pod(key, old)
        self._pods[key] = pod
        self._index_pod(key, pod)
        if not old.node_name and pod.node_name:
            self.metrics.pod_bound(pod.uid)
            if pod.owner is not None:  # ordered StatefulSets wait for the previous pod to run
                owner = (pod.owner.kind, pod.namespace, pod.owner.name)
                self.changed_owners.setdefault(owner, False)
        self._pods_version += 1

    def remove_pod(self, key: PodKey, replacement: bool = False) -> Pod | None:
        pod = self._pods.pop(key, None)
        if pod is None:
            return None
        self._unindex_pod(key, pod)
        self._by_namespace.get(pod.namespace, {}).pop(key, None)
        for label, value in pod.labels.items():
            keys = self._by_label.get((pod.namespace, label, value))
            if keys is not None:
                keys.discard(key)
        if pod.owner is not None:
            owner = (pod.owner.kind, pod.namespace, pod.owner.name)
            self._by_owner.get(owner, {}).pop(key, None)
            self.changed_owners[owner] = self.changed_owners.get(owner, False) or replacement
        if pod.node_name:
            self.needs_schedule = True
        self.metrics.pod_deleted(pod.uid)
        self._pods_version += 1
        return pod

    def put_claim(self, claim: PersistentVolumeClaim, wake: bool = True) -> None:
        self._claims[(claim.namespace, claim.name)] = claim
        self.needs_schedule = self.needs_schedule or wake

    def remove_claim(self, namespace: str, name: str) -> None:
        self._claims.pop((namespace, name), None)

    def put_volume(self, pv: PersistentVolume, wake: bool = True) -> None:
        old = self._volumes.get(pv.name)
        if old is not None:
            self._unpin(old)
        self._volumes[pv.name] = pv
        host = pinned_host(pv)
        if host is not None:
            self._pinned.setdefault(host, set()).add(pv.name)
            node = self.node_by_hostname(host)
            if node is not None:
                self.changed_nodes.add(node.name)
        self.needs_schedule = self.needs_schedule or wake

    def _unpin(self, pv: PersistentVolume) -> None:
        host = pinned_host(pv)
        if host is not None:
            self._pinned.get(host, set()).discard(pv.name)
            node = self.node_by_hostname(host)
            if node is not None:
                self.changed_nodes.add(node.name)

    def remove_volume(self, name: str) -> None:
        pv = self._volumes.pop(name, None)
        if pv is not None:
            self._unpin(pv)

    def put_storage_class(self, sc: StorageClass) -> None:
        self.storage_classes[sc.name] = sc
        self.needs_schedule = True

    def put_pdb(self, spec: PdbSpec) -> None:
        self._pdbs[spec.key] = spec
        self._pdbs_version += 1

    def remove_pdb(self, namespace: str, name: str) -> bool:
        removed = self._pdbs.pop((namespace, name), None) is not None
        self._pdbs_version += 1
        return removed

    def put_controller(self, controller: Controller) -> None:
        key = (controller.kind, controller.namespace, controller.name)
        self._controllers[key] = controller

    def remove_controller(self, key: OwnerKey) -> None:
        self._controllers.pop(key, None)

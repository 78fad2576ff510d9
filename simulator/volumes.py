"""Volume binding, extended with local storage capacity (storage-semantics section 1).

``VolumeIndex.plan(pod, unpinned)`` resolves a pod's claims once into a
``VolumePlan``: what every node must satisfy (bound PV affinity, allowed
topologies), what fails everywhere (unbound Immediate claims, missing objects),
how many local bytes must be provisioned (summed over the pod's claims per capacity
pool, the thesis' fix to per-claim checks; ``simulator/capacity.py`` says which pool a
class draws from), and which claims may bind to Available PVs. The predicate checker
then tests plans against nodes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from kube.model import (
    BindingMode,
    ClusterObjects,
    Node,
    NodeSelector,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    StorageClass,
)
from kube.names import StorageNames
from simulator.capacity import ROK_POOL, CapacitySources
from simulator.nodematch import NodeMatcher

__all__ = ["NO_PROVISIONER", "NodeMatcher", "PoolDemand", "StaticFit", "VolumeIndex", "VolumePlan"]

NO_PROVISIONER = "kubernetes.io/no-provisioner"

# Reasons, worded as kube-scheduler's VolumeBinding plugin words them.
REASON_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
REASON_NODE_CONFLICT = "node(s) had volume node affinity conflict"
REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
REASON_NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
REASON_PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
REASON_ZONE_CONFLICT = "node(s) had no available volume zone"
REASON_RWOP_CONFLICT = ("node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod "
                        "access mode")

#: VolumeZone's labels (the converter reads the same ones off PVs), and the GA label a
#: node may carry instead of a PV's beta one.
ZONE_LABELS = ("failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region",
               "topology.kubernetes.io/zone", "topology.kubernetes.io/region")
_GA_LABEL = {"failure-domain.beta.kubernetes.io/zone": "topology.kubernetes.io/zone",
             "failure-domain.beta.kubernetes.io/region": "topology.kubernetes.io/region"}


@dataclass(frozen=True, slots=True)
class ProvisionClaim:
    """A claim that needs a new volume on the chosen node."""

    claim: PersistentVolumeClaim
    storage_class: StorageClass
    size: int


#: Bytes a pod provisions in one non-local pool: (pool, bytes, whether the class's driver
#: publishes CSIStorageCapacity, so that a node without the pool's annotation is left to
#: those objects; see ``simulator/localcapacity.py``). The local pool is ``local_bytes``.
PoolDemand = tuple[str, int, bool]


@dataclass(frozen=True, slots=True)
class StaticFit:
    """What binding to Available PVs leaves to provision on one node, or why it cannot."""

    reason: str | None = None
    extra_local: int = 0
    extra_pools: tuple[PoolDemand, ...] = ()


@dataclass(frozen=True, slots=True)
class VolumePlan:
    """What a pod's volumes demand of a node."""

    #: Set when no node can satisfy the volumes (reason, e.g. an unbound Immediate claim).
    error: str | None = None
    #: Set when VolumeBinding's filter (not its PreFilter) refuses every node: a claim
    #: bound to a PV that does not exist, or one with no PV to bind and no provisioner.
    node_error: str | None = None
    #: Zone/region labels of the bound PVs (VolumeZone): key -> allowed values.
    zones: tuple[tuple[str, frozenset[str]], ...] = ()
    #: Node affinities of bound PVs, each must match.
    pinned: tuple[NodeSelector, ...] = ()
    #: Bytes to provision through the local provisioner, checked against free local capacity.
    local_bytes: int = 0
    #: ``allowedTopologies`` of the classes of local claims to provision, each must match.
    topologies: tuple[NodeSelector, ...] = ()
    #: Claims to provision through other provisioners (allowedTopologies, CSIStorageCapacity).
    provision: tuple[ProvisionClaim, ...] = ()
    #: WaitForFirstConsumer claims that may bind an Available PV: (claim, candidate PVs by size).
    static: tuple[tuple[ProvisionClaim, tuple[PersistentVolume, ...]], ...] = ()
    #: Summed-pool claims (counted in ``local_bytes`` or ``pools``) whose CSIDriver publishes
    #: ``storageCapacity``. On a live node kube-scheduler decides them by its
    #: CSIStorageCapacity objects, one claim at a time, so that is the rule there; a new
    #: (template) node has published none yet and is checked by its pools (or by the
    #: objects after all, for a non-local pool the template has no value for).
    capacity_checks: tuple[ProvisionClaim, ...] = ()
    #: Bytes of non-local pools (TopoLVM device classes), summed per pool, sorted by pool.
    pools: tuple[PoolDemand, ...] = ()
    #: Part of ``local_bytes`` that a live node leaves to CSIStorageCapacity (kube-scheduler parity).
    published_local: int = 0

    @property
    def live_local_bytes(self) -> int:
        """Local bytes checked against a live node's free capacity (the rest go by CSIStorageCapacity)."""
        return self.local_bytes - self.published_local

    @property
    def trivial(self) -> bool:
        return not (self.error or self.node_error or self.pinned or self.local_bytes or self.topologies
                    or self.provision or self.static or self.capacity_checks or self.zones or self.pools)

    @property
    def key(self) -> tuple[object, ...]:
        """Equal keys = equal demands on every node (pod equivalence)."""
        return (
            self.error,
            self.node_error,
            self.zones,
            self.pinned,
            self.local_bytes,
            self.topologies,
            tuple((p.storage_class.name, p.size) for p in self.provision),
            tuple((p.storage_class.name, p.size, pvs) for p, pvs in self.static),
            tuple((p.storage_class.name, p.size) for p in self.capacity_checks),
            self.pools,
            self.published_local,
        )


TRIVIAL = VolumePlan()


@dataclass(slots=True)
class VolumeIndex:
    """PVCs, PVs, classes and capacities of a snapshot, for volume binding checks."""

    objects: ClusterObjects
    names: StorageNames
    storage_aware: bool = True
    _available: dict[str | None, list[PersistentVolume]] = field(default_factory=dict)
    _cache: dict[tuple[str, str, bool], VolumePlan] = field(default_factory=dict)
    #: ReadWriteOncePod claims -> refs of the scheduled pods that use them.
    _rwop_users: dict[tuple[str, str], set[str]] = field(default_factory=dict)
    _has_rwop: bool = False
    #: Which pool each class draws from, and the CSIStorageCapacity objects.
    sources: CapacitySources = field(init=False)

    def __post_init__(self) -> None:
        self.sources = CapacitySources.default(self.names.provisioner, self.objects.csi_capacities)
        for pv in self.objects.volumes.values():
            if pv.phase == "Available" and pv.claim is None:
                self._available.setdefault(pv.storage_class, []).append(pv)
        for pvs in self._available.values():
            pvs.sort(key=lambda v: (v.capacity, v.name))
        rwop = {key for key, claim in self.objects.claims.items() if "ReadWriteOncePod" in claim.access_modes}
        self._has_rwop = bool(rwop)
        if rwop:
            for pod in self.objects.pods:
                if pod.node_name and not pod.is_terminal:
                    for name in pod.claims:
                        if (pod.namespace, name) in rwop:
                            self._rwop_users.setdefault((pod.namespace, name), set()).add(pod.ref)

    @property
    def has_rwop_claims(self) -> bool:
        """Whether any claim is ReadWriteOncePod (whether a pod may use it depends on every other pod)."""
        return self._has_rwop

    def is_local_class(self, class_name: str | None) -> bool:
        sc = self.objects.storage_classes.get(class_name or "")
        return sc is not None and sc.provisioner == self.names.provisioner

    def claim_of(self, pod: Pod, name: str) -> PersistentVolumeClaim | None:
        return self.objects.claims.get((pod.namespace, name))

    def is_migratable(self, pv: PersistentVolume) -> bool:
        """A PV of the local provisioner: its data can be unpinned and restored elsewhere."""
        if not self.storage_aware:
            return False
        if pv.driver == self.names.provisioner:
            return True
        return pv.driver == "" and self.is_local_class(pv.storage_class)

    def plan(self, pod: Pod, unpinned: bool = False) -> VolumePlan:
        """Resolve the pod's claims. ``unpinned``: migratable PVs are simulated as unpinned."""
        if not pod.claims:
            return TRIVIAL
        key = (pod.namespace, pod.name, unpinned)
        cached = self._cache.get(key)
        if cached is None:
            cached = self._cache[key] = self._plan(pod, unpinned)
        return cached

    def _plan(self, pod: Pod, unpinned: bool) -> VolumePlan:
        pinned: list[NodeSelector] = []
        topologies: list[NodeSelector] = []
        local_bytes = 0
        provision: list[ProvisionClaim] = []
        static: list[tuple[ProvisionClaim, tuple[PersistentVolume, ...]]] = []
        capacity: list[ProvisionClaim] = []
        pools: dict[str, int] = {}
        lenient: set[str] = set()
        published_local = 0
        zones: list[tuple[str, frozenset[str]]] = []
        node_error = None
        classes = self.objects.storage_classes
        for name in pod.claims:
            claim = self.claim_of(pod, name)
            if claim is None:
                return VolumePlan(error=f'persistentvolumeclaim "{name}" not found')
            users = self._rwop_users.get((pod.namespace, name))
            if users and users - {pod.ref}:
                # VolumeRestrictions: a ReadWriteOncePod claim another pod already uses.
                return VolumePlan(error=REASON_RWOP_CONFLICT)
            if name in pod.ephemeral_claims and (claim.controller_uid is None or claim.controller_uid != pod.uid):
                # A generic ephemeral volume's claim must be the pod's own (upstream
                # ephemeral.VolumeIsForPod): one of the same name made by someone else
                # is not used, and the pod waits.
                return VolumePlan(error=f"PVC {claim.namespace}/{claim.name} was not created for pod "
                                        f"{pod.namespace}/{pod.name} (pod is not owner)")
            if claim.volume_name:
                pv = self.objects.volumes.get(claim.volume_name)
                if pv is None:
                    node_error = REASON_PV_NOT_EXIST
                    continue
                zones.extend(pv.zones)
                # An unpinned volume (affinity removed after its snapshot) is restored onto
                # whichever node the pod lands on, so it needs that node's free capacity.
                if self.is_migratable(pv) and (unpinned or pv.node_affinity is None):
                    local_bytes += max(pv.capacity, claim.request)
                    sc = classes.get(pv.storage_class or "")
                    if sc is not None and sc.allowed_topologies is not None and sc.allowed_topologies not in topologies:
                        topologies.append(sc.allowed_topologies)
                elif pv.node_affinity is not None:
                    pinned.append(pv.node_affinity)
                continue
            if not claim.storage_class:
                # No class: not delayed binding, so an unbound immediate claim (upstream).
                return VolumePlan(error=REASON_UNBOUND_IMMEDIATE)
            sc = classes.get(claim.storage_class)
            if sc is None:
                return VolumePlan(error=f'storageclass.storage.k8s.io "{claim.storage_class}" not found')
            if sc.binding_mode is BindingMode.IMMEDIATE:
                return VolumePlan(error=REASON_UNBOUND_IMMEDIATE)
            item = ProvisionClaim(claim, sc, claim.request)
            candidates = tuple(
                pv for pv in self._available.get(claim.storage_class, ())
                if pv.capacity >= claim.request and set(claim.access_modes) <= set(pv.access_modes)
            )
            if candidates:
                static.append((item, candidates))
            elif sc.provisioner == NO_PROVISIONER:
                node_error = REASON_BIND_CONFLICT  # no PV to bind, none to provision: a filter failure
            elif self.storage_aware and (pool := self.sources.pool_of(sc)) is not None:
                if sc.allowed_topologies is not None and sc.allowed_topologies not in topologies:
                    topologies.append(sc.allowed_topologies)
                published = self.publishes_capacity(sc)
                if published:
                    capacity.append(item)
                if pool == ROK_POOL:
                    local_bytes += claim.request
                    if published:
                        published_local += claim.request
                elif claim.request > 0:
                    pools[pool] = pools.get(pool, 0) + claim.request
                    if published:
                        lenient.add(pool)
            else:
                provision.append(item)
        return VolumePlan(None, node_error, tuple(zones), tuple(pinned), local_bytes, tuple(topologies),
                          tuple(provision), tuple(static), tuple(capacity),
                          tuple((pool, size, pool in lenient) for pool, size in sorted(pools.items())),
                          published_local)

    def pools(self) -> tuple[str, ...]:
        """The non-local pools the cluster's classes draw from (TopoLVM device classes), sorted."""
        if not self.storage_aware:
            return ()
        found = {self.sources.pool_of(sc) for sc in self.objects.storage_classes.values()}
        return tuple(sorted(pool for pool in found if pool is not None and pool != ROK_POOL))

    def publishes_capacity(self, sc: StorageClass) -> bool:
        """Whether the class's CSIDriver opts into storage capacity tracking."""
        driver = self.objects.csi_drivers.get(sc.provisioner)
        return driver is not None and driver.storage_capacity

    # --- per-node checks used by the predicate checker -------------------------
    def provision_reason(self, item: ProvisionClaim, node: Node) -> str | None:
        """Can ``item`` be provisioned on ``node`` (topology, CSIStorageCapacity)?"""
        sc = item.storage_class
        if sc.provisioner == NO_PROVISIONER:
            return REASON_BIND_CONFLICT
        if sc.allowed_topologies is not None and not sc.allowed_topologies.matches(node.labels, node.name):
            return REASON_BIND_CONFLICT  # kube-scheduler: provisioning not satisfied is a bind conflict
        if self.publishes_capacity(sc) and not self.capacity_ok(sc, item.size, node):
            return REASON_NOT_ENOUGH_SPACE
        return None

    def capacity_ok(self, sc: StorageClass, size: int, node: Node) -> bool:
        """A CSIStorageCapacity of the class, visible from the node, that fits ``size``.

        Upstream ``hasEnoughCapacity``: a claim without a storage request needs none;
        ``maximumVolumeSize`` is preferred over ``capacity``; an object without node
        topology is visible nowhere; each claim is checked on its own.
        """
        return self.sources.csi.fits(sc, size, node)

    def static_reason(self, plan: VolumePlan, node: Node, live: bool = True) -> StaticFit:
        """Bind WaitForFirstConsumer claims to Available PVs where one matches this node.

        Returns a reason, or the bytes of claims left to provision here, per pool.
        ``live``: the node is a real one (templates publish no CSIStorageCapacity yet).
        """
        extra_local = 0
        extra_pools: dict[str, tuple[int, bool]] = {}
        used: set[str] = set()
        for item, candidates in plan.static:
            match = next(
                (pv for pv in candidates if pv.name not in used and (
                    pv.node_affinity is None or pv.node_affinity.matches(node.labels, node.name))),
                None,
            )
            if match is not None:
                used.add(match.name)
                continue
            sc = item.storage_class
            if sc.provisioner == NO_PROVISIONER:
                return StaticFit(REASON_BIND_CONFLICT)
            pool = self.sources.pool_of(sc) if self.storage_aware else None
            if pool is not None:
                if sc.allowed_topologies is not None and not sc.allowed_topologies.matches(node.labels, node.name):
                    return StaticFit(REASON_BIND_CONFLICT)
                published = live and self.publishes_capacity(sc)
                if published and not self.capacity_ok(sc, item.size, node):
                    return StaticFit(REASON_NOT_ENOUGH_SPACE)
                if pool == ROK_POOL:
                    if not published:  # else decided by CSIStorageCapacity, as kube-scheduler does
                        extra_local += item.size
                elif item.size > 0:
                    size, lenient = extra_pools.get(pool, (0, False))
                    extra_pools[pool] = (size + item.size, lenient or published)
                continue
            reason = self.provision_reason(item, node)
            if reason is not None:
                return StaticFit(reason)
        return StaticFit(None, extra_local,
                         tuple((pool, size, lenient) for pool, (size, lenient) in sorted(extra_pools.items())))


def zone_reason(plan: VolumePlan, labels: Mapping[str, str]) -> str | None:
    """kube-scheduler's VolumeZone filter: a bound PV's zone/region labels must admit the node's.

    A node with none of the zone/region labels is fine (single-zone clusters); a PV's
    beta label may be matched by the node's GA label.
    """
    if not plan.zones or not any(key in labels for key in ZONE_LABELS):
        return None
    for key, allowed in plan.zones:
        value = labels.get(key)
        if value is None:
            value = labels.get(_GA_LABEL.get(key, key))
        if value is None or value not in allowed:
            return REASON_ZONE_CONFLICT
    return None


"""The extender's filter and scores: the simulator's volume binding over the view's nodes.

kube-scheduler calls the extender after its own filters, with the nodes that passed
them, so the extender answers one question only: can this pod's volumes be bound on
this node, counting free local capacity per pool (storage-semantics section 1; the pools
and their sources are ``simulator/capacity.py``'s, read from the same node annotations and
CSIStorageCapacity objects as the autoscaler reads)? It answers with
the very code the autoscaler simulates with (``simulator.volumes.VolumeIndex`` and
``simulator.predicates.PredicateChecker``), over a ``ClusterSnapshot`` whose nodes are
*storage views* of the real ones: same name, labels and free local bytes, no taints,
room for any pod. Taints, resources and pod (anti-)affinity stay kube-scheduler's,
judged on its own, fresher, view of which pods run where; and the pod is stripped of
what only those filters read. Every other failure is the checker's own, in its words.

Built once per change of the view's nodes or storage objects (``StorageFilter.build``),
then read under the extender's lock; in-flight reservations are subtracted from the
free local bytes for the length of one call.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import msgspec.structs
import numpy as np

from kube.model import EMPTY_SCHEDULING, UNBOUNDED_BYTES, ClusterObjects, Node, Pod, Resources
from kube.names import StorageNames
from simulator.capacity import pool_free
from simulator.predicates import PredicateChecker
from simulator.snapshot import ClusterSnapshot, IntArray
from simulator.volumes import (
    REASON_NOT_ENOUGH_SPACE,
    ProvisionClaim,
    VolumeIndex,
    VolumePlan,
)

__all__ = ["REASON_UNKNOWN_NODE", "FilterOutcome", "StorageFilter", "storage_pod"]

#: A node the scheduler passed but the view has not seen yet: its capacity is unknown.
REASON_UNKNOWN_NODE = "node(s) were not found in the storage-aware scheduler's cache"
#: Highest extender score (k8s.io/kube-scheduler/extender/v1: MaxExtenderPriority).
MAX_EXTENDER_PRIORITY = 10

#: Room for any pod: resources are kube-scheduler's to judge, not the extender's.
_ROOM = Resources(pods=1 << 40)


def _storage_node(node: Node) -> Node:
    return dataclasses.replace(node, taints=(), unschedulable=False, allocatable=_ROOM, capacity=_ROOM)


def storage_pod(pod: Pod) -> Pod:
    """The pod as the volume filters see it: its volumes, nothing kube-scheduler already judged."""
    return msgspec.structs.replace(pod, requests=Resources(), scheduling=EMPTY_SCHEDULING, node_name="")


@dataclass(frozen=True, slots=True)
class FilterOutcome:
    """One pod against the candidate nodes: who passed, why the others failed, what it needs."""

    passed: tuple[str, ...]
    failed: dict[str, str]
    #: Local bytes the pod provisions on a passed node (the most over passed nodes).
    local_bytes: int
    #: Names of the pod's claims that consume local capacity, any pool (for the reservation).
    local_claims: tuple[str, ...]
    #: Bytes the pod provisions in each other pool on a passed node (the most over passed nodes).
    pools: tuple[tuple[str, int], ...] = ()


class StorageFilter:
    """Volume binding with local capacity, for one state of the view's nodes and storage objects."""

    def __init__(self, nodes: Sequence[Node], objects: ClusterObjects, names: StorageNames) -> None:
        self.names = names
        self.snapshot = ClusterSnapshot(_storage_node(n) for n in nodes)
        self.volumes = VolumeIndex(objects, names, storage_aware=True)
        self.checker = PredicateChecker(self.snapshot, self.volumes)
        self._labels = [n.labels for n in nodes]
        self._sources = list(nodes)
        self._provision_memo: dict[tuple[str, int], list[str | None]] = {}
        self._group_memo: dict[str, tuple[IntArray, list[int]]] = {}
        self._last_names: tuple[list[str], IntArray, np.ndarray, np.ndarray] | None = None

    def same_nodes(self, nodes: Sequence[Node]) -> bool:
        """Same names and labels in the same order: only free capacity may have changed."""
        snap = self.snapshot
        if len(nodes) != snap.count:
            return False
        sources = self._sources
        return all(n is sources[i] or (n.name == sources[i].name and n.labels == self._labels[i])
                   for i, n in enumerate(nodes))

    def refresh_capacity(self, nodes: Sequence[Node]) -> None:
        """Take new free bytes (capacity annotations, every pool) without rebuilding the label index."""
        snap = self.snapshot
        for i, node in enumerate(nodes):
            if node is self._sources[i]:  # the watch cache keeps unchanged nodes as the same object
                continue
            self._sources[i] = node
            snap.nodes[i] = _storage_node(node)
            snap.free_local[i] = 0 if node.free_local_bytes is None else min(node.free_local_bytes, UNBOUNDED_BYTES)
            for pool, array in snap.pools.items():  # the other pools (TopoLVM device classes) alike
                array[i] = pool_free(node, pool)

    def with_storage(self, objects: ClusterObjects) -> StorageFilter:
        """The same nodes, new claims/volumes/classes/capacities (the label index is rebuilt)."""
        clone = StorageFilter.__new__(StorageFilter)
        clone.names = self.names
        clone.snapshot = self.snapshot
        clone.volumes = VolumeIndex(objects, self.names, storage_aware=True)
        clone.checker = PredicateChecker(self.snapshot, clone.volumes)
        clone._labels = self._labels
        clone._sources = self._sources
        clone._provision_memo = {}
        clone._group_memo = {}
        clone._last_names = None
        return clone

    # --- the verbs --------------------------------------------------------------------
    def plan(self, pod: Pod) -> tuple[Pod, VolumePlan]:
        subject = storage_pod(pod)
        return subject, self.volumes.plan(subject)

    def local_claims(self, pod: Pod) -> tuple[str, ...]:
        out = []
        for name in pod.claims:
            claim = self.volumes.claim_of(pod, name)
            if claim is None:
                continue
            pv = self.volumes.objects.volumes.get(claim.volume_name) if claim.volume_name else None
            if pv is not None:
                if self.volumes.is_migratable(pv) and pv.node_affinity is None:
                    out.append(name)
            else:
                sc = self.volumes.objects.storage_classes.get(claim.storage_class or "")
                if sc is not None and self.volumes.sources.pool_of(sc) is not None:
                    out.append(name)
        return tuple(out)

    def filter(self, pod: Pod, candidates: Sequence[str], reserved: IntArray,
               reserved_pools: Mapping[str, IntArray] | None = None) -> FilterOutcome:
        """Which candidates can hold the pod's volumes; ``reserved`` bytes per node are held for others
        (``reserved_pools``: in the other pools).


        One pass of vector masks over every node (the checker's ``feasible``), reasons from
        the checker once per group of nodes refused alike (``_vector_refusals``); only claims
        to provision through other provisioners, or to bind to Available PVs, need a
        per-node look.
        """
        subject, plan = self.plan(pod)
        names = list(candidates)
        if plan.trivial:
            return FilterOutcome(tuple(names), {}, 0, ())
        if plan.error is not None:
            return FilterOutcome((), dict.fromkeys(names, plan.error), 0, ())
        snap = self.snapshot
        at, known, named = self._positions(names)
        # Failures are collected as (mask over the candidates, reason): whole masks at once.
        refusals: list[tuple[np.ndarray, str]] = [(~known, REASON_UNKNOWN_NODE)]
        one_by_one: dict[str, str] = {}
        with _Held(snap, reserved, reserved_pools):
            ok = self.checker.feasible(subject, plan)[at] & known
            refusals.extend(self._vector_refusals(subject, plan, at, known & ~ok))
            if self.checker.needs_node_checks(subject, dataclasses.replace(plan, provision=())):
                # Binding to Available PVs (each PV has its own node affinity), or any other
                # per-node volume check: the checker's full answer, node by node.
                for pos in np.flatnonzero(ok).tolist():
                    why = self.checker.check(subject, plan, int(at[pos]))
                    if why is not None:
                        one_by_one[names[pos]] = why.reason
                        ok[pos] = False
            else:
                for item in plan.provision:  # per topology group, not per node
                    verdicts = self._provision_reasons(item)
                    groups = self._groups(item.storage_class.name)[0][at]
                    for group, verdict in enumerate(verdicts):
                        if verdict is not None:
                            refused = ok & (groups == group)
                            refusals.append((refused, verdict))
                            ok &= ~refused
            most = plan.local_bytes
            pools = {pool: size for pool, size, _ in plan.pools}
            if plan.static:
                demands = [self.checker.demand_on(subject, plan, int(at[pos])) for pos in np.flatnonzero(ok)]
                most = max((local for local, _ in demands), default=plan.local_bytes)
                for _, held in demands:
                    for pool, size in held:
                        pools[pool] = max(pools.get(pool, 0), size)
        # The candidates' names picked by masks in C (``named``: them as an object array).
        passed = tuple(named[ok].tolist())
        failed: dict[str, str] = {}
        for mask, reason in refusals:
            if mask.any():
                failed.update(dict.fromkeys(named[mask].tolist(), reason))
        failed.update(one_by_one)
        return FilterOutcome(passed, failed, most if passed else 0, self.local_claims(pod),
                             tuple(sorted(pools.items())) if passed else ())

    def _positions(self, names: list[str]) -> tuple[IntArray, np.ndarray, np.ndarray]:
        """Node indices of ``names`` (0 where unknown), which are known, and the names as an
        object array. kube-scheduler sends the same list call after call while its nodes do
        not change, so the last one is kept."""
        last = self._last_names
        if last is not None and names == last[0]:
            return last[1], last[2], last[3]
        get = self.snapshot.index.get
        idxs = np.fromiter((get(name, -1) for name in names), np.int64, len(names))
        known = idxs >= 0
        at = np.where(known, idxs, 0)
        named = np.empty(len(names), dtype=object)
        named[:] = names
        self._last_names = (names, at, known, named)
        return at, known, named

    def _groups(self, class_name: str) -> tuple[IntArray, list[int]]:
        """Nodes grouped by the labels provisioning in this class reads: the keys of its
        ``allowedTopologies`` and of its CSIStorageCapacity segments. Nodes of one group
        get the same answer from ``VolumeIndex.provision_reason``; returns each node's group
        and one node of each group."""
        cached = self._group_memo.get(class_name)
        if cached is None:
            keys: set[str] = set()
            sc = self.volumes.objects.storage_classes.get(class_name)
            if sc is not None and sc.allowed_topologies is not None:
                for term in sc.allowed_topologies.terms:
                    keys.update(r.key for r in term.requirements)
            for cap in self.volumes.objects.csi_capacities:
                if cap.storage_class == class_name and cap.node_topology is not None:
                    keys.update(r.key for r in cap.node_topology.requirements)
            ordered = sorted(keys)
            ids: dict[tuple[str | None, ...], int] = {}
            members = np.zeros(self.snapshot.count, np.int64)
            first: list[int] = []
            for idx in range(self.snapshot.count):
                labels = self.snapshot.nodes[idx].labels
                signature = tuple(labels.get(k) for k in ordered)
                group = ids.get(signature)
                if group is None:
                    group = ids[signature] = len(first)
                    first.append(idx)
                members[idx] = group
            cached = self._group_memo[class_name] = (members, first)
        return cached

    def _provision_reasons(self, item: ProvisionClaim) -> list[str | None]:
        """``VolumeIndex.provision_reason`` for each topology group of the item's class."""
        key = (item.storage_class.name, item.size)
        verdicts = self._provision_memo.get(key)
        if verdicts is None:
            _, first = self._groups(item.storage_class.name)
            nodes = self.snapshot.nodes
            verdicts = self._provision_memo[key] = [self.volumes.provision_reason(item, nodes[i]) for i in first]
        return verdicts

    def _vector_refusals(self, subject: Pod, plan: VolumePlan, at: IntArray,
                         refused: np.ndarray) -> list[tuple[np.ndarray, str]]:
        """Reasons for the candidates the vector filters refused, in the checker's own words.

        Each part of the plan is tried alone through ``feasible``; candidates that pass and
        fail the same parts fail ``PredicateChecker.check`` for the same reason (the first
        failing part in its order), so the checker is asked once per such group, on one of
        its nodes, and the answer labels the whole group. No ordering of reasons is copied here.
        """
        positions = np.flatnonzero(refused)
        if len(positions) == 0:
            return []
        codes = np.zeros(len(positions), np.int64)
        bit = 0
        for part in dataclasses.fields(plan):
            value = getattr(plan, part.name)
            if part.name == "error" or not value:
                continue
            alone = self.checker.feasible(subject, VolumePlan(**{part.name: value}))
            codes |= (~alone[at[positions]]).astype(np.int64) << bit
            bit += 1
        out: list[tuple[np.ndarray, str]] = []
        for code in np.unique(codes).tolist():
            members = positions[codes == code]
            why = self.checker.check(subject, plan, int(at[members[0]]))
            mask = np.zeros(len(refused), np.bool_)
            mask[members] = True
            # A node the vector filters refused and the checker would accept cannot happen; if
            # it ever did, refusing is the safe side (a pod waits rather than gets stuck).
            out.append((mask, why.reason if why is not None else REASON_NOT_ENOUGH_SPACE))
        return out

    def prioritize(self, pod: Pod, candidates: Iterable[str], reserved: IntArray,
                   reserved_pools: Mapping[str, IntArray] | None = None) -> list[tuple[str, int]]:
        """Tightest fit first: the node whose free bytes the pod's claims fill most scores
        ``MAX_EXTENDER_PRIORITY``, the loosest 0, so big disks stay free for big claims.

        The bytes left over are summed over every pool the pod draws from on that node
        (the local provisioner's and each TopoLVM device class's); a pool the node does
        not publish (CSIStorageCapacity decides there) is not counted. Pods without local
        claims, and nodes that cannot hold them, score 0 (neutral)."""
        subject, plan = self.plan(pod)
        names = list(candidates)
        if plan.trivial or plan.error is not None or not (plan.local_bytes or plan.static or plan.pools):
            return [(name, 0) for name in names]
        snap = self.snapshot
        leftover: dict[str, float] = {}
        with _Held(snap, reserved, reserved_pools):
            for name in names:
                idx = snap.index.get(name)
                if idx is not None:
                    left = _left_over(snap, *self.checker.demand_on(subject, plan, idx), idx)
                    if left is not None:
                        leftover[name] = left
        if not leftover:
            return [(name, 0) for name in names]
        low, high = min(leftover.values()), max(leftover.values())
        span = high - low
        scores = []
        for name in names:
            left = leftover.get(name)
            if left is None:
                scores.append((name, 0))
            elif span == 0:
                scores.append((name, MAX_EXTENDER_PRIORITY))
            else:
                scores.append((name, round(MAX_EXTENDER_PRIORITY * (high - left) / span)))
        return scores


def _left_over(snap: ClusterSnapshot, local: int, pools: Sequence[tuple[str, int]], idx: int) -> float | None:
    """Free bytes left on node ``idx`` after the pod's claims, over the pools it draws from; None when
    a pool cannot hold them or the pod provisions nothing there."""
    left, counted = 0, False
    if local:
        free = int(snap.free_local[idx])
        if free < local:
            return None
        left, counted = free - local, True
    for pool, need in pools:
        if not need:
            continue
        free = int(snap.pool_free(pool)[idx])
        if free < 0:
            continue  # not published on this node: CSIStorageCapacity decides, no bytes to compare
        if free < need:
            return None
        left, counted = left + free - need, True
    return float(left) if counted else None


class _Held:
    """Subtract reserved bytes from the snapshot's free capacity, every pool, for one call."""

    def __init__(self, snapshot: ClusterSnapshot, reserved: IntArray,
                 pools: Mapping[str, IntArray] | None = None) -> None:
        self.snapshot = snapshot
        self.reserved = reserved
        self.active = bool(len(reserved)) and bool(reserved.any())
        self.pools = {pool: held for pool, held in (pools or {}).items() if len(held) and held.any()}

    def __enter__(self) -> None:
        if self.active:
            self.snapshot.free_local[: len(self.reserved)] -= self.reserved
        self._saved: dict[str, IntArray] = {}
        for pool, held in self.pools.items():
            free = self.snapshot.pool_free(pool)[: len(held)]
            self._saved[pool] = free.copy()
            # A pool's negative value means "not published here" (CSIStorageCapacity decides):
            # held bytes lower a published value to zero at most, never into that meaning.
            free[:] = np.where(free >= 0, np.maximum(free - held, 0), free)

    def __exit__(self, *exc: object) -> None:
        if self.active:
            self.snapshot.free_local[: len(self.reserved)] += self.reserved
        for pool, saved in self._saved.items():
            self.snapshot.pool_free(pool)[: len(saved)] = saved

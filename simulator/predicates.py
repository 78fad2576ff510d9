"""A predicate checker equivalent to kube-scheduler's filters that matter to autoscaling.

Two ways in, one set of rules:

* ``feasible(pod, plan)`` tests one pod against **every** node of the snapshot at
  once. Static predicates (unschedulable, taints, node selector and affinity, bound
  PV affinity) become boolean masks built from a label index and cached per
  constraint object; resources and free local storage are compared as arrays. Only
  the nodes that survive go through the per-node predicates (host ports, binding to
  Available PVs, inter-pod affinity, topology spread).
* ``check(pod, plan, idx)`` runs the filters on one node in kube-scheduler's order
  and returns the first failure as an ``Unschedulable`` value, for reasons in
  ``stillUnschedulable``, events and tests.

Inter-pod affinity and topology spread live in ``podtopology.py``; local capacity
(claims summed per pool) in ``localcapacity.py``.
``tests/simulator/test_predicates.py`` (``test_fast_path_agrees_with_check``) checks that both agree.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from kube.model import (
    NodeSelector,
    Pod,
    PodScheduling,
    Requirement,
    Taint,
)
from simulator.labelindex import LabelIndex
from simulator.localcapacity import demand, fits_node, mask_capacity, unpublished
from simulator.podtopology import PodTopology, pod_topology, tolerated, topology_reason, untolerated_taint
from simulator.room import room_at
from simulator.snapshot import BoolArray, ClusterSnapshot, IntArray
from simulator.volumes import (
    REASON_BIND_CONFLICT,
    REASON_NODE_CONFLICT,
    REASON_NOT_ENOUGH_SPACE,
    VolumeIndex,
    VolumePlan,
    zone_reason,
)

__all__ = ["PredicateChecker", "Unschedulable", "untolerated_taint"]

UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")


@dataclass(frozen=True, slots=True)
class Unschedulable:
    """Why a pod does not fit a node: the filter plugin's name and its reason."""

    predicate: str
    reason: str

    def __str__(self) -> str:
        return self.reason


def parse_failure(error: str) -> Unschedulable:
    """A pod whose selectors kube-scheduler cannot parse fits no node (its PreFilter fails)."""
    return Unschedulable("InterPodAffinity", f"parsing pod: {error}")


class PredicateChecker:
    """kube-scheduler's filters over a ``ClusterSnapshot``, storage-aware through ``VolumeIndex``."""

    def __init__(self, snapshot: ClusterSnapshot, volumes: VolumeIndex,
                 namespaces: Mapping[str, Mapping[str, str]] | None = None) -> None:
        self.snapshot = snapshot
        self.volumes = volumes
        self.namespaces = namespaces or {}
        self._labels = LabelIndex(snapshot)
        self._static_cache: dict[int, BoolArray] = {}
        self._static_keep: list[object] = []
        #: id(constraints) -> (node serial each value was computed for, static verdict), per index.
        self._extra_masks: dict[int, tuple[IntArray, BoolArray]] = {}
        self._selector_cache: dict[NodeSelector, BoolArray] = {}
        self._taint_groups: dict[tuple[tuple[Taint, ...], bool], list[int]] = {}
        for idx in range(snapshot.base_count):
            node = snapshot.nodes[idx]
            self._taint_groups.setdefault((node.taints, node.unschedulable), []).append(idx)

    # --- static masks (base nodes) ------------------------------------------------
    def _selector_mask(self, selector: NodeSelector) -> BoolArray:
        cached = self._selector_cache.get(selector)
        if cached is None:
            cached = self._selector_cache[selector] = self._labels.selector(selector)
        return cached

    def _static_base(self, sched: PodScheduling) -> BoolArray:
        """Unschedulable, taints, node selector and required node affinity, on base nodes."""
        key = id(sched)
        cached = self._static_cache.get(key)
        if cached is not None:
            return cached
        size = self.snapshot.base_count
        mask = np.zeros(size, np.bool_)
        if sched.parse_error is not None:
            self._static_cache[key] = mask
            self._static_keep.append(sched)
            return mask
        for (taints, unschedulable), idxs in self._taint_groups.items():
            if unschedulable and not tolerated(UNSCHEDULABLE_TAINT, sched.tolerations):
                continue
            if untolerated_taint(taints, sched.tolerations) is None:
                mask[idxs] = True
        for key_value in sched.node_selector:
            mask &= self._labels.requirement(Requirement(key_value[0], "In", (key_value[1],)))
        if sched.required_affinity is not None:
            mask &= self._selector_mask(sched.required_affinity)
        self._static_cache[key] = mask
        self._static_keep.append(sched)  # keep id() stable for the cache's lifetime
        return mask

    def _static_one(self, sched: PodScheduling, idx: int, pod: Pod | None = None) -> Unschedulable | None:
        """NodeUnschedulable, NodeName (when ``pod`` is given), TaintToleration, NodeAffinity, in order."""
        node = self.snapshot.nodes[idx]
        if sched.parse_error is not None:
            return parse_failure(sched.parse_error)
        if node.unschedulable and not tolerated(UNSCHEDULABLE_TAINT, sched.tolerations):
            return Unschedulable("NodeUnschedulable", "node(s) were unschedulable")
        if pod is not None and pod.node_name and pod.node_name != node.name:
            return Unschedulable("NodeName", "node(s) didn't match the requested node name")
        taint = untolerated_taint(node.taints, sched.tolerations)
        if taint is not None:
            return Unschedulable("TaintToleration",
                                 f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}")
        if self._static_affinity_fails(sched, idx):
            return Unschedulable("NodeAffinity", "node(s) didn't match Pod's node affinity/selector")
        return None

    # --- the vectorized path ----------------------------------------------------------
    def _static_extra(self, sched: PodScheduling, lo: int, n: int) -> BoolArray:
        """Static predicates on nodes added during simulation (indices ``lo..n``, all >= base).

        Computed once per (constraints, node): the verdict is kept per index with the
        node's serial, so only nodes added since (or re-added after a revert) are checked.
        This keeps bin-packing linear: every pod of a group asks about the same nodes.
        """
        snap = self.snapshot
        size = len(snap.serial)
        entry = self._extra_masks.get(id(sched))
        if entry is None or len(entry[0]) < size:
            serials, values = np.zeros(size, np.int64), np.zeros(size, np.bool_)
            if entry is None:
                self._static_keep.append(sched)  # keep id() stable for the cache's lifetime
            else:
                serials[: len(entry[0])], values[: len(entry[1])] = entry
            entry = self._extra_masks[id(sched)] = (serials, values)
        serials, values = entry
        current = snap.serial[lo:n]
        for rel in np.flatnonzero(serials[lo:n] != current).tolist():
            values[lo + rel] = self._static_one(sched, lo + rel) is None
        serials[lo:n] = current
        return values[lo:n].copy()

    def feasible(self, pod: Pod, plan: VolumePlan, allowed: BoolArray | None = None, lo: int = 0, *,
                 moving: bool = False) -> BoolArray:
        """Mask over nodes ``lo..count`` that pass the vectorizable filters (all but per-node ones).

        ``moving``: the pod is being rescheduled off its node, so its ``spec.nodeName`` is
        treated as cleared (upstream clears it before simulating), without copying the pod.
        """
        snap = self.snapshot
        n = snap.count
        base = snap.base_count
        if plan.error is not None or plan.node_error is not None or lo >= n:
            return np.zeros(max(0, n - lo), np.bool_)
        sched = pod.scheduling
        if lo < base:
            static = self._static_base(sched)[lo:]
            if n > base:
                extra = self._static_extra(sched, base, n)
                mask = np.concatenate((static, extra))
            else:
                mask = static.copy()
        else:
            mask = self._static_extra(sched, lo, n)
        mask &= snap.enabled[lo:n]
        if pod.node_name and not moving:  # NodeName: a pod bound by name fits that node only
            named = snap.index.get(pod.node_name)
            only = np.zeros(n - lo, np.bool_)
            if named is not None and named >= lo:
                only[named - lo] = True
            mask &= only
        if allowed is not None:
            mask &= allowed[lo:n]
        for selector in (*plan.pinned, *plan.topologies):
            if lo < base:
                mask[: base - lo] &= self._selector_mask(selector)[lo:]
            for i in range(max(lo, base), n):
                if mask[i - lo] and not selector.matches(snap.nodes[i].labels, snap.nodes[i].name):
                    mask[i - lo] = False
        req = pod.requests
        mask &= snap.free_pods[lo:n] >= 1
        if req.cpu:
            mask &= snap.free_cpu[lo:n] >= req.cpu
        if req.memory:
            mask &= snap.free_memory[lo:n] >= req.memory
        if req.ephemeral_storage:
            mask &= snap.free_ephemeral[lo:n] >= req.ephemeral_storage
        for name, value in req.extended:
            if value:
                mask &= snap.extended_free(name)[lo:n] >= value
        if plan.local_bytes or plan.pools:
            mask_capacity(snap, plan, mask, lo, n)
        return mask

    def needs_node_checks(self, pod: Pod, plan: VolumePlan) -> bool:
        sched = pod.scheduling
        return bool(sched.host_ports or sched.has_pod_constraints or plan.provision or plan.static
                    or plan.capacity_checks or plan.zones or self.snapshot.anti_affinity_pods)

    def find_node(self, pod: Pod, plan: VolumePlan, allowed: BoolArray | None = None,
                  lo: int = 0, *, moving: bool = False) -> int | None:
        """First node (by index, from ``lo``) where the pod passes every filter (``moving``: see ``feasible``)."""
        mask = self.feasible(pod, plan, allowed, lo, moving=moving)
        if len(mask) == 0:
            return None
        if not self.needs_node_checks(pod, plan):
            idx = int(mask.argmax())
            return lo + idx if mask[idx] else None
        candidates = np.flatnonzero(mask)
        if len(candidates) == 0:
            return None
        topo = self._topology(pod) if (pod.scheduling.has_pod_constraints or self.snapshot.anti_affinity_pods) \
            else None
        for rel in candidates:
            idx = lo + int(rel)
            if self._node_checks(pod, plan, idx, topo) is None:
                return idx
        return None

    def copies_at(self, pod: Pod, plan: VolumePlan, idx: int) -> int | None:
        """How many copies of the pod node ``idx`` takes, placed one after another; None when
        the pod needs per-node checks (``needs_node_checks``: left to ``find_node``).

        ``feasible`` for the one node, read as scalars: when not None, ``find_node(pod, plan,
        lo=idx)`` returns ``idx`` exactly when the count is at least 1, and after ``m`` copies
        are placed there the count is ``m`` less. The estimator asks it first for the node
        where the pod's group last landed (upstream's binpacking estimator likewise retries its
        last node before searching, cluster-autoscaler/estimator/binpacking_estimator.go) and
        places that many equivalent pods at once.
        """
        if self.needs_node_checks(pod, plan):
            return None
        if not self._passes_static_at(pod, plan, idx):
            return 0
        return room_at(self.snapshot, pod, plan, idx)

    def _passes_static_at(self, pod: Pod, plan: VolumePlan, idx: int) -> bool:
        """The parts of ``feasible`` that placing pods does not change, on node ``idx``."""
        snap = self.snapshot
        if plan.error is not None or plan.node_error is not None or not snap.enabled[idx]:
            return False
        if pod.node_name and snap.index.get(pod.node_name) != idx:
            return False
        if not self._static_at(pod.scheduling, idx):
            return False
        node = snap.nodes[idx]
        for selector in (*plan.pinned, *plan.topologies):
            if not (self._selector_mask(selector)[idx] if idx < snap.base_count
                    else selector.matches(node.labels, node.name)):
                return False
        return True

    def _static_at(self, sched: PodScheduling, idx: int) -> bool:
        """The static verdict ``feasible`` uses for node ``idx`` (its cached value when there is one)."""
        if idx < self.snapshot.base_count:
            return bool(self._static_base(sched)[idx])
        entry = self._extra_masks.get(id(sched))
        if entry is None or idx >= len(entry[0]):
            return bool(self._static_extra(sched, idx, idx + 1)[0])
        serials, values = entry
        serial = self.snapshot.serial[idx]
        if serials[idx] != serial:  # a node added since: ``_static_extra``'s step, for one node
            values[idx] = self._static_one(sched, idx) is None
            serials[idx] = serial
        return bool(values[idx])

    def demand_on(self, pod: Pod, plan: VolumePlan, idx: int) -> tuple[int, tuple[tuple[str, int], ...]]:
        """Bytes the pod would provision on node ``idx``: local pool, and per other pool (summed claims)."""
        snap = self.snapshot
        fit = self.volumes.static_reason(plan, snap.nodes[idx], snap.roles[idx] == "live") if plan.static else None
        return demand(snap, plan, idx, fit)

    def local_bytes_on(self, pod: Pod, plan: VolumePlan, idx: int) -> int:
        """Local-pool bytes the pod would provision on node ``idx`` (summed claims)."""
        return self.demand_on(pod, plan, idx)[0]

    def place(self, pod: Pod, plan: VolumePlan, idx: int) -> int:
        """Put the pod on node ``idx`` in the snapshot, consuming its local storage in every pool.

        Returns the local-pool bytes it provisioned there (``local_bytes_on`` before the move).
        """
        local, pools = self.demand_on(pod, plan, idx)
        self.snapshot.add_pod(pod, idx, local, pools)
        return local

    def place_copies(self, pods: Sequence[Pod], plan: VolumePlan, idx: int) -> int:
        """``place`` for equivalent pods (one plan stands for all) that need no per-node checks;
        returns the local-pool bytes they provisioned there together."""
        local, pools = self.demand_on(pods[0], plan, idx)
        self.snapshot.add_copies(pods, idx, local, pools)
        return local * len(pods)

    # --- per-node filters -------------------------------------------------------------
    def _node_checks(self, pod: Pod, plan: VolumePlan, idx: int, topo: PodTopology | None) -> Unschedulable | None:
        snap = self.snapshot
        node = snap.nodes[idx]
        if pod.scheduling.host_ports:
            for other in snap.pods_with_ports.get(idx, ()):
                for mine in pod.scheduling.host_ports:
                    if any(mine.conflicts(theirs) for theirs in other.scheduling.host_ports):
                        return Unschedulable("NodePorts", "node(s) didn't have free ports for the requested pod ports")
        for item in plan.provision:
            reason = self.volumes.provision_reason(item, node)
            if reason is not None:
                return Unschedulable("VolumeBinding", reason)
        live = snap.roles[idx] == "live"
        for item in plan.capacity_checks:
            # A new node has published no CSIStorageCapacity yet; its template's pools stand
            # in for it, unless it publishes no value for a pool (see localcapacity.py).
            if (live or unpublished(snap, self.volumes.sources.pool_of(item.storage_class), idx)) \
                    and not self.volumes.capacity_ok(item.storage_class, item.size, node):
                return Unschedulable("VolumeBinding", REASON_NOT_ENOUGH_SPACE)
        if plan.static:
            fit = self.volumes.static_reason(plan, node, live)
            if fit.reason is not None:
                return Unschedulable("VolumeBinding", fit.reason)
            if (fit.extra_local or fit.extra_pools) and not fits_node(snap, plan, idx, fit):
                return Unschedulable("VolumeBinding", REASON_NOT_ENOUGH_SPACE)
        if plan.zones:
            reason = zone_reason(plan, node.labels)
            if reason is not None:
                return Unschedulable("VolumeZone", reason)
        if topo is not None:
            return self._topology_check(node.labels, topo)
        return None

    def _static_affinity_fails(self, sched: PodScheduling, idx: int) -> bool:
        node = self.snapshot.nodes[idx]
        if any(node.labels.get(k) != v for k, v in sched.node_selector):
            return True
        return sched.required_affinity is not None and not sched.required_affinity.matches(node.labels, node.name)

    def _topology(self, pod: Pod) -> PodTopology:
        return pod_topology(self.snapshot, self.namespaces, pod,
                            lambda idx: self._static_affinity_fails(pod.scheduling, idx))

    @staticmethod
    def _topology_check(labels: Mapping[str, str], topo: PodTopology) -> Unschedulable | None:
        """PodTopologySpread, then InterPodAffinity, as ``topology_reason`` says."""
        found = topology_reason(labels, topo)
        return None if found is None else Unschedulable(*found)

    # --- one node, in kube-scheduler's order, with a reason -------------------------------
    def check(self, pod: Pod, plan: VolumePlan, idx: int) -> Unschedulable | None:
        """Run every filter on node ``idx``; the first failure, or None if the pod fits.

        PreFilter failures first (unparsable selectors, volumes no node can satisfy), then
        the filters in kube-scheduler's default order: NodeUnschedulable, NodeName,
        TaintToleration, NodeAffinity, NodePorts, NodeResourcesFit, VolumeBinding,
        PodTopologySpread, InterPodAffinity.
        """
        snap = self.snapshot
        node = snap.nodes[idx]
        if not snap.enabled[idx]:
            return Unschedulable("NodeName", "node is being removed")
        if pod.scheduling.parse_error is not None:
            return parse_failure(pod.scheduling.parse_error)
        if plan.error is not None:
            return Unschedulable("VolumeBinding", plan.error)
        static = self._static_one(pod.scheduling, idx, pod)
        if static is not None:
            return static
        if pod.scheduling.host_ports:
            reason = self._node_checks(pod, VolumePlan(), idx, None)
            if reason is not None:
                return reason
        req = pod.requests
        if snap.free_pods[idx] < 1:
            return Unschedulable("NodeResourcesFit", "Too many pods")
        for name, need, free in (
            ("cpu", req.cpu, snap.free_cpu[idx]),
            ("memory", req.memory, snap.free_memory[idx]),
            ("ephemeral-storage", req.ephemeral_storage, snap.free_ephemeral[idx]),
        ):
            if need and need > free:
                return Unschedulable("NodeResourcesFit", f"Insufficient {name}")
        for name, value in req.extended:
            if value and value > snap.extended_free(name)[idx]:
                return Unschedulable("NodeResourcesFit", f"Insufficient {name}")
        if plan.node_error is not None:
            return Unschedulable("VolumeBinding", plan.node_error)
        for selector in plan.pinned:
            if not selector.matches(node.labels, node.name):
                return Unschedulable("VolumeBinding", REASON_NODE_CONFLICT)
        for selector in plan.topologies:
            if not selector.matches(node.labels, node.name):
                return Unschedulable("VolumeBinding", REASON_BIND_CONFLICT)
        if (plan.local_bytes or plan.pools) and not fits_node(snap, plan, idx):
            return Unschedulable("VolumeBinding", REASON_NOT_ENOUGH_SPACE)
        plain = dataclasses.replace(plan, pinned=(), topologies=())
        reason = self._node_checks(pod, plain, idx, None)
        if reason is not None:
            return reason
        if pod.scheduling.has_pod_constraints or snap.anti_affinity_pods:
            return self._topology_check(node.labels, self._topology(pod))
        return None


"""The cluster's scheduler: binds pending pods with the project's own predicate checker.

The simulated cluster runs the storage-aware scheduler of the thesis (its "Rok
Scheduler", storage-semantics section 4) whatever the autoscaler's flags: volume
binding counts free local capacity, so pods only land where their local volumes fit.
Filtering is ``simulator.predicates.PredicateChecker`` over a ``ClusterSnapshot`` of
the Ready nodes; scoring is kube-scheduler's default spreading (LeastAllocated over
cpu and memory, nodes with an untolerated ``PreferNoSchedule`` taint last; ties broken
by the run's seeded generator).

Binding does what the PV controller and the storage driver do at that moment:
``WaitForFirstConsumer`` claims bind to a matching Available PV or get a new PV
(pinned to the node by hostname affinity when the class uses the local provisioner,
whose bytes leave the node's capacity annotation), and a bound local volume that was
unpinned is restored onto the chosen node (pinned again, consuming capacity there).

Runs only when something changed that may let a pending pod fit (``needs_schedule``),
over the pending pods only, oldest (highest priority) first; a pod equivalent to one
that did not fit in this pass is not tried again.

Two knobs let the world stand for the deployments the scheduling side compares
(``tests/scheduling/test_world.py``): ``capacity_aware=False`` is the stock
kube-scheduler, blind to local capacity; ``node_filter`` is a scheduler extender's
filter, called with the candidates the world's own filters passed. A capacity-blind
choice can bind a pod where its local claims do not fit: then the provisioner creates
the volumes that fit (pinned there), the rest fail, and the pod is *stuck* on that node
(bound, never running; ``stuck``).
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable, Sequence

import msgspec.structs
import numpy as np

from emulator.cluster import SimCluster, hostname
from emulator.ids import IdSource
from emulator.storage_driver import with_capacity
from kube.model import (
    ClusterObjects,
    Node,
    NodeSelector,
    NodeSelectorTerm,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    Requirement,
    Toleration,
)
from kube.names import HOSTNAME_LABEL, StorageNames
from simulator.predicates import PredicateChecker
from simulator.snapshot import ClusterSnapshot
from simulator.volumes import NO_PROVISIONER, VolumeIndex, VolumePlan

__all__ = ["NodeFilter", "Scheduler", "pin_to", "pinned_hostname"]

#: A scheduler extender's filter: (pod, candidate node names) -> the names that pass.
NodeFilter = Callable[[Pod, Sequence[str]], Sequence[str]]

#: How many best-scored nodes get a full filter check before falling back to first fit.
_SCORED_TRIES = 3


def pin_to(node: Node) -> NodeSelector:
    """Node affinity that the storage driver writes on a local PV: this node's hostname only."""
    return NodeSelector((NodeSelectorTerm((Requirement(HOSTNAME_LABEL, "In", (hostname(node),)),)),))


def _soft_tainted(node: Node, tolerations: tuple[Toleration, ...]) -> bool:
    return any(t.effect == "PreferNoSchedule" and not any(tol.tolerates(t) for tol in tolerations)
               for t in node.taints)


def pinned_hostname(pod: Pod) -> str | None:
    """The one hostname a pod's required node affinity allows (a term ``hostname In (h)``), or None.

    The storage operator's guard pods are pinned so (``emulator.guard``), as DaemonSet pods
    are by the DaemonSet controller.
    """
    affinity = pod.scheduling.required_affinity
    if affinity is None or len(affinity.terms) != 1 or affinity.terms[0].error is not None:
        return None
    for req in affinity.terms[0].requirements:
        if req.key == HOSTNAME_LABEL and req.operator == "In" and len(req.values) == 1:
            return req.values[0]
    return None


class _Pass:
    """One scheduling pass over a snapshot of the Ready nodes."""

    def __init__(self, cluster: SimCluster, names: StorageNames, capacity_aware: bool = True,
                 hosts: frozenset[str] | None = None) -> None:
        """``hosts``: only the nodes with these hostname labels (``Scheduler._pinned_hosts``); None: all."""
        nodes = [n for n in cluster.nodes() if n.ready and not n.deleting
                 and (hosts is None or n.labels.get(HOSTNAME_LABEL) in hosts)]
        self.snapshot = ClusterSnapshot(nodes)
        self.snapshot.load_pods(p for n in nodes for p in cluster.pods_on(n.name))
        objects = ClusterObjects(
            claims=dict(cluster.claims()), volumes=dict(cluster.volumes()),
            storage_classes=dict(cluster.storage_classes), csi_capacities=list(cluster.csi_capacities),
            csi_drivers=dict(cluster.csi_drivers), namespaces=dict(cluster.namespaces),
        )
        self.volumes = VolumeIndex(objects, names, storage_aware=capacity_aware)
        self.checker = PredicateChecker(self.snapshot, self.volumes, cluster.namespaces)
        count = self.snapshot.count
        self.alloc_cpu = np.maximum(np.array([n.allocatable.cpu for n in nodes], np.float64), 1.0)[:count]
        self.alloc_memory = np.maximum(np.array([n.allocatable.memory for n in nodes], np.float64), 1.0)[:count]
        #: Indices of the nodes with a ``PreferNoSchedule`` taint: only they can be penalized.
        self._soft_nodes = [i for i, n in enumerate(self.snapshot.nodes)
                            if any(t.effect == "PreferNoSchedule" for t in n.taints)]
        self._soft: dict[tuple[Toleration, ...], np.ndarray] = {}
        self._by_host: dict[str, list[int]] | None = None

    def nodes_labelled(self, host: str) -> list[int]:
        """Indices of the nodes whose hostname label is ``host`` (indexed on first use)."""
        if self._by_host is None:
            self._by_host = {}
            for i, node in enumerate(self.snapshot.nodes[: self.snapshot.count]):
                label = node.labels.get(HOSTNAME_LABEL)
                if label is not None:
                    self._by_host.setdefault(label, []).append(i)
        return self._by_host.get(host, [])

    def soft_penalty(self, pod: Pod) -> np.ndarray:
        """1.0 on nodes with a ``PreferNoSchedule`` taint the pod does not tolerate, else 0.0.

        Cached per set of tolerations (pods of different workloads usually share them), and
        computed over the soft-tainted nodes only: a guard pod per node must not cost a scan.
        """
        tolerations = pod.scheduling.tolerations
        cached = self._soft.get(tolerations)
        if cached is None:
            cached = np.zeros(len(self.snapshot.nodes), np.float64)
            nodes = self.snapshot.nodes
            for i in self._soft_nodes:
                cached[i] = _soft_tainted(nodes[i], tolerations)
            self._soft[tolerations] = cached
        return cached


class Scheduler:
    def __init__(self, cluster: SimCluster, names: StorageNames, ids: IdSource, rng: random.Random, *,
                 capacity_aware: bool = True, node_filter: NodeFilter | None = None) -> None:
        self.cluster = cluster
        self.names = names
        self.ids = ids
        self.rng = rng
        self.capacity_aware = capacity_aware
        self.node_filter = node_filter
        #: Scheduling passes run so far (for tests and performance checks).
        self.passes = 0
        #: Pods bound to a node whose free local capacity could not hold their claims.
        self.stuck: set[str] = set()

    def run(self) -> int:
        """Try every pending pod once; returns how many were bound."""
        self.cluster.needs_schedule = False
        bound = 0
        while True:
            pending = self.cluster.pending_pods()
            if not pending:
                return bound
            pending.sort(key=lambda p: (-p.priority, p.created or 0.0, p.namespace, p.name))
            done, restart = self._pass(pending)
            bound += done
            if not restart:
                return bound

    def _pass(self, pending: list[Pod]) -> tuple[int, bool]:
        """Returns (pods bound, whether volume state changed under the index: run another pass)."""
        self.passes += 1
        state = _Pass(self.cluster, self.names, self.capacity_aware, self._pinned_hosts(pending))
        failed: set[tuple[object, ...]] = set()
        touched_claims: set[tuple[str, str]] = set()
        bound = 0
        for pod in pending:
            if any((pod.namespace, c) in touched_claims for c in pod.claims):
                return bound, True  # a claim it shares was bound in this pass: re-read volumes
            plan = state.volumes.plan(pod)
            equivalence = (id(pod.scheduling), pod.requests, plan.key, pod.namespace,
                           tuple(sorted(pod.labels.items())) if state.snapshot.anti_affinity_pods
                           or pod.scheduling.has_pod_constraints else ())
            idx = None if equivalence in failed else self._choose(state, pod, plan)
            if idx is None:
                failed.add(equivalence)
                if not pod.marked_unschedulable:
                    self.cluster.replace_pod(msgspec.structs.replace(pod, marked_unschedulable=True))
                continue
            state.checker.place(pod, plan, idx)
            static_bound = self._bind(pod, state.snapshot.nodes[idx], touched_claims)
            bound += 1
            if static_bound:
                return bound, True  # the index's Available PVs are stale
        return bound, False

    def _pinned_hosts(self, pending: Sequence[Pod]) -> frozenset[str] | None:
        """The hostnames every pending pod is pinned to, when a pass may look at their nodes only.

        A pod pinned to one hostname by required affinity, with no pod (anti-)affinity or
        spread of its own, is filtered and scored on the nodes with that label alone; what
        it reads there (taints, resources, ports, volumes, the pods placed before it in the
        pass) belongs to those nodes. Only running pods' required anti-affinity reaches
        across nodes: with any in the cluster, or any other pending pod (or an extender's
        filter), the pass takes every node. The first pass after a large cluster starts is
        one guard pod per node: loading its 100,000 running pods would cost more than the pass.
        """
        if self.node_filter is not None:
            return None
        hosts: set[str] = set()
        for pod in pending:
            host = pinned_hostname(pod)
            if host is None or pod.scheduling.has_pod_constraints:
                return None
            hosts.add(host)
        if any(p.scheduling.anti_affinity for p in self.cluster.pods()):
            return None
        return frozenset(hosts)

    def _choose(self, state: _Pass, pod: Pod, plan: VolumePlan) -> int | None:
        host = pinned_hostname(pod)
        if host is not None and self.node_filter is None:
            # Required affinity allows one hostname: the only candidates carry that label. With
            # one such node, checking it alone gives what filtering every node, scoring the one
            # survivor and checking it would (no tie, so no draw from the generator): a guard pod
            # per node then costs one node's checks, not a pass over the cluster.
            labelled = state.nodes_labelled(host)
            if not labelled:
                return None
            if len(labelled) == 1:
                return labelled[0] if state.checker.check(pod, plan, labelled[0]) is None else None
        checker = state.checker
        mask = checker.feasible(pod, plan)
        if self.node_filter is not None and mask.any():
            nodes = state.snapshot.nodes
            passed = set(self.node_filter(pod, [nodes[i].name for i in np.flatnonzero(mask)]))
            mask &= np.fromiter((n.name in passed for n in nodes[: len(mask)]), np.bool_, len(mask))
        candidates = np.flatnonzero(mask)
        if len(candidates) == 0:
            return None
        snap = state.snapshot
        req = pod.requests
        score = ((snap.free_cpu[candidates] - req.cpu) / state.alloc_cpu[candidates]
                 + (snap.free_memory[candidates] - req.memory) / state.alloc_memory[candidates]) / 2
        score -= state.soft_penalty(pod)[candidates] * 10.0
        order = candidates[np.argsort(-score, kind="stable")]
        best = score.max()
        ties = candidates[score == best]
        if len(ties) > 1:
            first = int(self.rng.choice(list(ties)))
            order = np.concatenate(([first], order[order != first]))
        if not checker.needs_node_checks(pod, plan):
            return int(order[0])
        for idx in order[:_SCORED_TRIES]:
            if checker.check(pod, plan, int(idx)) is None:
                return int(idx)
        found = checker.find_node(pod, plan)
        return found if found is None or mask[found] else None

    def _bind(self, pod: Pod, node: Node, touched: set[tuple[str, str]]) -> bool:
        """Bind the pod and its volumes to ``node``; True if a claim took an Available PV."""
        cluster = self.cluster
        consumed = 0
        static_bound = False
        taken: set[str] = set()
        # The local provisioner creates a volume only where the node's disk holds it.
        here = cluster.node(node.name)
        room = (here.free_local_bytes or 0) if here is not None else 0
        failed = False
        for claim_name in pod.claims:
            claim = cluster.claim(pod.namespace, claim_name)
            if claim is None:
                continue
            touched.add((pod.namespace, claim_name))
            if claim.volume_name:
                pv = cluster.volume(claim.volume_name)
                if pv is not None and pv.node_affinity is None and cluster.is_local_volume(pv):
                    cluster.put_volume(dataclasses.replace(pv, node_affinity=pin_to(node)), wake=False)
                    cluster.metrics.restores += 1
                    consumed += max(pv.capacity, claim.request)
                continue
            match = self._available_pv(claim, node, taken)
            if match is not None:
                taken.add(match.name)
                static_bound = True
                cluster.put_volume(dataclasses.replace(match, claim=(claim.namespace, claim.name), phase="Bound"),
                                   wake=False)
                cluster.put_claim(dataclasses.replace(claim, volume_name=match.name, phase="Bound"), wake=False)
                continue
            sc = cluster.storage_classes.get(claim.storage_class or "")
            if sc is None or sc.provisioner == NO_PROVISIONER:
                continue
            local = sc.provisioner == self.names.provisioner
            if local and consumed + claim.request > room:
                failed = True  # provisioning fails: the claim stays unbound
                continue
            pv = PersistentVolume(
                name=self.ids.pv_name(), storage_class=sc.name, capacity=claim.request,
                node_affinity=pin_to(node) if local else None, claim=(claim.namespace, claim.name), phase="Bound",
                access_modes=claim.access_modes, driver=sc.provisioner,
            )
            cluster.put_volume(pv, wake=False)
            cluster.put_claim(dataclasses.replace(claim, volume_name=pv.name, phase="Bound"), wake=False)
            if local:
                consumed += claim.request
        if consumed:
            current = cluster.node(node.name)
            if current is not None:
                free = (current.free_local_bytes or 0) - consumed
                cluster.put_node(with_capacity(current, self.names, max(0, free)))
        if failed:
            # Bound, with some volumes pinned here, and never running: stuck on this node.
            self.stuck.add(pod.ref)
            cluster.replace_pod(msgspec.structs.replace(pod, node_name=node.name, phase="Pending",
                                                    marked_unschedulable=False))
            return static_bound
        cluster.replace_pod(msgspec.structs.replace(pod, node_name=node.name, phase="Running",
                                                marked_unschedulable=False))
        return static_bound

    def _available_pv(self, claim: PersistentVolumeClaim, node: Node, taken: set[str]) -> PersistentVolume | None:
        """The smallest Available PV that fits the claim and this node (as the volume binder picks)."""
        best: PersistentVolume | None = None
        for pv in self.cluster.volumes().values():
            if (pv.phase != "Available" or pv.claim is not None or pv.name in taken
                    or pv.storage_class != claim.storage_class or pv.capacity < claim.request
                    or not set(claim.access_modes) <= set(pv.access_modes)):
                continue
            if pv.node_affinity is not None and not pv.node_affinity.matches(node.labels, node.name):
                continue
            if best is None or (pv.capacity, pv.name) < (best.capacity, best.name):
                best = pv
        return best

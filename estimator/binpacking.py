"""How many new nodes of one group would the pending pods need? First-fit decreasing.

Pods come in equivalence groups (same owner, requests, constraints and volume
demands). Groups are ordered by how much of a template node one pod takes: CPU
plus memory, plus local storage when the template's disk is known, so pods that
fill a disk are packed first (storage-semantics 2.3: N pods that each need most of
a node's disk yield N nodes in one decision). Each pod goes to the first new node
it fits, else to a fresh template copy; if it does not fit even an empty copy, its
whole group is left out (upstream's binpacking estimator). Storage placed on a
simulated node is consumed, so the next pod sees what is left.

Limits: a node cap (group headroom, ``--max-nodes-per-scaleup``, cluster caps,
computed by the caller) and a time budget (``--max-nodegroup-binpacking-duration``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from kube.model import UNBOUNDED_BYTES, Node, Pod
from simulator.predicates import PredicateChecker
from simulator.volumes import VolumePlan

__all__ = ["BinpackingEstimator", "Estimate", "Estimator", "PodGroup"]

#: Makes a distinct copy of the template for the i-th new node: the node and its DaemonSet pods.
NewNode = Callable[[int], tuple[Node, list[Pod]]]


@dataclass(frozen=True, slots=True)
class PodGroup:
    """Equivalent pods: one exemplar's fit stands for all (their plans differ in names only)."""

    pods: tuple[Pod, ...]
    plans: tuple[VolumePlan, ...]

    @property
    def exemplar(self) -> Pod:
        return self.pods[0]


@dataclass(frozen=True, slots=True)
class Estimate:
    node_count: int
    scheduled: tuple[Pod, ...]
    #: Local bytes provisioned on the new nodes (for least-waste).
    local_bytes: int
    #: The time budget ran out before every pod was tried.
    timed_out: bool = False


class Estimator(Protocol):
    def estimate(self, groups: Sequence[PodGroup], template: Node, new_node: NewNode, max_nodes: int) -> Estimate:
        ...


class BinpackingEstimator:
    def __init__(self, checker: PredicateChecker, *, storage_aware: bool = True, time_budget: float = 10.0,
                 clock: Callable[[], float] = time.monotonic, first_fit_position: bool = True) -> None:
        self.checker = checker
        #: Resume each pod group's search where its previous pod landed (linear packing);
        #: False gives the plain quadratic first-fit the differential tests compare with.
        self.first_fit_position = first_fit_position
        self.storage_aware = storage_aware
        self.time_budget = time_budget
        self.clock = clock

    def _score(self, group: PodGroup, template: Node) -> float:
        pod, plan = group.exemplar, group.plans[0]
        alloc = template.allocatable
        score = 0.0
        if alloc.cpu:
            score += pod.requests.cpu / alloc.cpu
        if alloc.memory:
            score += pod.requests.memory / alloc.memory
        free = template.free_local_bytes
        if self.storage_aware and plan.local_bytes and free and free < UNBOUNDED_BYTES:
            score += plan.local_bytes / free
        return score

    def estimate(self, groups: Sequence[PodGroup], template: Node, new_node: NewNode, max_nodes: int) -> Estimate:
        checker = self.checker
        snap = checker.snapshot
        deadline = self.clock() + self.time_budget
        ordered = sorted(enumerate(groups), key=lambda g: (-self._score(g[1], template), g[0]))
        snap.fork()
        try:
            first_new = snap.count
            added: list[int] = []
            used: set[int] = set()
            scheduled: list[Pod] = []
            local = 0
            timed_out = False
            for _, group in ordered:
                # First-fit position of this group: a node an equivalent pod did not fit
                # stays infeasible while placements only consume resources, so the
                # search resumes where the group's previous pod landed. Required pod
                # affinity and hard topology spread can make an earlier node feasible
                # again; those groups search from the first new node every time.
                sched = group.exemplar.scheduling
                monotone = self.first_fit_position and not (sched.affinity or sched.spread)
                start = first_new
                for pod, plan in zip(group.pods, group.plans, strict=True):
                    if self.clock() > deadline:
                        timed_out = True
                        break
                    idx = checker.find_node(pod, plan, lo=start) if added else None
                    if idx is None:
                        if added and added[-1] not in used:
                            break  # it failed on an empty node already: the group cannot be helped
                        if len(added) >= max_nodes:
                            break
                        node, pods = new_node(len(added))
                        fresh = snap.add_node(node, pods)
                        added.append(fresh)
                        idx = checker.find_node(pod, plan, lo=fresh)
                        if idx is None:
                            break
                    if monotone:
                        start = idx
                    local += checker.place(pod, plan, idx)
                    used.add(idx)
                    scheduled.append(pod)
                if timed_out:
                    break
            return Estimate(len(used), tuple(scheduled), local, timed_out)
        finally:
            snap.revert()

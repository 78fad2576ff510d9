"""How many new nodes of one group would the pending pods need? First-fit decreasing.

Pods come in equivalence groups (same owner, requests, constraints and volume
demands). Groups are ordered by how much of a template node one pod takes: CPU
plus memory, plus local storage when the template's disk is known, so pods that
fill a disk are packed first (storage-semantics 2.3: N pods that each need most of
a node's disk yield N nodes in one decision). Each pod goes to the first new node
it fits, else to a fresh template copy; if it does not fit even an empty copy, its
whole group is left out (upstream's binpacking estimator). Storage placed on a
simulated node is consumed, so the next pod sees what is left.

Each group resumes where its previous pod landed and asks that node first how many
copies of the pod it still takes (``PredicateChecker.copies_at``, scalar reads, as
upstream retries its last node); that many pods go there in one step
(``place_copies``), each still reading the time budget. A pod that needs per-node
checks (host ports, pod affinity, volumes to bind) is placed alone, after a full search.

Limits: a node cap (group headroom, ``--max-nodes-per-scaleup``, cluster caps,
computed by the caller) and a time budget (``--max-nodegroup-binpacking-duration``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
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


@dataclass(slots=True)
class _Packing:
    """One estimate's progress: the new nodes, the pods placed, the local bytes provisioned."""

    first_new: int
    deadline: float
    new_node: NewNode
    max_nodes: int
    added: list[int] = field(default_factory=list)
    used: set[int] = field(default_factory=set)
    scheduled: list[Pod] = field(default_factory=list)
    local: int = 0
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
        snap = self.checker.snapshot
        ordered = sorted(enumerate(groups), key=lambda g: (-self._score(g[1], template), g[0]))
        snap.fork()
        try:
            state = _Packing(snap.count, self.clock() + self.time_budget, new_node, max_nodes)
            for _, group in ordered:
                self._pack(group, state)
                if state.timed_out:
                    break
            return Estimate(len(state.used), tuple(state.scheduled), state.local, state.timed_out)
        finally:
            snap.revert()

    def _pack(self, group: PodGroup, state: _Packing) -> None:
        """First-fit one group's pods onto the new nodes (until one cannot be helped or time runs out)."""
        checker = self.checker
        # First-fit position of this group: a node an equivalent pod did not fit stays
        # infeasible while placements only consume resources, so the search resumes where
        # the group's previous pod landed. Required pod affinity and hard topology spread can
        # make an earlier node feasible again; those groups search from the first new node
        # every time.
        sched = group.exemplar.scheduling
        monotone = self.first_fit_position and not (sched.affinity or sched.spread)
        start = state.first_new
        full = False  # the group's last run took every copy ``start`` had room for
        pods, plans = group.pods, group.plans
        i = 0
        while i < len(pods):
            if self.clock() > state.deadline:
                state.timed_out = True
                return
            pod, plan = pods[i], plans[i]
            # Where the group last landed first, by scalar reads (how many copies it still
            # takes); then the search, then a new node.
            room = None
            if monotone and state.added:
                room = 0 if full else checker.copies_at(pod, plan, start)
            idx = start
            if not room:
                found, room = self._search(pod, plan, start + 1 if room == 0 else start, state, monotone)
                if found is None:
                    return
                idx = found
            if not monotone:
                i += self._place(pods[i:i + 1], plan, idx, state)
                continue
            run = self._run(pods, i, room, state.deadline)
            full = len(run) == room
            start = idx
            i += self._place(run, plan, idx, state)

    def _search(self, pod: Pod, plan: VolumePlan, lo: int, state: _Packing,
                monotone: bool) -> tuple[int | None, int | None]:
        """The first new node from ``lo`` that takes the pod, else a fresh one: its index and,
        when ``monotone``, how many copies it takes (``copies_at``); (None, None): no node will."""
        checker = self.checker
        idx = checker.find_node(pod, plan, lo=lo) if state.added and lo < checker.snapshot.count else None
        if idx is None:
            return self._open_node(pod, plan, state, monotone)
        return idx, checker.copies_at(pod, plan, idx) if monotone else None

    def _open_node(self, pod: Pod, plan: VolumePlan, state: _Packing,
                   monotone: bool) -> tuple[int | None, int | None]:
        """A fresh template copy for a pod no new node takes, as ``_search`` answers."""
        added = state.added
        if added and added[-1] not in state.used:
            return None, None  # it failed on an empty node already: the group cannot be helped
        if len(added) >= state.max_nodes:
            return None, None
        node, daemons = state.new_node(len(added))
        fresh = self.checker.snapshot.add_node(node, daemons)
        added.append(fresh)
        room = self.checker.copies_at(pod, plan, fresh) if monotone else None
        if room is None:
            found = self.checker.find_node(pod, plan, lo=fresh)
            return found, None
        return (fresh, room) if room else (None, None)

    def _run(self, pods: Sequence[Pod], i: int, room: int | None, deadline: float) -> Sequence[Pod]:
        """Pods ``i..`` to place together on the node pod ``i`` landed on: as many as it takes
        (``room``: None for a pod with per-node checks, placed alone), each still within the
        time budget as if placed one by one."""
        end = min(len(pods), i + (room or 1))
        for j in range(i + 1, end):
            if pods[j].node_name or self.clock() > deadline:
                return pods[i:j]
        return pods[i:end]

    def _place(self, pods: Sequence[Pod], plan: VolumePlan, idx: int, state: _Packing) -> int:
        checker = self.checker
        if len(pods) == 1:
            state.local += checker.place(pods[0], plan, idx)
        else:
            state.local += checker.place_copies(pods, plan, idx)
        state.used.add(idx)
        state.scheduled.extend(pods)
        return len(pods)

"""One removal-simulation pass over the candidates: drain each, place its pods, commit as it goes.

``RemovalPass`` is the simulation the planner (``planner.py``) and cluster-wide mode
(``cluster_wide.py``) run per candidate, and the replays of the last pass's verdicts
(``replay.py`` decides when): drain rules classify the node's pods; every pod to move
must find another node through the predicate checker, first fit, with the local
provisioner's volumes simulated as unpinned; placements are committed, so storage and
CPU moved in one pass add up, and a removed node is no destination for the next.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import msgspec.structs
import numpy as np

from autoscaler.clusterstate import Readiness
from autoscaler.context import LoopContext
from autoscaler.scaledown.eligibility import Candidate
from autoscaler.scaledown.reuse import ALL, Step
from autoscaler.scaledown.types import RemovalCandidate, Unremovable, UnremovableReason
from autoscaler.selectors import guard_selector
from kube.model import Pod
from simulator.drainability import DrainContext, NodeDrain, PdbTracker, drain_node
from simulator.volumes import VolumePlan

__all__ = ["RemovalPass"]


def _drain_context(sim: LoopContext) -> DrainContext:
    opts = sim.options
    guard = guard_selector(opts.storage.guard_pod_selector)
    effective_guard = guard if opts.storage_aware else None
    sd = opts.scale_down
    return DrainContext(
        now=sim.now,
        controllers=sim.objects.controllers,
        pdbs=PdbTracker(sim.objects.pdbs, effective_guard),
        skip_system_pods=sd.skip_nodes_with_system_pods,
        skip_local_storage=sd.skip_nodes_with_local_storage,
        skip_custom_controller_pods=sd.skip_nodes_with_custom_controller_pods,
        min_replica_count=sd.min_replica_count,
        system_pod_timeout=sd.blocking_system_pod_disruption_seconds,
        guard=guard,
        storage_aware=opts.storage_aware,
    )


def _describe_block(drain: NodeDrain) -> str:
    assert drain.blocked is not None
    pod, outcome = drain.blocked
    reason = outcome.reason.value if outcome.reason is not None else "Unknown"
    return f"pod {pod.ref}: {reason}" + (f" ({outcome.detail})" if outcome.detail else "")


class RemovalPass:
    """One removal-simulation pass over the candidates, committing as it goes."""

    def __init__(self, sim: LoopContext, clock: Callable[[], float]) -> None:
        self.sim = sim
        self.clock = clock
        snap = sim.snapshot
        n = snap.count
        allowed = np.zeros(n, np.bool_)
        ready_names = {s.name for s in sim.state.nodes if s.readiness is Readiness.READY}
        for idx in range(n):
            allowed[idx] = snap.roles[idx] == "live" and snap.nodes[idx].name in ready_names
        self.allowed = allowed
        self.ctx = _drain_context(sim)
        #: node -> pods that earlier removals of this pass moved onto it (committed placements).
        #: Removing that node moves them again, as upstream's persisted simulations do, or
        #: they would be planned onto a node that goes away in the same pass.
        self._received: dict[str, list[Pod]] = {}
        #: pod ref -> the destinations map of the removal that first moved it (kept current).
        self._moved_by: dict[str, dict[str, str]] = {}
        #: What the last verdict looked at (``reuse.Step``): destinations, the pod that found no
        #: place, whether a placement depended on pods elsewhere.
        self.dests: tuple[int, ...] = ()
        self.failed = -1
        self.elsewhere = False
        #: Replayed removals not yet applied to the snapshot: (node index, [(pod, destination)]).
        #: Only a simulation reads the snapshot, so they wait until one is needed (or forever,
        #: when every candidate's verdict stands).
        self._unapplied: list[tuple[int, list[tuple[Pod, int]]]] = []

    def try_remove(self, cand: Candidate, persist: bool = True) -> RemovalCandidate | Unremovable:
        """Simulate removing ``cand``; on success its placements stay in the snapshot.

        ``persist=False``: the caller reverts the snapshot afterwards, so pods moved here
        are not remembered as living on their destinations.
        """
        sim = self.sim
        snap, checker = sim.snapshot, sim.checker
        self._apply_replayed()
        self.dests, self.failed, self.elsewhere = (), -1, False
        drain = drain_node(self.ctx, sim.pods_by_node.get(cand.name, ()))
        if drain.blocked is not None:
            return Unremovable(cand.name, UnremovableReason.BLOCKED_BY_POD, _describe_block(drain))
        idx = snap.index.get(cand.name)
        if idx is None:
            return Unremovable(cand.name, UnremovableReason.UNEXPECTED_ERROR, "node is not in the simulation snapshot")
        received = self._received.get(cand.name, [])
        snap.fork()
        self.ctx.pdbs.fork()
        snap.disable_node(idx)  # journaled: not a destination while this fork lives
        placed: list[tuple[Pod, str]] = []
        dests: list[int] = []
        for pod in _moving_order((*drain.to_move, *received)):
            plan = sim.volumes.plan(pod, unpinned=True)
            # Upstream clears spec.nodeName before rescheduling (a pod bound by name
            # would only fit the node it is leaving); the checker does so without a copy.
            moving = pod
            if pod.scheduling.has_pod_constraints or snap.anti_affinity_pods:
                self.elsewhere = True  # where it fits depends on pods on other nodes too
            dest = checker.find_node(moving, plan, self.allowed, moving=True)
            if dest is None:
                snap.revert()
                self.ctx.pdbs.revert()
                self.dests, self.failed = tuple(dests), len(dests)
                return Unremovable(cand.name, UnremovableReason.NO_PLACE_TO_MOVE_PODS,
                                   f"no place to move pod {pod.ref}")
            dests.append(dest)
            checker.place(moving, plan, dest)
            placed.append((moving, snap.nodes[dest].name))
        self.dests = tuple(dests)
        return self._commit(cand, drain, placed, persist)

    def replay(self, cand: Candidate, step: Step, changed: Sequence[int] = ()) -> RemovalCandidate | None:
        """Redo a removal an earlier pass found, with its destinations (``reuse.Replay`` says when).

        ``changed`` (sorted node indices): nodes whose inputs changed, some before a
        destination. Each pod is then checked to fit none of them before its destination,
        and its destination again if it changed: first fit would still choose the same
        node, since every unchanged node is as the earlier pass saw it. None when a pod
        would now go elsewhere (the snapshot is as before the call).
        """
        old = step.verdict
        assert isinstance(old, RemovalCandidate)
        sim = self.sim
        snap = sim.snapshot
        received = self._received.get(cand.name, [])
        moves = list(zip(_moving_order((*old.drain.to_move, *received)), step.dests, strict=True))
        placed = [(pod, snap.nodes[dest].name) for pod, dest in moves]
        self.adopt(step)
        self.ctx.pdbs.fork()
        if not changed:
            self._unapplied.append((snap.index[cand.name], moves))
            return self._commit(cand, old.drain, placed, persist=True, forked=False)
        self._apply_replayed()
        snap.fork()
        snap.disable_node(snap.index[cand.name])
        if not self._moves_stand(moves, changed):
            snap.revert()
            self.ctx.pdbs.revert()
            return None
        return self._commit(cand, old.drain, placed, persist=True)

    def replay_failure(self, cand: Candidate, step: Step, changed: Sequence[int]) -> Unremovable | None:
        """Confirm a "no place to move pod" verdict of an earlier pass, or None when a pod may fit now.

        The pods moved before the failing one must still land where they did (as in
        ``replay``), and the failing pod must fit none of the changed nodes: it fit no
        unchanged node then, and those are as they were. The snapshot is left as it was.
        """
        old = step.verdict
        assert isinstance(old, Unremovable)
        sim = self.sim
        snap = sim.snapshot
        pods = sim.pods_by_node.get(cand.name, ())
        received = self._received.get(cand.name, [])
        order = _moving_order((*drain_node(self.ctx, pods).to_move, *received))
        if step.failed >= len(order):
            return None
        self._apply_replayed()
        snap.fork()
        snap.disable_node(snap.index[cand.name])
        try:
            if not self._moves_stand(list(zip(order, step.dests, strict=False)), changed):
                return None
            failing = order[step.failed]
            if not self._fits_none(failing, sim.volumes.plan(failing, unpinned=True), changed):
                return None
        finally:
            snap.revert()
        self.adopt(step)
        return old

    def same_budgets(self, a: Pod, b: Pod) -> bool:
        """Whether the same PDBs match ``a`` and ``b`` (an update of one pod that spends the same budgets)."""
        pdbs = self.ctx.pdbs
        return [id(p) for p in pdbs.matching(a)] == [id(p) for p in pdbs.matching(b)]

    def adopt(self, step: Step) -> None:
        """Take what a recorded step looked at as the last verdict's (it is this pass's verdict too)."""
        self.dests, self.failed, self.elsewhere = step.dests, step.failed, step.elsewhere

    def _moves_stand(self, moves: list[tuple[Pod, int]], changed: Sequence[int]) -> bool:
        """Place each pod on its recorded destination if first fit would still choose it (False if not)."""
        sim = self.sim
        for pod, dest in moves:
            plan = sim.volumes.plan(pod, unpinned=True)
            if not self._still_first_fit(pod, plan, dest, changed):
                return False
            sim.checker.place(pod, plan, dest)
        return True

    def _fits_none(self, pod: Pod, plan: VolumePlan, changed: Sequence[int]) -> bool:
        return self._still_first_fit(pod, plan, ALL, changed)

    def _still_first_fit(self, pod: Pod, plan: VolumePlan, dest: int, changed: Sequence[int]) -> bool:
        """No changed node before ``dest`` takes ``pod`` now, and ``dest`` does if it changed."""
        snap, checker = self.sim.snapshot, self.sim.checker
        unbound = msgspec.structs.replace(pod, node_name="")  # rescheduled: spec.nodeName cleared
        req = pod.requests
        for idx in changed:
            if idx > dest:
                break
            if idx == dest:
                return bool(self.allowed[idx]) and checker.check(unbound, plan, idx) is None
            # Resources first: a node without room is no destination, whatever the rest says.
            if (not self.allowed[idx] or snap.free_pods[idx] < 1 or (req.cpu and snap.free_cpu[idx] < req.cpu)
                    or (req.memory and snap.free_memory[idx] < req.memory)):
                continue
            if checker.check(unbound, plan, idx) is None:
                return False
        return True

    def _apply_replayed(self) -> None:
        """Put the replayed removals into the snapshot (journaled in the pass's fork)."""
        sim = self.sim
        for idx, moves in self._unapplied:
            sim.snapshot.disable_node(idx)
            for pod, dest in moves:
                sim.checker.place(pod, sim.volumes.plan(pod, unpinned=True), dest)
        self._unapplied.clear()

    def _commit(self, cand: Candidate, drain: NodeDrain, placed: list[tuple[Pod, str]],
                persist: bool, forked: bool = True) -> RemovalCandidate:
        snap = self.sim.snapshot
        destinations: dict[str, str] = {}
        self.ctx.pdbs.remove(drain.to_move)  # received pods spent their budget when first moved
        self.ctx.pdbs.commit()
        if forked:
            snap.commit()
        if persist:
            self._received.pop(cand.name, None)
        for moving, dest_name in placed:
            if not persist:
                destinations[moving.ref] = dest_name
                continue
            # A pod moved a second time updates the removal that evicts it for real.
            self._moved_by.setdefault(moving.ref, destinations)[moving.ref] = dest_name
            self._received.setdefault(dest_name, []).append(moving)
        return RemovalCandidate(cand.name, cand.group, cand.state.readiness is Readiness.READY, drain, destinations)


def _moving_order(pods: tuple[Pod, ...]) -> list[Pod]:
    """Biggest first, so the hardest pods claim space before small ones fragment it."""
    return sorted(pods, key=lambda p: (-p.requests.cpu, -p.requests.memory, p.ref))

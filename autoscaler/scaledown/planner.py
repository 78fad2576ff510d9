"""Scale-down planning: which nodes are unneeded, which are unremovable and why, which go now.

Pure: reads the loop's ``LoopContext`` and the memory kept between loops, returns a
``ScaleDownPlan``. Order follows upstream CA:

1. Eligibility (``eligibility.py``): being deleted, the scale-down-disabled annotation,
   not autoscaled, unready handling, utilization (CPU/memory, plus storage when
   storage-aware), then node group min size and cluster minimum resources.
2. Removal simulation, empty nodes first: the drain rules classify the node's pods;
   a node holding a non-migratable local volume is kept (``NodeHasLocalVolumes``);
   every pod to move must find another node through the predicate checker, with the
   local provisioner's volumes simulated as unpinned. Placements are committed, so
   storage and CPU moved in one pass add up, and a node chosen for removal is no
   destination for the next (storage-semantics 3.2-3.3); pods an earlier removal
   moved onto a node move again if that node goes too. PDB budgets are spent
   across the pass.
   The pass is kept in the plan (``last_pass``); the next loop reuses its verdicts
   while nothing the pass reads has changed (``reuse.py``), or replays those that
   still stand when only some nodes changed (``replay.py``).
3. Deletion (``deletion.py``): cooldowns, unneeded/unready time, then empty nodes in
   bulk within ``--max-scale-down-parallelism`` and at most ``--max-drain-parallelism``
   drained nodes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import msgspec.structs
import numpy as np

from autoscaler.clusterstate import Readiness
from autoscaler.config import ScaleDownMode
from autoscaler.context import LoopContext
from autoscaler.scaledown.eligibility import Candidate, GroupBudget, check_eligibility
from autoscaler.scaledown.replay import Replay
from autoscaler.scaledown.reuse import (
    ALL,
    PassRecord,
    Step,
    changed_nodes,
    pass_inputs,
    reusable,
    termination_flips,
)
from autoscaler.scaledown.types import (
    SIMULATION_TIMED_OUT,
    RemovalCandidate,
    ScaleDownMemory,
    ScaleDownPlan,
    ScaleDownResult,
    Unremovable,
    UnremovableReason,
)
from autoscaler.selectors import guard_selector
from kube.model import Pod
from simulator.drainability import DrainContext, NodeDrain, PdbTracker, drain_node
from simulator.volumes import VolumePlan

__all__ = ["RemovalCandidate", "ScaleDownMemory", "ScaleDownPlan", "Unremovable", "plan_scale_down"]


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
        #: The last ``try_remove``'s reach, destinations, failed pod and pod-constraint dependence (``reuse.Step``).
        self.reach = -1
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
        self.reach, self.dests, self.failed, self.elsewhere = -1, (), -1, False
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
                self.reach, self.elsewhere = ALL, True  # where it fits depends on pods on other nodes too
            dest = checker.find_node(moving, plan, self.allowed, moving=True)
            if dest is None:
                snap.revert()
                self.ctx.pdbs.revert()
                self.reach, self.dests, self.failed = ALL, tuple(dests), len(dests)
                return Unremovable(cand.name, UnremovableReason.NO_PLACE_TO_MOVE_PODS,
                                   f"no place to move pod {pod.ref}")
            # First fit: the answer depends on the nodes up to the one chosen, no further.
            self.reach = max(self.reach, dest)
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
        self.reach, self.dests, self.failed, self.elsewhere = step.reach, step.dests, -1, False
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
        self.reach, self.dests, self.failed, self.elsewhere = step.reach, step.dests, step.failed, False
        return old

    def same_budgets(self, a: Pod, b: Pod) -> bool:
        """Whether the same PDBs match ``a`` and ``b`` (an update of one pod that spends the same budgets)."""
        pdbs = self.ctx.pdbs
        return [id(p) for p in pdbs.matching(a)] == [id(p) for p in pdbs.matching(b)]

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


def plan_scale_down(sim: LoopContext, memory: ScaleDownMemory, steady_state: bool,
                    clock: Callable[[], float] = time.monotonic) -> ScaleDownPlan:
    from autoscaler.scaledown.cluster_wide import plan_cluster_wide
    from autoscaler.scaledown.deletion import choose_deletions, unneeded_since

    candidates, unremovable = check_eligibility(sim, memory)
    kept: list[Unremovable] = list(unremovable)
    local_volumes = sim.pinned_local_volumes()
    # Empty nodes first (upstream), then by name for a stable order.
    ordered = sorted(candidates, key=lambda c: (not c.looks_empty, c.name))
    cluster_wide = sim.options.scale_down.mode == ScaleDownMode.CLUSTER_WIDE
    inputs = pass_inputs(sim, ordered, local_volumes)
    record = memory.last_pass
    if record is not None and reusable(record, inputs, sim.now):
        # Nothing the pass reads has changed since it ran: its verdicts stand (reuse.py).
        removable, more = list(record.removable), list(record.unremovable)
    else:
        steps: tuple[Step, ...] | None = None
        replayed = 0
        if cluster_wide:
            removable, more = plan_cluster_wide(sim, ordered, local_volumes, clock)
        else:
            changed = None if cluster_wide else changed_nodes(record, inputs, sim.now)
            replay = None
            if record is not None and record.steps is not None and changed is not None:
                replay = Replay(record.steps, {sim.snapshot.index[name] for name in changed})
            sim.snapshot.fork()
            try:
                removable, more, steps, replayed = _per_node_pass(sim, ordered, local_volumes, clock, replay)
            finally:
                sim.snapshot.revert()
        timed_out = any(u.detail == SIMULATION_TIMED_OUT for u in more)
        record = None if timed_out else PassRecord(inputs, sim.now, termination_flips(sim), tuple(removable),
                                                   tuple(more), steps, replayed)
    kept.extend(more)
    since = unneeded_since(removable, memory, sim.now)
    # Cluster-wide mode judged each node alone: removing two at once could break the thresholds.
    to_delete, waiting = choose_deletions(sim, removable, memory, since, steady_state,
                                         limit=1 if cluster_wide else None)
    removed = sorted(r.node for r in to_delete)
    return ScaleDownPlan(
        ScaleDownResult.SCALED_DOWN if removed else ScaleDownResult.NO_NODES_REMOVED,
        removed=removed, unneeded=sorted(r.node for r in removable), unremovable=kept,
        to_delete=to_delete, waiting=waiting, unneeded_since=since, last_pass=record,
    )


def _replayed(removal: RemovalPass, replay: Replay | None, old: Step | None, cand: Candidate,
              index: int | None) -> RemovalCandidate | Unremovable | None:
    """The candidate's recorded verdict, if it stands or its checks pass (``replay.py``); None: simulate it."""
    if replay is None or old is None or index is None:
        return None
    checks = replay.checks(old, index)
    if checks is None:
        return None
    if isinstance(old.verdict, RemovalCandidate):
        return removal.replay(cand, old, checks)
    if checks:
        return removal.replay_failure(cand, old, checks)
    removal.reach, removal.dests, removal.failed, removal.elsewhere = old.reach, old.dests, old.failed, old.elsewhere
    return old.verdict


def _per_node_pass(sim: LoopContext, ordered: list[Candidate], local_volumes: dict[str, list[str]],
                   clock: Callable[[], float], replay: Replay | None = None,
                   ) -> tuple[list[RemovalCandidate], list[Unremovable], tuple[Step, ...], int]:
    """The per-node pass; with ``replay``, the leading candidates whose verdicts stand are replayed, not simulated."""
    removal = RemovalPass(sim, clock)
    budget = GroupBudget(sim)
    deadline = clock() + sim.options.scale_down.simulation_timeout
    removable: list[RemovalCandidate] = []
    unremovable: list[Unremovable] = []
    steps: list[Step] = []
    replayed = 0
    for position, cand in enumerate(ordered):
        key = (cand.name, cand.group, cand.looks_empty)
        old = replay.step(position, cand) if replay is not None else None
        if old is None:
            replay = None  # another candidate here: the rest is simulated
        decided: Unremovable | None = None
        if cand.name in local_volumes:
            pvs = local_volumes[cand.name]
            decided = Unremovable(cand.name, UnremovableReason.NODE_HAS_LOCAL_VOLUMES,
                                  "holds local volume(s) that cannot be migrated: " + ", ".join(sorted(pvs)))
        else:
            decided = budget.blocked(cand)
        if decided is None and clock() > deadline:
            decided = Unremovable(cand.name, UnremovableReason.UNEXPECTED_ERROR, SIMULATION_TIMED_OUT)
        if decided is not None:
            if old is not None and isinstance(old.verdict, RemovalCandidate):
                replay = None  # it was removed in the last pass, and committed its pods: the state differs
            steps.append(Step(key, decided, ALL if decided.detail == SIMULATION_TIMED_OUT else -1, simulated=False))
            unremovable.append(decided)
            continue
        result = _replayed(removal, replay, old, cand, sim.snapshot.index.get(cand.name))
        if result is not None:
            replayed += 1
        else:
            result = removal.try_remove(cand)
            if replay is not None and old is not None and not replay.absorb(old, result, removal.dests,
                                                                             removal.same_budgets):
                replay = None  # the new verdict left the pass in another state: simulate the rest
        steps.append(Step(key, result, removal.reach, removal.dests, failed=removal.failed,
                          elsewhere=removal.elsewhere))
        if isinstance(result, Unremovable):
            unremovable.append(result)
        else:
            budget.take(cand)
            removable.append(result)
    return removable, unremovable, tuple(steps), replayed

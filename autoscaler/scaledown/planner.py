"""Scale-down planning: which nodes are unneeded, which are unremovable and why, which go now.

Pure: reads the loop's ``LoopContext`` and the memory kept between loops, returns a
``ScaleDownPlan``. Order follows upstream CA:

1. Eligibility (``eligibility.py``): being deleted, the scale-down-disabled annotation,
   not autoscaled, unready handling, utilization (CPU/memory, plus storage when
   storage-aware), then node group min size and cluster minimum resources.
2. Removal simulation, empty nodes first: the drain rules classify the node's pods;
   a node holding a non-migratable local volume, or one an object the live view could
   not read may pin (``unreadable.py``), is kept (``NodeHasLocalVolumes``; an object
   that could pin any node holds scale-down back entirely);
   every pod to move must find another node through the predicate checker, with the
   local provisioner's volumes simulated as unpinned. Placements are committed, so
   storage and CPU moved in one pass add up, and a node chosen for removal is no
   destination for the next (storage-semantics 3.2-3.3); pods an earlier removal
   moved onto a node move again if that node goes too. PDB budgets are spent
   across the pass.
   The pass is kept in the plan (``last_pass``); the next loop reuses its verdicts
   while nothing the pass reads has changed (``reuse.py``), or replays those that
   still stand when only some nodes changed (``replay.py``).
3. Nodes where a ``safe-to-evict: "on-completion"`` pod runs are held back
   (``BlockedByOnCompletionPod``), as upstream's ``NodesToDelete`` does.
4. Deletion (``deletion.py``): cooldowns, unneeded/unready time, then empty nodes in
   bulk within ``--max-scale-down-parallelism`` and at most ``--max-drain-parallelism``
   drained nodes.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable

from autoscaler.config import ScaleDownMode
from autoscaler.context import LoopContext
from autoscaler.scaledown.cost import drain_deadline
from autoscaler.scaledown.cost import ordered as order_candidates
from autoscaler.scaledown.eligibility import Candidate, GroupBudget, check_eligibility
from autoscaler.scaledown.removal import RemovalPass
from autoscaler.scaledown.replay import Replay
from autoscaler.scaledown.reuse import (
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
from autoscaler.scaledown.unreadable import unreadable_protection

__all__ = ["RemovalCandidate", "ScaleDownMemory", "ScaleDownPlan", "Unremovable", "plan_scale_down"]


def plan_scale_down(sim: LoopContext, memory: ScaleDownMemory, steady_state: bool,
                    clock: Callable[[], float] = time.monotonic) -> ScaleDownPlan:
    from autoscaler.scaledown.cluster_wide import plan_cluster_wide
    from autoscaler.scaledown.deletion import choose_deletions, unneeded_since

    shield = unreadable_protection(sim.objects)
    if shield.hold:
        return ScaleDownPlan.skipped(shield.hold_reason, memory.unneeded_since, memory.last_pass)
    candidates, unremovable = check_eligibility(sim, memory)
    kept: list[Unremovable] = list(unremovable)
    local_volumes = sim.pinned_local_volumes()
    if shield.nodes:
        # An object the live view could not read may hold data there: keep the node (unreadable.py).
        local_volumes = {n: [*local_volumes.get(n, []), *shield.nodes.get(n, [])]
                         for n in {*local_volumes, *shield.nodes}}
    # Empty nodes first (upstream), then by --scale-down-order (cost.py), the name breaking ties.
    unpin_bytes = sim.unpin_bytes()
    ordered = order_candidates(candidates, {s.name: s.node for s in sim.state.nodes}, sim.pods_by_node,
                               unpin_bytes, sim.options)
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
    free, held = _held_by_on_completion_pods(removable)
    kept.extend(held)
    # Cluster-wide mode judged each node alone: removing two at once could break the thresholds.
    to_delete, waiting = choose_deletions(sim, free, memory, since, steady_state,
                                         limit=1 if cluster_wide else None, unpin_bytes=unpin_bytes)
    # Deadlines from the throughput earlier drains showed, the flag until one did (throughput.py).
    observed = memory.unpin_throughput.estimate
    to_delete = [_with_deadline(r, unpin_bytes.get(r.node, 0), observed, sim, memory) for r in to_delete]
    removed = sorted(r.node for r in to_delete)
    return ScaleDownPlan(
        ScaleDownResult.SCALED_DOWN if removed else ScaleDownResult.NO_NODES_REMOVED,
        removed=removed, unneeded=sorted(r.node for r in free), unremovable=kept,
        to_delete=to_delete, waiting=waiting, unneeded_since=since, last_pass=record, unpin_bytes=unpin_bytes,
        unpin_bytes_per_second=observed,
    )


def _with_deadline(cand: RemovalCandidate, unpin_bytes: int, observed: float | None, sim: LoopContext,
                   memory: ScaleDownMemory) -> RemovalCandidate:
    """The chosen node with its bytes to unpin, predicted unpin time and drain deadline (``cost.drain_deadline``)."""
    cap = sim.options.scale_down.max_graceful_termination_seconds
    grace = max((min(p.grace_seconds, cap) for p in cand.drain.to_move), default=0)
    deadline = drain_deadline(unpin_bytes, sim.options, bytes_per_second=observed,
                              failures=memory.drain_failures.get(cand.node, 0), grace=grace)
    rate = sim.options.scale_down.unpin_bytes_per_second if observed is None else observed
    return dataclasses.replace(cand, unpin_bytes=unpin_bytes, unpin_seconds=unpin_bytes / rate, drain_seconds=deadline)


def _held_by_on_completion_pods(removable: list[RemovalCandidate]
                                ) -> tuple[list[RemovalCandidate], list[Unremovable]]:
    """Removable nodes that may go, and those a ``safe-to-evict: "on-completion"`` pod holds back.

    Upstream's ``Planner.NodesToDelete`` (``core/scaledown/planner/planner.go``): the node
    passed the removal simulation (its unneeded time keeps running, and its pods keep
    their simulated places), but it is not deleted while such a pod runs on it; the
    reason is ``BlockedByOnCompletionPod``. plan-contract lists a node in ``unneeded`` or
    ``unremovable``, never both, so a held node is only in ``unremovable``.
    """
    free: list[RemovalCandidate] = []
    held: list[Unremovable] = []
    for cand in removable:
        waiting = cand.drain.on_completion
        if not waiting:
            free.append(cand)
            continue
        pods = ", ".join(sorted(p.ref for p in waiting))
        held.append(Unremovable(cand.node, UnremovableReason.BLOCKED_BY_ON_COMPLETION_POD,
                                f"pod(s) left to finish (safe-to-evict: on-completion): {pods}"))
    return free, held


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
    removal.adopt(old)
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
            steps.append(Step(key, decided, simulated=False))
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
        steps.append(Step(key, result, removal.dests, failed=removal.failed,
                          elsewhere=removal.elsewhere))
        if isinstance(result, Unremovable):
            unremovable.append(result)
        else:
            budget.take(cand)
            removable.append(result)
    return removable, unremovable, tuple(steps), replayed

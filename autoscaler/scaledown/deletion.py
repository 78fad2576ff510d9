"""Which unneeded nodes go in this loop (upstream's unneeded-time tracking and budgets).

Nothing is deleted during a cooldown (``--scale-down-delay-after-add|delete|failure``)
or before a node has been unneeded for ``--scale-down-unneeded-time`` (unready nodes:
``--scale-down-unready-time``; each the node group's own option when it sets one, as
upstream's ``unneeded/nodes.go`` reads them per group). Then empty nodes go in bulk within
``--max-scale-down-parallelism``, and at most ``--max-drain-parallelism`` nodes that
need draining, fewer while earlier drains are still in progress. ``plan`` runs at
steady state: no cooldown, every unneeded node counts as unneeded long enough.
"""

from __future__ import annotations

from collections.abc import Mapping

from autoscaler.context import LoopContext
from autoscaler.scaledown.types import RemovalCandidate, ScaleDownMemory

__all__ = ["choose_deletions", "unneeded_since"]


def _cooldown(sim: LoopContext, memory: ScaleDownMemory) -> str:
    sd, now = sim.options.scale_down, sim.now
    if memory.last_scale_up is not None and now - memory.last_scale_up < sd.delay_after_add:
        return "ScaleDownInCooldown: a scale-up happened less than --scale-down-delay-after-add ago"
    if memory.last_scale_down is not None and now - memory.last_scale_down < sd.delay_after_delete:
        return "ScaleDownInCooldown: a node was deleted less than --scale-down-delay-after-delete ago"
    if memory.last_failure is not None and now - memory.last_failure < sd.delay_after_failure:
        return "ScaleDownInCooldown: a scale-down failed less than --scale-down-delay-after-failure ago"
    return ""


def unneeded_since(removable: list[RemovalCandidate], memory: ScaleDownMemory, now: float) -> dict[str, float]:
    """Since when each removable node has been unneeded: the first sighting is kept while it stays so."""
    return {r.node: memory.unneeded_since.get(r.node, now) for r in removable}


def choose_deletions(sim: LoopContext, removable: list[RemovalCandidate], memory: ScaleDownMemory,
                     since: Mapping[str, float], steady_state: bool, *,
                     limit: int | None = None, unpin_bytes: Mapping[str, int] | None = None,
                     ) -> tuple[list[RemovalCandidate], str]:
    """The nodes to delete now, and why others wait (empty when nothing waits).

    ``since``: this loop's ``unneeded_since`` (the loop stores it; nothing here writes memory).
    ``unpin_bytes``: node -> bytes its removal unpins, for ``--scale-down-max-unpin-bytes-in-flight``.
    """
    sd, now = sim.options.scale_down, sim.now
    if not removable:
        return [], ""
    if not steady_state:
        why = _cooldown(sim, memory)
        if why:
            return [], why

    def long_enough(r: RemovalCandidate) -> bool:
        if steady_state:
            return True
        config = sim.group_config(r.group)
        needed = config.unneeded_seconds if r.ready else config.unready_seconds
        return needed >= 0 and now - since[r.node] >= needed

    ready = [r for r in removable if long_enough(r)]
    if not ready:
        return [], "NotUnneededLongEnough: no unneeded node has been unneeded for long enough yet"
    budget = max(0, sd.max_parallelism - len(memory.deletions_in_progress))
    if limit is not None:
        ready, budget = ready[:limit], min(budget, limit)
    empty = [r for r in ready if r.empty][:budget]
    drains_left = max(0, min(budget - len(empty), sd.max_drain_parallelism - len(memory.deletions_in_progress)))
    drained = [r for r in ready if not r.empty][:drains_left]
    return _within_unpin_budget(empty + drained, memory, unpin_bytes or {}, sd.max_unpin_bytes_in_flight)


def _within_unpin_budget(chosen: list[RemovalCandidate], memory: ScaleDownMemory, unpin_bytes: Mapping[str, int],
                         budget: int) -> tuple[list[RemovalCandidate], str]:
    """The chosen nodes, in order, while the bytes being unpinned stay within ``budget`` (0: unlimited).

    In flight: what is still pinned to the nodes being deleted. A node with nothing to unpin
    always fits; one whose bytes alone exceed the budget starts only when nothing else is in flight.
    """
    if not budget:
        return chosen, ""
    in_flight = sum(unpin_bytes.get(n, 0) for n in memory.deletions_in_progress)
    out: list[RemovalCandidate] = []
    waiting = ""
    for cand in chosen:
        need = unpin_bytes.get(cand.node, 0)
        if need and in_flight and in_flight + need > budget:
            waiting = (f"--scale-down-max-unpin-bytes-in-flight: {in_flight} bytes being unpinned, "
                       f"{cand.node} would add {need}")
            continue
        in_flight += need
        out.append(cand)
    return out, waiting

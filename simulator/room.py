"""How many copies of a pod one node's free resources and capacity pools hold, placed one after another.

The resource half of ``PredicateChecker.copies_at``: the comparisons ``feasible`` makes
(``NodeResourcesFit`` and ``localcapacity.mask_capacity``) turned into counts for one node,
read as scalars. Placing a copy consumes what ``demand`` says, so the count falls by one
per copy placed; the estimator uses it to place a pod group's copies on a node in one step.
"""

from __future__ import annotations

from kube.model import Pod
from simulator.snapshot import ClusterSnapshot
from simulator.volumes import VolumePlan

__all__ = ["room_at"]

#: More copies than any node holds (a pool the plan asks nothing of, or a lenient one not published).
_UNLIMITED = 1 << 62


def room_at(snap: ClusterSnapshot, pod: Pod, plan: VolumePlan, idx: int) -> int:
    """Copies of the pod node ``idx`` holds (``feasible``'s comparisons: a zero request is
    not compared, so a node may be overcommitted in it; pod slots always are)."""
    room = int(snap.free_pods[idx])
    req = pod.requests
    for need, free in ((req.cpu, snap.free_cpu), (req.memory, snap.free_memory),
                       (req.ephemeral_storage, snap.free_ephemeral)):
        if need:
            room = min(room, int(free[idx]) // need)
    for name, value in req.extended:
        if value:
            room = min(room, int(snap.extended_free(name)[idx]) // value)
    if plan.local_bytes or plan.pools:
        room = min(room, _room_in_pools(snap, plan, idx))
    return max(room, 0)


def _room_in_pools(snap: ClusterSnapshot, plan: VolumePlan, idx: int) -> int:
    """Copies of the plan's summed claims node ``idx``'s pools hold (``mask_capacity`` for one
    node; a lenient pool the node does not publish holds any number, and ``demand`` takes
    nothing of it)."""
    room = _UNLIMITED
    if plan.local_bytes:
        need = plan.local_bytes if idx >= snap.base_count else plan.live_local_bytes
        room = _copies(int(snap.free_local[idx]), need)
    for pool, need, lenient in plan.pools:
        free = int(snap.pool_free(pool)[idx])
        if not (lenient and free < 0):
            room = min(room, _copies(free, need))
    return room


def _copies(free: int, need: int) -> int:
    if free < need:
        return 0
    return free // need if need else _UNLIMITED

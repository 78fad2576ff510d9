"""Local capacity against the snapshot's pools: the summed-claims rule, vectorized and per node.

A ``VolumePlan`` asks ``local_bytes`` of the local provisioner's pool (``free_local``) and
``pools`` of the others (``ClusterSnapshot.pool_free``); claims bound to Available PVs may
add more on a given node (``StaticFit``).

Claims whose driver publishes CSIStorageCapacity are checked one by one against those
objects, as kube-scheduler does, and here is how that meets the pools:

* the local provisioner: on a live node (index below ``base_count``) the objects alone
  decide and the claim is not summed (``published_local``, kube-scheduler parity kept);
  templates and upcoming nodes have published no objects yet, so the pool decides;
* another pool (TopoLVM): both apply. The per-claim objects on live nodes, plus the
  summed pool wherever the node publishes the pool's annotation (the stricter extension:
  claims summed). A node that does not publish it is left to the objects (``PoolDemand``'s
  third item; the predicate checker then checks the objects on that node even when it is
  a template), since the driver tells capacity there through them only.
"""

from __future__ import annotations

from collections.abc import Iterable

from simulator.capacity import ROK_POOL
from simulator.snapshot import BoolArray, ClusterSnapshot
from simulator.volumes import PoolDemand, StaticFit, VolumePlan

__all__ = ["demand", "fits_node", "mask_capacity", "merge_pools", "unpublished"]


def mask_capacity(snap: ClusterSnapshot, plan: VolumePlan, mask: BoolArray, lo: int, n: int) -> None:
    """Clear ``mask`` (over nodes ``lo..n``) where the plan's summed claims do not fit a pool."""
    base = snap.base_count
    if plan.local_bytes:
        live_bytes = plan.live_local_bytes
        if live_bytes == plan.local_bytes or lo >= base:
            mask &= snap.free_local[lo:n] >= plan.local_bytes
        else:  # live (base) nodes leave published-capacity claims to CSIStorageCapacity
            split = min(base, n) - lo
            mask[:split] &= snap.free_local[lo:lo + split] >= live_bytes
            mask[split:] &= snap.free_local[lo + split:n] >= plan.local_bytes
    for pool, need, lenient in plan.pools:
        free = snap.pool_free(pool)[lo:n]
        ok = free >= need
        if lenient:
            ok |= free < 0  # not published there: CSIStorageCapacity decides
        mask &= ok


def merge_pools(plan: VolumePlan, fit: StaticFit | None) -> tuple[PoolDemand, ...]:
    """The plan's pools plus what binding to Available PVs left to provision on one node."""
    if fit is None or not fit.extra_pools:
        return plan.pools
    merged: dict[str, tuple[int, bool]] = {pool: (size, lenient) for pool, size, lenient in plan.pools}
    for pool, size, lenient in fit.extra_pools:
        old_size, old_lenient = merged.get(pool, (0, False))
        merged[pool] = (old_size + size, old_lenient or lenient)
    return tuple((pool, size, lenient) for pool, (size, lenient) in sorted(merged.items()))


def _pools_fit(snap: ClusterSnapshot, pools: Iterable[PoolDemand], idx: int) -> bool:
    for pool, need, lenient in pools:
        free = int(snap.pool_free(pool)[idx])
        if free < need and not (lenient and free < 0):
            return False
    return True


def fits_node(snap: ClusterSnapshot, plan: VolumePlan, idx: int, fit: StaticFit | None = None) -> bool:
    """``mask_capacity`` for one node, with the extra bytes of ``fit`` when given."""
    live = snap.roles[idx] == "live"
    local = (plan.live_local_bytes if live else plan.local_bytes) + (fit.extra_local if fit is not None else 0)
    if local and snap.free_local[idx] < local:
        return False
    return _pools_fit(snap, merge_pools(plan, fit), idx)


def unpublished(snap: ClusterSnapshot, pool: str | None, idx: int) -> bool:
    """A non-local pool the node publishes no value for (its claims go by CSIStorageCapacity)."""
    return pool is not None and pool != ROK_POOL and snap.pool_free(pool)[idx] < 0


def demand(snap: ClusterSnapshot, plan: VolumePlan, idx: int,
           fit: StaticFit | None = None) -> tuple[int, tuple[tuple[str, int], ...]]:
    """Bytes the pod provisions on node ``idx``: of the local pool, and per other pool.

    A node not publishing a lenient pool consumes nothing of it: its array keeps
    ``NOT_PUBLISHED``, and what the volume takes shows in the next CSIStorageCapacity.
    """
    live = snap.roles[idx] == "live"
    local = (plan.live_local_bytes if live else plan.local_bytes) + (fit.extra_local if fit is not None else 0)
    pools = merge_pools(plan, fit)
    if not pools:
        return local, ()
    out = []
    for pool, size, lenient in pools:
        if lenient and snap.pool_free(pool)[idx] < 0:
            continue
        out.append((pool, size))
    return local, tuple(out)

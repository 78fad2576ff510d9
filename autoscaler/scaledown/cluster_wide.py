"""Cluster-wide threshold scale-down (``--scale-down-mode=cluster-wide``, seed 001 chapter 4).

Instead of asking "is this node underutilized?", ask "after removing this node and
packing its pods onto the rest, does the cluster's utilization stay below the
thresholds?" (``--scale-down-cluster-cpu-threshold``, ``--scale-down-cluster-memory-threshold``).

1. Candidate check (linear): cluster requests minus the node's DaemonSet pods, over
   cluster allocatable minus the node's, must stay below both thresholds.
2. Each passing node is bin-packed away (the same removal simulation as per-node
   mode, storage-aware), independently of the others. The resulting state's
   requests over its *usable* capacity must stay below both thresholds.
3. Every node passing both is unneeded; the most expensive one (group price per
   hour, then the emptiest) is removed in this loop, and the procedure repeats on
   the next loop, as the seed's ``down_scaling_algorithm`` does.

Usable capacity (seed 4.3): a node's free CPU counts only as far as its free memory
can feed it (``free_mem * max_cpu_per_byte``) and vice versa, and a node with less
free CPU or memory than the smallest pod asks for has no usable *free* resources.
The seed's pseudo-code then returns (0, 0) for such a node, which would also stop
counting the resources its pods already use, so a full node would lower the usable
capacity below the requests it serves. We read it the way its prose says, "the
resources that are already in use are considered usable": such a node contributes
its requests and nothing more. The four usability thresholds are derived from the
running pods (smallest request per resource, extreme CPU:memory ratios) rather than
being four more flags.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from autoscaler.clusterstate import Readiness
from autoscaler.context import LoopContext
from autoscaler.scaledown.eligibility import Candidate, GroupBudget
from autoscaler.scaledown.types import SIMULATION_TIMED_OUT, RemovalCandidate, Unremovable, UnremovableReason
from cloudproviders.interface import price_of
from simulator.snapshot import BoolArray, IntArray

__all__ = ["UsabilityThresholds", "plan_cluster_wide", "usable_capacity"]


@dataclass(frozen=True, slots=True)
class UsabilityThresholds:
    min_cpu: int  # millicores
    min_memory: int  # bytes
    max_cpu_per_byte: float
    max_bytes_per_cpu: float


def derive_thresholds(sim: LoopContext) -> UsabilityThresholds:
    cpus = []
    mems = []
    cpu_per_byte = 0.0
    bytes_per_cpu = 0.0
    for pods in sim.pods_by_node.values():
        for pod in pods:
            if pod.is_daemonset:
                continue
            cpu, mem = pod.requests.cpu, pod.requests.memory
            if cpu > 0:
                cpus.append(cpu)
            if mem > 0:
                mems.append(mem)
            if cpu > 0 and mem > 0:
                cpu_per_byte = max(cpu_per_byte, cpu / mem)
                bytes_per_cpu = max(bytes_per_cpu, mem / cpu)
    return UsabilityThresholds(
        min_cpu=int(min(cpus) * 0.9) if cpus else 0,
        min_memory=int(min(mems) * 0.9) if mems else 0,
        max_cpu_per_byte=cpu_per_byte or float("inf"),
        max_bytes_per_cpu=bytes_per_cpu or float("inf"),
    )


def usable_capacity(alloc_cpu: IntArray, alloc_mem: IntArray, free_cpu: IntArray, free_mem: IntArray, *,
                    mask: BoolArray, ut: UsabilityThresholds) -> tuple[float, float]:
    """Sum over ``mask`` nodes of requests plus usable free resources (CPU, memory)."""
    fc = np.maximum(free_cpu[mask], 0).astype(np.float64)
    fm = np.maximum(free_mem[mask], 0).astype(np.float64)
    used_cpu = alloc_cpu[mask] - fc
    used_mem = alloc_mem[mask] - fm
    usable = (fc >= ut.min_cpu) & (fm >= ut.min_memory)
    ucpu = np.where(usable, np.minimum(fc, fm * ut.max_cpu_per_byte), 0.0)
    umem = np.where(usable, np.minimum(fm, fc * ut.max_bytes_per_cpu), 0.0)
    return float((used_cpu + ucpu).sum()), float((used_mem + umem).sum())


def _over_thresholds(cpu: float, cpu_capacity: float, memory: float, memory_capacity: float,  # noqa: PLR0917
                     t_cpu: float, t_mem: float) -> str | None:
    """None when both ratios stay below their thresholds, else the ratios as a detail string."""
    ratio_cpu = cpu / cpu_capacity if cpu_capacity > 0 else float("inf")
    ratio_mem = memory / memory_capacity if memory_capacity > 0 else float("inf")
    if ratio_cpu < t_cpu and ratio_mem < t_mem:
        return None
    return f"cpu {ratio_cpu:.2f}, memory {ratio_mem:.2f} (thresholds {t_cpu:g}, {t_mem:g})"


def plan_cluster_wide(sim: LoopContext, ordered: list[Candidate], local_volumes: dict[str, list[str]],
                      clock: Callable[[], float]) -> tuple[list[RemovalCandidate], list[Unremovable]]:
    from autoscaler.scaledown.removal import RemovalPass

    sd = sim.options.scale_down
    t_cpu, t_mem = sd.cluster_cpu_threshold, sd.cluster_memory_threshold
    snap = sim.snapshot
    n = snap.count
    alloc_cpu = np.array([snap.nodes[i].allocatable.cpu for i in range(n)], np.int64)
    alloc_mem = np.array([snap.nodes[i].allocatable.memory for i in range(n)], np.int64)
    ready = {s.name for s in sim.state.nodes if s.readiness is Readiness.READY}
    live = np.array([snap.roles[i] == "live" and snap.nodes[i].name in ready for i in range(n)], np.bool_)
    req_cpu = float((alloc_cpu[live] - snap.free_cpu[:n][live]).sum())
    req_mem = float((alloc_mem[live] - snap.free_memory[:n][live]).sum())
    cap_cpu = float(alloc_cpu[live].sum())
    cap_mem = float(alloc_mem[live].sum())
    ut = derive_thresholds(sim)
    removal = RemovalPass(sim, clock)
    budget = GroupBudget(sim)
    deadline = clock() + sd.simulation_timeout
    passing: list[tuple[RemovalCandidate, float]] = []
    unremovable: list[Unremovable] = []
    for cand in ordered:
        if cand.name in local_volumes:
            unremovable.append(Unremovable(cand.name, UnremovableReason.NODE_HAS_LOCAL_VOLUMES,
                                           "holds local volume(s) that cannot be migrated: "
                                           + ", ".join(sorted(local_volumes[cand.name]))))
            continue
        limit = budget.blocked(cand)
        if limit is not None:
            unremovable.append(limit)
            continue
        node = cand.state.node
        ds = [p.requests for p in sim.pods_by_node.get(cand.name, ()) if p.is_daemonset]
        # The node's DaemonSet pods go with it; everything else is packed onto the rest.
        left_cpu = req_cpu - sum(r.cpu for r in ds)
        left_mem = req_mem - sum(r.memory for r in ds)
        over = _over_thresholds(left_cpu, cap_cpu - node.allocatable.cpu, left_mem,
                                cap_mem - node.allocatable.memory, t_cpu, t_mem)
        if over is not None:
            unremovable.append(Unremovable(cand.name, UnremovableReason.NOT_UNDERUTILIZED,
                                           f"cluster utilization without this node: {over}"))
            continue
        if clock() > deadline:
            unremovable.append(Unremovable(cand.name, UnremovableReason.UNEXPECTED_ERROR, SIMULATION_TIMED_OUT))
            continue
        snap.fork()
        removal.ctx.pdbs.fork()
        try:
            result = removal.try_remove(cand, persist=False)
            if isinstance(result, Unremovable):
                unremovable.append(result)
                continue
            mask = live & snap.enabled[:n]
            usable_cpu, usable_mem = usable_capacity(alloc_cpu, alloc_mem, snap.free_cpu[:n], snap.free_memory[:n],
                                                     mask=mask, ut=ut)
            over = _over_thresholds(left_cpu, usable_cpu, left_mem, usable_mem, t_cpu, t_mem)
            if over is not None:
                unremovable.append(Unremovable(cand.name, UnremovableReason.NOT_UNDERUTILIZED,
                                               f"usable-capacity utilization after removal: {over}"))
                continue
            price = price_of(sim.state.groups[cand.group]) or 0.0
            passing.append((result, price))
        finally:
            removal.ctx.pdbs.revert()
            snap.revert()
    # Most expensive first; the deletion step takes them in this order (one drain per loop by default).
    passing.sort(key=lambda rp: (-rp[1], len(rp[0].drain.to_move), rp[0].node))
    return [r for r, _ in passing], unremovable

"""Which nodes may be considered for removal at all, in upstream CA's order.

Being deleted, the ``scale-down-disabled`` annotation, not autoscaled, utilization
that cannot be computed (no cpu or memory allocatable: ``UnexpectedError``), unready
handling (``--scale-down-unready-enabled``; a negative ``--scale-down-unready-time``
keeps unready nodes forever, since their local data would be lost), then utilization:
max(CPU, memory), or GPU use on GPU nodes, above ``--scale-down-utilization-threshold``
(``--scale-down-gpu-utilization-threshold``; each the group's own option when it sets one,
``autoscaler.groupconfig``; CA >= 1.36 compares ``utilization > threshold``: a node
exactly at it is a candidate),
or, storage-aware, storage utilization above
``--scale-down-storage-utilization-threshold``, means ``NotUnderutilized``.

``GroupBudget`` then keeps each group above its min size and the cluster above the
``--cores-total``/``--memory-total`` minima as nodes are accepted in one pass.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from autoscaler.clusterstate import NodeState, Readiness
from autoscaler.config import ScaleDownMode
from autoscaler.context import LoopContext
from autoscaler.scaledown.types import ScaleDownMemory, Unremovable
from autoscaler.selectors import guard_selector
from kube.model import LabelSelector
from simulator.drainability import is_guard_pod
from simulator.utilization import Utilization, is_long_terminating

__all__ = ["Candidate", "GroupBudget", "check_eligibility"]


@dataclass(frozen=True, slots=True)
class Candidate:
    state: NodeState
    group: str
    utilization: Utilization
    #: No pod but DaemonSet, mirror, guard or long-terminating ones (a cheap first guess).
    looks_empty: bool

    @property
    def name(self) -> str:
        return self.state.name


def _looks_empty(sim: LoopContext, state: NodeState, guard: LabelSelector | None) -> bool:
    for pod in sim.pods_by_node.get(state.name, ()):
        if pod.is_daemonset or pod.is_mirror or is_long_terminating(pod, sim.now) or is_guard_pod(guard, pod):
            continue
        return False
    return True


def check_eligibility(sim: LoopContext, memory: ScaleDownMemory) -> tuple[list[Candidate], list[Unremovable]]:
    sd = sim.options.scale_down
    selector = sim.options.storage.guard_pod_selector
    guard = guard_selector(selector) if sim.options.storage_aware else None
    candidates: list[Candidate] = []
    unremovable: list[Unremovable] = []
    for state in sim.state.nodes:
        name = state.name
        if state.readiness is Readiness.NOT_STARTED:
            continue  # upcoming: not a candidate until it has started
        if state.readiness is Readiness.DELETING or name in memory.deletions_in_progress:
            unremovable.append(Unremovable(name, "CurrentlyBeingDeleted"))
            continue
        if state.node.scale_down_disabled:
            unremovable.append(Unremovable(name, "ScaleDownDisabledAnnotation"))
            continue
        if state.group is None:
            unremovable.append(Unremovable(name, "NotAutoscaled", "the node belongs to no node group"))
            continue
        # Upstream computes utilization before the unready checks; failing to is UnexpectedError.
        util = sim.utilization(state)
        if util.error is not None:
            unremovable.append(Unremovable(name, "UnexpectedError", f"utilization: {util.error}"))
            continue
        unready = state.readiness is Readiness.UNREADY
        if unready and not sd.unready_enabled:
            unremovable.append(Unremovable(name, "ScaleDownUnreadyDisabled"))
            continue
        config = sim.group_config(state.group)
        if unready and config.unready_seconds < 0:
            unremovable.append(Unremovable(
                name, "NotUnreadyLongEnough",
                "unready nodes are never removed (--scale-down-unready-time is negative): local data would be lost"))
            continue
        threshold = config.utilization_threshold if util.gpu is None else config.gpu_utilization_threshold
        if sd.mode == ScaleDownMode.PER_NODE and util.value > threshold:
            unremovable.append(Unremovable(
                name, "NotUnderutilized", f"{util.resource} utilization {util.value:.2f} > {threshold:g}"))
            continue
        if util.storage is not None and util.storage > sd.storage_utilization_threshold:
            unremovable.append(Unremovable(
                name, "NotUnderutilized",
                f"storage utilization {util.storage:.2f} > {sd.storage_utilization_threshold:g}"))
            continue
        candidates.append(Candidate(state, state.group, util, _looks_empty(sim, state, guard)))
    return candidates, unremovable


class GroupBudget:
    """Min sizes and cluster minimum resources, spent as nodes are accepted for removal."""

    def __init__(self, sim: LoopContext) -> None:
        self.sim = sim
        self.sizes = {name: g.target_size() for name, g in sim.state.groups.items()}
        self.mins = {name: g.min_size() for name, g in sim.state.groups.items()}
        live = [s.node for s in sim.state.nodes if s.readiness is not Readiness.NOT_STARTED]
        self.cores = sum(math.ceil(n.capacity.cpu / 1000) for n in live)
        self.memory = sum(n.capacity.memory for n in live)
        up = sim.options.scale_up
        self.min_cores = up.cores_total[0]
        self.min_memory = up.memory_total_gib[0] * 2**30

    def blocked(self, cand: Candidate) -> Unremovable | None:
        group = cand.group
        if self.sizes.get(group, 0) <= self.mins.get(group, 0):
            return Unremovable(cand.name, "NodeGroupMinSizeReached",
                               f"node group {group} at min size {self.mins.get(group, 0)}")
        node = cand.state.node
        if self.min_cores and self.cores - math.ceil(node.capacity.cpu / 1000) < self.min_cores:
            return Unremovable(cand.name, "MinimalResourceLimitExceeded", f"cluster min cores {self.min_cores}")
        if self.min_memory and self.memory - node.capacity.memory < self.min_memory:
            return Unremovable(cand.name, "MinimalResourceLimitExceeded",
                               f"cluster min memory {self.min_memory // 2**30}GiB")
        return None

    def take(self, cand: Candidate) -> None:
        self.sizes[cand.group] = self.sizes.get(cand.group, 0) - 1
        self.cores -= math.ceil(cand.state.node.capacity.cpu / 1000)
        self.memory -= cand.state.node.capacity.memory

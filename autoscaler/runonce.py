"""One autoscaling decision (upstream ``RunOnce``), shared by ``plan``, ``simulate`` and the live loop.

Scale-up first; if it scaled up, scale-down is skipped for this loop. The result is
frozen data; acting on it is the actuator's job.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass, field

import msgspec.structs

from autoscaler.clusterstate import Readiness
from autoscaler.config import Options
from autoscaler.context import ContextMemo, LoopContext, build_context
from autoscaler.scaledown.planner import plan_scale_down
from autoscaler.scaledown.types import ScaleDownMemory, ScaleDownPlan
from autoscaler.scaleup.orchestrator import ScaleUpPlan, ScaleUpResult, plan_scale_up
from autoscaler.templates import TemplateNode
from cloudproviders.interface import CloudProvider
from estimator.binpacking import BinpackingEstimator
from kube.model import ClusterObjects, Pod
from simulator.utilization import Utilization

__all__ = ["LoopDecision", "NodeReport", "run_once"]


@dataclass(frozen=True, slots=True)
class NodeReport:
    name: str
    group: str | None
    ready: bool
    readiness: Readiness
    utilization: Utilization


@dataclass(frozen=True, slots=True)
class LoopDecision:
    now: float
    scale_up: ScaleUpPlan
    scale_down: ScaleDownPlan
    nodes: list[NodeReport] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    #: Seconds spent per phase (for benchmarks and logs).
    timings: dict[str, float] = field(default_factory=dict)
    #: What the next loop's context may reuse (``run_once(previous=...)``); the caller keeps it.
    context_memo: ContextMemo | None = field(default=None, repr=False, compare=False)


def _reports(sim: LoopContext) -> list[NodeReport]:
    return [NodeReport(s.name, s.group, s.node.ready, s.readiness, sim.utilization(s)) for s in sim.state.nodes]


def _keep_placements(sim: LoopContext, scale_up: ScaleUpPlan) -> None:
    """Scale-down sees the pending pods filter-out-schedulable fitted onto nodes as running there.

    The snapshot already holds them; the per-node pod lists that drain rules and
    utilization read get them too, bound to their node (upstream CA plans scale-down
    on the same snapshot, so a node a pending pod was just fitted onto is not empty).
    """
    if not scale_up.placed:
        return
    # New lists for the nodes that received pods: the others are shared with the next
    # loop's context (ContextMemo) and must not change.
    fresh: dict[str, list[Pod]] = {}
    for pod, node in scale_up.placed:
        on = fresh.get(node)
        if on is None:
            on = fresh[node] = list(sim.pods_by_node.get(node, ()))
        on.append(msgspec.structs.replace(pod, node_name=node))
    sim.pods_by_node = {**sim.pods_by_node, **fresh}
    sim.placed = tuple(scale_up.placed)


def run_once(objects: ClusterObjects, provider: CloudProvider, options: Options, now: float, *,
             memory: ScaleDownMemory | None = None, steady_state: bool = False,
             template_cache: MutableMapping[str, TemplateNode] | None = None,
             backed_off: Mapping[str, str] | None = None, previous: ContextMemo | None = None) -> LoopDecision:
    """Decide what to do now. ``steady_state``: every unneeded node counts as unneeded long enough.

    ``memory`` is read, never written: the scale-down plan carries this loop's
    ``unneeded_since`` for the caller to keep. ``backed_off``: groups not to scale up now.
    ``previous``: the last loop's ``LoopDecision.context_memo`` (read only; see ``context.py``).
    Wall time is read only to report how long each phase took.
    """
    memory = memory if memory is not None else ScaleDownMemory()
    t0 = time.perf_counter()
    sim = build_context(objects, provider, options, now, template_cache, backed_off=backed_off, previous=previous)
    t1 = time.perf_counter()
    estimator = BinpackingEstimator(sim.checker, storage_aware=options.storage_aware,
                                    time_budget=options.scale_up.max_binpacking_seconds)
    scale_up = plan_scale_up(sim, estimator)
    _keep_placements(sim, scale_up)
    t2 = time.perf_counter()
    if scale_up.result is ScaleUpResult.SCALED_UP:
        scale_down = ScaleDownPlan.skipped("the loop scaled up", memory.unneeded_since, memory.last_pass)
    elif not options.scale_down.enabled:
        scale_down = ScaleDownPlan.skipped("scale-down is disabled (--scale-down-enabled=false)", memory.unneeded_since,
                                           memory.last_pass)
    else:
        scale_down = plan_scale_down(sim, memory, steady_state)
    t3 = time.perf_counter()
    reports = _reports(sim)
    t4 = time.perf_counter()
    warnings = list(objects.warnings)
    if scale_up.not_processed:
        warnings.append(f"{len(scale_up.not_processed)} pending pod(s) not yet marked unschedulable by the "
                        "scheduler were not considered (upstream CA waits for the scheduler's verdict)")
    if any(s.readiness is Readiness.NOT_STARTED and s.waiting_for_storage for s in sim.state.nodes):
        names = sorted(s.name for s in sim.state.nodes if s.waiting_for_storage)
        warnings.append("waiting for the storage driver on " + ", ".join(names[:10]) +
                        (" ..." if len(names) > 10 else "") + " (treated as upcoming)")
    warnings.extend(scale_up.notes)
    return LoopDecision(now, scale_up, scale_down, reports, warnings,
                        {"snapshot": t1 - t0, "scaleUp": t2 - t1, "scaleDown": t3 - t2, "report": t4 - t3},
                        sim.memo())

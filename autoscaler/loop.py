"""The autoscaler's main loop: read the cluster, decide, act. Live and simulated alike.

``Autoscaler.run_once(now)`` is one iteration:

1. advance ongoing drains (the actuator reports what happened);
2. refresh the cloud, list the cluster;
3. review requested instances (``provisioning``): lower the target by instances that
   failed or did not register within ``--max-node-provision-time``, back their group
   off;
4. run the shared decision code (``runonce.run_once``) with the backed-off groups
   left out of scale-up, so the next-best group is chosen meanwhile;
5. act: raise group targets (transient cloud errors retried; a stock-out or a
   quota backs the group off), hand chosen nodes to the actuator.

The loop is the only writer of what is remembered between iterations, and it
remembers only what the next decision needs, so its memory stays flat however long
it runs: the scale-down memory (replaced from the plan and the actuator's status, with the last
removal pass and the unpin throughput of the last drains, ``scaledown/throughput.py``), the
backoff, the provisioning state, cached templates, the context's memo. What an iteration
did (scale events, actuation events) is handed to the caller in its ``LoopRecord`` and
not kept (``records.History`` collects it for a bounded run). Planners and the actuator
report; they never write the memory. Time is injected; the wall clock only measures how
long a loop took.
If the cluster or the cloud cannot be read (``ViewUnavailable``, ``CloudError`` from
``refresh``), the error propagates and the caller skips the iteration.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import time
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass, field

from autoscaler.actuation.actuator import Actuator
from autoscaler.actuation.scaleup import increase_size
from autoscaler.actuation.types import ActuationStatus
from autoscaler.backoff import GroupBackoff
from autoscaler.config import Options
from autoscaler.context import ContextMemo
from autoscaler.groupconfig import group_config
from autoscaler.provisioning import ProvisioningReview, ProvisioningState, review_provisioning
from autoscaler.records import EventKind, History, LoopRecord, ScaleEvent
from autoscaler.runonce import LoopDecision, run_once
from autoscaler.scaledown.types import ScaleDownMemory
from autoscaler.scaleup.types import ScaleUpResult
from autoscaler.templates import TemplateNode
from cloudproviders.interface import (
    CloudError,
    CloudProvider,
    InstanceErrorClass,
    InsufficientCapacity,
    NodeGroup,
    QuotaExceeded,
)
from kube.clusterapi import ClusterAPI, ClusterAPIError
from kube.names import CA_TO_BE_DELETED_TAINT

__all__ = ["Autoscaler", "EventKind", "History", "LoopRecord", "ScaleEvent"]

log = logging.getLogger(__name__)


def _error_class(exc: CloudError) -> InstanceErrorClass:
    if isinstance(exc, QuotaExceeded):
        return InstanceErrorClass.QUOTA
    if isinstance(exc, InsufficientCapacity):
        return InstanceErrorClass.OUT_OF_CAPACITY
    return InstanceErrorClass.OTHER


@dataclass(slots=True)
class Autoscaler:
    cluster: ClusterAPI
    provider: CloudProvider
    options: Options
    executor: Executor | None = None
    wall_clock: Callable[[], float] = time.perf_counter
    #: Waits between retries of transient cloud errors; a simulated run passes one that returns at once.
    sleep: Callable[[float], None] = time.sleep
    memory: ScaleDownMemory = field(default_factory=ScaleDownMemory)
    provisioning: ProvisioningState = field(default_factory=ProvisioningState)
    template_cache: dict[str, TemplateNode] = field(default_factory=dict)
    actuator: Actuator = field(init=False)
    backoff: GroupBackoff = field(init=False)
    loops: int = 0
    #: Keep the last scale-down pass and context for the next loop to reuse while their inputs
    #: are unchanged (``scaledown/reuse.py``, ``context.py``); False recomputes every loop.
    incremental: bool = True
    #: What the last loop's context derived that this one may reuse (``autoscaler/context.py``).
    context_memo: ContextMemo | None = None

    def __post_init__(self) -> None:
        self.actuator = Actuator(self.cluster, self.provider, self.options, self.executor)
        up = self.options.scale_up
        self.backoff = GroupBackoff(up.initial_backoff_seconds, up.max_backoff_seconds, up.backoff_reset_seconds)

    def run_once(self, now: float) -> LoopRecord:
        started = self.wall_clock()
        self.loops += 1
        status = self.actuator.tick(now)
        self.provider.refresh()
        objects = self.cluster.list_objects()
        if self.loops == 1:
            stale = [n.name for n in objects.nodes if n.has_taint(CA_TO_BE_DELETED_TAINT)]
            if stale:
                status = status.then(self.actuator.cleanup_stale_taints(stale, now))
                objects = self.cluster.list_objects()
        new_events: list[ScaleEvent] = []
        registered = {n.provider_id for n in objects.nodes if n.provider_id}
        review = review_provisioning(self.provider.node_groups(), registered, self.provisioning, now,
                                     self._provision_limit)
        self._act_on_review(review, now, new_events)
        self._remember(status, now)
        self.backoff.forget_stale(now)
        decision = run_once(objects, self.provider, self.options, now, memory=self.memory,
                            template_cache=self.template_cache, backed_off=self.backoff.backed_off(now),
                            previous=self.context_memo)
        self.context_memo = decision.context_memo if self.incremental else None
        self.memory = dataclasses.replace(self.memory, unneeded_since=decision.scale_down.unneeded_since,
                                          last_pass=decision.scale_down.last_pass if self.incremental else None)
        if decision.scale_up.result is ScaleUpResult.SCALED_UP:
            self._scale_up(decision, now, new_events)
        to_delete = decision.scale_down.to_delete
        if to_delete:
            begun = self.actuator.start(to_delete, now)
            self._remember(begun, now)
            status = status.then(begun)
            for name in begun.started:
                cand = next(c for c in to_delete if c.node == name)
                why = "empty" if cand.empty else f"{len(cand.drain.to_move)} pod(s) to move"
                new_events.append(ScaleEvent(now, EventKind.SCALE_DOWN_STARTED, cand.group, 1,
                                             f"{name}: unneeded, {why}"))
        # The status ConfigMap is informational; the next loop writes it again.
        with contextlib.suppress(ClusterAPIError):
            self.cluster.write_status(self._status(decision))
        wall = self.wall_clock() - started
        self._log(decision, status, new_events, now, wall)
        return LoopRecord(decision, wall, tuple(new_events), status)

    # --- between-loop memory (only written here) ------------------------------------------

    def _remember(self, status: ActuationStatus, now: float) -> None:
        memory = dataclasses.replace(self.memory, deletions_in_progress=status.in_progress)
        if status.drains:
            floor = self.options.scale_down.max_pod_eviction_seconds
            throughput = memory.unpin_throughput
            for drain in status.drains:
                throughput = throughput.observed(drain, floor)
            memory = dataclasses.replace(memory, unpin_throughput=throughput)
            if throughput.estimate is not None:
                self.actuator.slower_unpin(throughput.estimate)
        if status.deleted:
            memory = dataclasses.replace(memory, last_scale_down=now)
        if status.failed:
            memory = dataclasses.replace(memory, last_failure=now)
        if status.failed or status.deleted:
            failures = {n: k for n, k in memory.drain_failures.items() if n not in status.deleted}
            for node in status.failed:
                failures[node] = failures.get(node, 0) + 1
            memory = dataclasses.replace(memory, drain_failures=failures)
        self.memory = memory

    def _provision_limit(self, group: NodeGroup) -> float:
        return group_config(group, self.options).max_node_provision_seconds

    # --- scale-up ----------------------------------------------------------------------------

    def _group(self, name: str) -> NodeGroup | None:
        return next((g for g in self.provider.node_groups() if g.name == name), None)

    def _act_on_review(self, review: ProvisioningReview, now: float, out: list[ScaleEvent]) -> None:
        self.provisioning = review.state
        gave_up = [(f.group, f.ids, f.error.error_class, f"{f.error.code}: {f.error.message}",
                    EventKind.SCALE_UP_FAILED) for f in review.failed]
        gave_up += [(t.group, t.ids, InstanceErrorClass.OTHER,
                     f"timeout: not registered within --max-node-provision-time ({t.limit:g}s)",
                     EventKind.SCALE_UP_TIMED_OUT) for t in review.timed_out]
        for group_name, ids, error_class, message, kind in gave_up:
            group = self._group(group_name)
            detail = f"{len(ids)} instance(s): {message}"
            if group is not None:
                try:
                    group.decrease_target_size(-len(ids))
                except CloudError as exc:
                    # Still backed off; the instances are looked at again next loop.
                    detail += f"; the target could not be lowered: {exc}"
            entry = self.backoff.fail(group_name, error_class, message, now)
            out.append(ScaleEvent(now, kind, group_name, len(ids),
                                  f"{detail}; backed off for {entry.duration:g}s"))

    def _scale_up(self, decision: LoopDecision, now: float, out: list[ScaleEvent]) -> None:
        up = decision.scale_up
        pods = f"{len(up.triggered_by)} pod(s): " + ", ".join(p.ref for p in up.triggered_by[:5])
        for inc in up.increases:
            group = self._group(inc.group)
            try:
                if group is None:
                    raise CloudError(f"node group {inc.group} no longer exists")
                increase_size(group, inc.delta, self.sleep)
            except CloudError as exc:
                entry = self.backoff.fail(inc.group, _error_class(exc), str(exc), now)
                out.append(ScaleEvent(now, EventKind.SCALE_UP_FAILED, inc.group, inc.delta,
                                      f"{exc}; backed off for {entry.duration:g}s"))
                continue
            self.provisioning = self.provisioning.requested(inc.group, now)
            self.memory = dataclasses.replace(self.memory, last_scale_up=now)
            out.append(ScaleEvent(now, EventKind.SCALE_UP, inc.group, inc.delta, pods))

    # --- reporting ----------------------------------------------------------------------------

    def _status(self, decision: LoopDecision) -> str:
        up, down = decision.scale_up, decision.scale_down
        return (f"scaleUp: {up.result}; scaleDown: {down.result}; unneeded: {len(down.unneeded)}; "
                f"deletionsInProgress: {len(self.actuator.tasks)}")

    def _log(self, decision: LoopDecision, status: ActuationStatus, events: list[ScaleEvent], now: float,
             wall: float) -> None:
        """One line per loop, its fields also as ``extra`` for structured handlers."""
        if not log.isEnabledFor(logging.INFO):
            return
        up, down = decision.scale_up, decision.scale_down
        fields = {
            "loop": self.loops,
            "now": now,
            "scale_up": up.result.value,
            "increases": ",".join(f"{i.group}+{i.delta}" for i in up.increases) or "-",
            "scale_down": down.result.value,
            "unneeded": len(down.unneeded),
            "deleting": len(status.in_progress),
            "backed_off": ",".join(self.backoff.backed_off(now)) or "-",
            "events": len(events) + len(status.events),
            "wall_ms": round(wall * 1000, 2),
        }
        log.info(" ".join(f"{k}={v}" for k, v in fields.items()), extra={"autoscaler": fields})

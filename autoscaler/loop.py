"""The autoscaler's main loop: read the cluster, decide, act. Live and simulated alike.

``Autoscaler.run_once(now)`` is one iteration: advance ongoing drains, list the
cluster, run the shared decision code (``runonce.run_once``), then act: raise node
group targets for a scale-up, hand chosen nodes to the actuator for a scale-down.
It keeps what upstream keeps between loops: unneeded-since times, cooldown clocks,
cached templates. Time is injected; nothing here reads the wall clock for decisions.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass, field

from autoscaler.actuation.actuator import Actuator
from autoscaler.config import Options
from autoscaler.runonce import LoopDecision, run_once
from autoscaler.scaledown.types import ScaleDownMemory
from autoscaler.templates import TemplateNode
from cloudproviders.interface import CloudError, CloudProvider
from kube.clusterapi import ClusterAPI, ClusterAPIError
from kube.names import CA_TO_BE_DELETED_TAINT

__all__ = ["Autoscaler", "LoopRecord", "ScaleEvent"]


@dataclass(frozen=True, slots=True)
class ScaleEvent:
    time: float
    kind: str  # ScaleUp, ScaleUpFailed, ScaleDownStarted
    group: str
    nodes: int
    detail: str


@dataclass(frozen=True, slots=True)
class LoopRecord:
    decision: LoopDecision
    #: Wall seconds the iteration took (decision and actuation).
    wall_seconds: float
    events: tuple[ScaleEvent, ...]


@dataclass(slots=True)
class Autoscaler:
    cluster: ClusterAPI
    provider: CloudProvider
    options: Options
    executor: Executor | None = None
    wall_clock: Callable[[], float] = time.perf_counter
    memory: ScaleDownMemory = field(default_factory=ScaleDownMemory)
    template_cache: dict[str, TemplateNode] = field(default_factory=dict)
    actuator: Actuator = field(init=False)
    events: list[ScaleEvent] = field(default_factory=list)
    _first: bool = True

    def __post_init__(self) -> None:
        self.actuator = Actuator(self.cluster, self.provider, self.options, self.executor,
                                 on_deleted=self._deleted, on_failed=self._failed)

    def _deleted(self, node: str, now: float) -> None:
        self.memory.last_scale_down = now

    def _failed(self, node: str, now: float) -> None:
        self.memory.last_failure = now

    def run_once(self, now: float) -> LoopRecord:
        started = self.wall_clock()
        self.actuator.tick(now)
        objects = self.cluster.list_objects()
        if self._first:
            self._first = False
            stale = [n.name for n in objects.nodes if n.has_taint(CA_TO_BE_DELETED_TAINT)]
            if stale:
                self.actuator.cleanup_stale_taints(stale, now)
                objects = self.cluster.list_objects()
        self.memory.deletions_in_progress = self.actuator.in_progress
        decision = run_once(objects, self.provider, self.options, now, memory=self.memory,
                            template_cache=self.template_cache)
        new_events: list[ScaleEvent] = []
        up = decision.scale_up
        if up.result == "ScaledUp":
            groups = {g.name: g for g in self.provider.node_groups()}
            for inc in up.increases:
                detail = f"{len(up.triggered_by)} pod(s): " + ", ".join(p.ref for p in up.triggered_by[:5])
                try:
                    groups[inc.group].increase_size(inc.delta)
                except CloudError as exc:
                    new_events.append(ScaleEvent(now, "ScaleUpFailed", inc.group, inc.delta, str(exc)))
                    continue
                self.memory.last_scale_up = now
                new_events.append(ScaleEvent(now, "ScaleUp", inc.group, inc.delta, detail))
        to_delete = decision.scale_down.to_delete
        if to_delete:
            for node in self.actuator.start(to_delete, now):
                cand = next(c for c in to_delete if c.node == node)
                why = "empty" if cand.empty else f"{len(cand.drain.to_move)} pod(s) to move"
                new_events.append(ScaleEvent(now, "ScaleDownStarted", cand.group, 1, f"{node}: unneeded, {why}"))
        self.events.extend(new_events)
        # The status ConfigMap is informational; the next loop writes it again.
        with contextlib.suppress(ClusterAPIError):
            self.cluster.write_status(self._status(decision))
        return LoopRecord(decision, self.wall_clock() - started, tuple(new_events))

    def _status(self, decision: LoopDecision) -> str:
        up, down = decision.scale_up, decision.scale_down
        return (f"scaleUp: {up.result}; scaleDown: {down.result}; unneeded: {len(down.unneeded)}; "
                f"deletionsInProgress: {len(self.actuator.tasks)}")

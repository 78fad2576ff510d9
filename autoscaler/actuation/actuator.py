"""Acting on scale-down decisions: taint, drain, delete, and roll back on failure.

A deletion is a small state machine advanced by ``tick(now)``, so the same code runs
under the live loop's clock and under simulated time:

1. ``start``: taint the node ``ToBeDeletedByClusterAutoscaler:NoSchedule`` so nothing
   new lands on it (and so the storage driver starts unpinning its volumes).
2. Every tick: evict each remaining pod through the Eviction API, all of a node's
   pods in the same tick (in parallel when an executor is given). A refusal (a PDB,
   e.g. the storage guard's, which lasts until the driver has unpinned the node's
   volumes) is retried on the next tick, for up to ``--max-pod-eviction-time``.
3. When every pod is gone, delete the node through its node group.
4. If the time runs out or the cloud refuses, remove the taint again (roll back) and
   report the failure, which starts ``--scale-down-delay-after-failure``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field

from autoscaler.config import Options
from autoscaler.scaledown.types import RemovalCandidate
from cloudproviders.interface import CloudError, CloudProvider, NodeGroup
from kube.clusterapi import ClusterAPI, ClusterAPIError, Eviction
from kube.model import Pod, Taint
from kube.names import CA_TO_BE_DELETED_TAINT

__all__ = ["ActuationEvent", "Actuator", "DeletionTask"]


@dataclass(slots=True)
class DeletionTask:
    node: str
    group: str
    started: float
    deadline: float
    #: (namespace, name) of pods still to evict.
    remaining: list[tuple[str, str]]
    refusals: int = 0
    last_refusal: str = ""


@dataclass(frozen=True, slots=True)
class ActuationEvent:
    """Something the actuator did or gave up on (for events, metrics and reports)."""

    time: float
    node: str
    kind: str  # Tainted, Evicted, Deleted, Failed
    message: str = ""


@dataclass(slots=True)
class Actuator:
    cluster: ClusterAPI
    provider: CloudProvider
    options: Options
    #: Runs the evictions of one tick concurrently (live loop); None: one after another.
    executor: Executor | None = None
    tasks: dict[str, DeletionTask] = field(default_factory=dict)
    history: list[ActuationEvent] = field(default_factory=list)
    on_deleted: Callable[[str, float], None] | None = None
    on_failed: Callable[[str, float], None] | None = None

    @property
    def in_progress(self) -> set[str]:
        return set(self.tasks)

    def _group(self, name: str) -> NodeGroup | None:
        return next((g for g in self.provider.node_groups() if g.name == name), None)

    def _event(self, now: float, node: str, kind: str, message: str = "", warning: bool = False) -> None:
        self.history.append(ActuationEvent(now, node, kind, message))
        # Events are best effort; the history above keeps the record.
        with contextlib.suppress(ClusterAPIError):
            self.cluster.record_event("Node", "", node, f"ScaleDown{kind}", message or kind, warning=warning)

    def start(self, candidates: Sequence[RemovalCandidate], now: float) -> list[str]:
        """Taint and begin draining; returns the nodes whose deletion started."""
        started = []
        taint = Taint(CA_TO_BE_DELETED_TAINT, str(int(now)), "NoSchedule")
        for cand in candidates:
            if cand.node in self.tasks:
                continue
            try:
                self.cluster.taint_node(cand.node, taint)
            except ClusterAPIError as exc:
                self._event(now, cand.node, "Failed", f"cannot taint: {exc}", warning=True)
                if self.on_failed is not None:
                    self.on_failed(cand.node, now)
                continue
            pods: list[Pod] = [*cand.drain.to_move, *cand.drain.guards]
            self.tasks[cand.node] = DeletionTask(
                cand.node, cand.group, now, now + self.options.scale_down.max_pod_eviction_seconds,
                [(p.namespace, p.name) for p in pods])
            self._event(now, cand.node, "Tainted", f"draining {len(pods)} pod(s)")
            started.append(cand.node)
        self.tick(now)
        return started

    def _evict(self, task: DeletionTask, now: float) -> None:
        def one(ref: tuple[str, str]) -> tuple[tuple[str, str], bool, str]:
            try:
                result = self.cluster.evict_pod(*ref)
            except ClusterAPIError as exc:
                return ref, False, str(exc)
            return ref, result.outcome is not Eviction.REFUSED, result.message

        refs = list(task.remaining)
        results = list(self.executor.map(one, refs)) if self.executor is not None else [one(r) for r in refs]
        still = []
        for ref, done, message in results:
            if done:
                self.history.append(ActuationEvent(now, task.node, "Evicted", f"{ref[0]}/{ref[1]}"))
            else:
                still.append(ref)
                task.refusals += 1
                task.last_refusal = f"{ref[0]}/{ref[1]}: {message}" if message else f"{ref[0]}/{ref[1]}"
        task.remaining = still

    def _rollback(self, task: DeletionTask, now: float, why: str) -> None:
        del self.tasks[task.node]
        try:
            self.cluster.untaint_node(task.node, CA_TO_BE_DELETED_TAINT)
        except ClusterAPIError as exc:
            why += f"; the taint could not be removed ({exc}), it will be retried next loop"
        self._event(now, task.node, "Failed", why, warning=True)
        if self.on_failed is not None:
            self.on_failed(task.node, now)

    def tick(self, now: float) -> None:
        """Advance every deletion: evict, delete when drained, roll back when out of time."""
        for task in list(self.tasks.values()):
            if task.remaining:
                self._evict(task, now)
            if task.remaining:
                if now >= task.deadline:
                    self._rollback(task, now, f"pods not evicted within --max-pod-eviction-time: {task.last_refusal}")
                continue
            group = self._group(task.group)
            try:
                if group is None:
                    raise CloudError(f"node group {task.group} no longer exists")
                node = next((n for n in self.cluster.list_objects().nodes if n.name == task.node), None)
                if node is None:
                    raise CloudError(f"node {task.node} no longer exists")
                group.delete_nodes([node])
            except CloudError as exc:
                self._rollback(task, now, f"cloud provider refused to delete the node: {exc}")
                continue
            del self.tasks[task.node]
            self._event(now, task.node, "Deleted", f"removed from {task.group}")
            if self.on_deleted is not None:
                self.on_deleted(task.node, now)

    def cleanup_stale_taints(self, tainted: Sequence[str], now: float) -> None:
        """Remove our taint from nodes no task owns (a restart or a lost rollback), as upstream does."""
        for node in tainted:
            if node not in self.tasks:
                try:
                    self.cluster.untaint_node(node, CA_TO_BE_DELETED_TAINT)
                except ClusterAPIError:
                    continue
                self._event(now, node, "Untainted", "stale ToBeDeleted taint removed")

"""Acting on scale-down decisions: taint, drain, wait for the pods to go, re-check, delete.

A deletion is a small state machine advanced once per loop, so the same code runs
under the live loop's clock and under simulated time (upstream
``core/scaledown/actuation``: ``drain.go`` and ``actuator.go``):

1. ``start``: taint the node ``ToBeDeletedByClusterAutoscaler:NoSchedule`` so nothing
   new lands on it (and so the storage driver starts unpinning its volumes).
2. Evict every pod still to go through the Eviction API, all of a node's pods in
   the same step (in parallel when an executor is given), each with its own grace
   period capped by ``--max-graceful-termination-sec``. ``Refused`` (a PDB, e.g. the
   storage guard's, which holds until the driver has unpinned the node's volumes) and
   transient API errors are retried next loop, for up to ``--max-pod-eviction-time``;
   ``Gone`` needs no wait.
3. Wait until the evicted pods are gone from the node (``pods_on_node``), for at most
   their grace period plus upstream's 30 s ``PodEvictionHeadroom``; pods still there
   after that fail the drain, as upstream's ``waitPodsToDisappear`` does.
4. Wait until the node's VolumeAttachments are gone (``detach.py``), for at most
   ``--max-volume-detach-time`` (0: no wait); past it, delete anyway and say which
   were still there (a warning log line and a ``ScaleDownVolumesNotDetached`` event).
5. Take the last look (``recheck.removal_blocker``): a node that changed is rolled
   back; one whose migratable local volumes are still pinned (the storage driver has
   not unpinned them, with or without a guard pod) waits, tainted, up to its drain
   deadline, then is rolled back (storage-semantics 3.7); otherwise delete it
   through its node group. Every deletion, empty, drained or unready, passes here.
   A drain with bytes to unpin that ends here (unpinned, or given up with them still
   pinned) is reported with how long it ran, for the loop's estimate of the unpin
   throughput (``scaledown/throughput.py``).
6. On any failure, remove the taint again (roll back). An untaint that fails is
   retried every loop until it succeeds or the node is gone, so no node is left
   cordoned by a deletion nobody tracks.

Every step returns a frozen ``ActuationStatus``; the loop, not the actuator, turns it
into what is remembered between loops (cooldowns, deletions in progress).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field

from autoscaler.actuation.detach import attachments_to_wait_for
from autoscaler.actuation.recheck import (
    Blocked,
    Removable,
    RemovalView,
    StillPinned,
    removal_blocker,
    removal_view,
)
from autoscaler.actuation.types import ActuationEvent, ActuationKind, ActuationStatus
from autoscaler.config import Options
from autoscaler.scaledown.cost import drain_deadline
from autoscaler.scaledown.throughput import DrainObservation
from autoscaler.scaledown.types import RemovalCandidate
from cloudproviders.interface import CloudError, CloudProvider
from kube.clusterapi import ClusterAPI, ClusterAPIError, Eviction, EvictionResult, NotFound
from kube.model import ClusterObjects, Taint
from kube.names import CA_TO_BE_DELETED_TAINT

__all__ = ["POD_EVICTION_HEADROOM", "Actuator", "DeletionTask"]

#: Upstream's ``PodEvictionHeadroom``: time past the grace period for the kubelet to finish.
POD_EVICTION_HEADROOM = 30.0

PodKey = tuple[str, str]

log = logging.getLogger(__name__)


@dataclass(slots=True)
class DeletionTask:
    node: str
    group: str
    started: float
    #: Refused evictions are retried, and pinned volumes waited for, until then: the drain deadline
    #: (``--max-pod-eviction-time``, longer for nodes with many bytes to unpin: ``scaledown/cost.py``).
    eviction_deadline: float
    #: Pods still to evict -> the grace period to ask for (s).
    to_evict: dict[PodKey, int]
    #: Evicted pods still on the node -> when they must be gone (grace + headroom after eviction).
    terminating: dict[PodKey, float] = field(default_factory=dict)
    refusals: int = 0
    last_refusal: str = ""
    #: The plan found no pod to move: the node must still be empty at the last look.
    planned_empty: bool = False
    #: The pods the drain evicts (their volumes are waited for; those of pods that stay are not).
    drained: frozenset[PodKey] = frozenset()
    #: When the wait for VolumeAttachments ends (``--max-volume-detach-time``); None: not begun.
    detach_deadline: float | None = None
    #: The wait is over (none left, or given up): not looked at again.
    detach_done: bool = False
    #: Bytes of migratable local volumes the drain unpins (the plan's count), and their predicted unpin time (s).
    unpin_bytes: int = 0
    unpin_seconds: float = 0.0
    #: The storage guard pods among ``to_evict``: one still refused means the volumes are still pinned.
    guards: frozenset[PodKey] = frozenset()
    #: When the last guard was evicted: its budget goes once the driver has unpinned the node's
    #: volumes, so that is when the unpin ended (the detach wait and the last look come later).
    guards_gone_at: float | None = None


@dataclass(slots=True)
class _Step:
    """Events collected during one actuator step."""

    now: float
    events: list[ActuationEvent] = field(default_factory=list)
    #: The cluster as the last look before deleting sees it: read once per step, when first needed.
    view: RemovalView | None = None
    #: The objects ``view`` and the detach wait read, listed once per step.
    objects: ClusterObjects | None = None
    #: Drains with bytes to unpin that ended in this step (``scaledown/throughput.py``).
    drains: list[DrainObservation] = field(default_factory=list)


@dataclass(slots=True)
class Actuator:
    cluster: ClusterAPI
    provider: CloudProvider
    options: Options
    #: Runs the evictions of one step concurrently (live loop); None: one after another.
    executor: Executor | None = None
    tasks: dict[str, DeletionTask] = field(default_factory=dict)
    #: Nodes whose rollback could not remove our taint yet; retried every step.
    untaint_pending: set[str] = field(default_factory=set)

    def _event(self, step: _Step, node: str, kind: ActuationKind, message: str = "", warning: bool = False) -> None:
        step.events.append(ActuationEvent(step.now, node, kind, message))
        # Kubernetes Events are best effort; the status returned to the loop keeps the record.
        with contextlib.suppress(ClusterAPIError):
            self.cluster.record_event("Node", "", node, f"ScaleDown{kind.value}", message or kind.value,
                                      warning=warning)

    def _deadline(self, task: DeletionTask) -> str:
        """The drain deadline in a failure message: the flag, or the longer one its bytes to unpin gave it."""
        seconds = task.eviction_deadline - task.started
        if seconds <= self.options.scale_down.max_pod_eviction_seconds:
            return "--max-pod-eviction-time"
        return f"the drain deadline ({seconds:g}s, from the bytes to unpin over the unpin throughput)"

    def _status(self, step: _Step, started: Sequence[str] = ()) -> ActuationStatus:
        in_flight = sum(t.unpin_bytes for t in self.tasks.values())
        return ActuationStatus(tuple(step.events), frozenset(self.tasks), tuple(started), tuple(step.drains),
                               in_flight)

    def _observe(self, task: DeletionTask, step: _Step, *, unpinned: bool) -> None:
        """Report how long the drain of ``task``'s bytes took, or ran before it was given up with them pinned."""
        if task.unpin_bytes > 0:
            ended = task.guards_gone_at if unpinned and task.guards_gone_at is not None else step.now
            step.drains.append(DrainObservation(task.node, task.unpin_bytes, ended - task.started, unpinned))

    # --- the loop's entry points -----------------------------------------------------------

    def tick(self, now: float) -> ActuationStatus:
        """Advance every deletion in progress and retry failed untaints."""
        step = _Step(now)
        self._retry_untaints(step)
        for task in list(self.tasks.values()):
            self._advance(task, step)
        return self._status(step)

    def start(self, candidates: Sequence[RemovalCandidate], now: float) -> ActuationStatus:
        """Taint and begin draining each candidate no task owns yet; advances only those."""
        step = _Step(now)
        started: list[str] = []
        taint = Taint(CA_TO_BE_DELETED_TAINT, str(int(now)), "NoSchedule")
        cap = self.options.scale_down.max_graceful_termination_seconds
        for cand in candidates:
            if cand.node in self.tasks:
                continue
            try:
                self.cluster.taint_node(cand.node, taint)
            except ClusterAPIError as exc:
                self._event(step, cand.node, ActuationKind.FAILED, f"cannot taint: {exc}", warning=True)
                continue
            pods = [*cand.drain.to_move, *cand.drain.guards]
            self.untaint_pending.discard(cand.node)
            # The drain deadline follows the bytes to unpin (scaledown/cost.py), at least --max-pod-eviction-time.
            drain = cand.drain_seconds if cand.drain_seconds is not None else \
                self.options.scale_down.max_pod_eviction_seconds
            to_evict = {(p.namespace, p.name): min(p.grace_seconds, cap) for p in pods}
            self.tasks[cand.node] = DeletionTask(
                cand.node, cand.group, now, now + drain,
                to_evict, planned_empty=cand.empty, drained=frozenset(to_evict), unpin_bytes=cand.unpin_bytes,
                unpin_seconds=cand.unpin_seconds, guards=frozenset((p.namespace, p.name) for p in cand.drain.guards))
            self._event(step, cand.node, ActuationKind.TAINTED, f"draining {len(pods)} pod(s)")
            started.append(cand.node)
        for name in started:
            self._advance(self.tasks[name], step)
        return self._status(step, started)

    def slower_unpin(self, bytes_per_second: float) -> None:
        """Earlier drains showed unpinning is slower: drains under way get the longer deadline that gives.

        A deadline is only ever extended, never shortened: a drain started under a faster
        estimate would otherwise fail for want of time the observation says it needs.
        """
        for task in self.tasks.values():
            if task.unpin_bytes <= 0:
                continue
            task.unpin_seconds = max(task.unpin_seconds, task.unpin_bytes / bytes_per_second)
            longer = task.started + drain_deadline(task.unpin_bytes, self.options, bytes_per_second=bytes_per_second)
            task.eviction_deadline = max(task.eviction_deadline, longer)

    def cleanup_stale_taints(self, tainted: Sequence[str], now: float) -> ActuationStatus:
        """Remove our taint from nodes no task owns (a restart or a lost rollback), as upstream does."""
        step = _Step(now)
        for node in tainted:
            if node in self.tasks:
                continue
            try:
                self.cluster.untaint_node(node, CA_TO_BE_DELETED_TAINT)
            except ClusterAPIError:
                self.untaint_pending.add(node)
                continue
            self._event(step, node, ActuationKind.UNTAINTED, "stale ToBeDeleted taint removed")
        return self._status(step)

    # --- one deletion ------------------------------------------------------------------------

    def _advance(self, task: DeletionTask, step: _Step) -> None:
        now = step.now
        if task.to_evict:
            self._evict(task, step)
        if task.to_evict:
            if now >= task.eviction_deadline:
                if task.guards & task.to_evict.keys():
                    self._observe(task, step, unpinned=False)  # the guard holds until the volumes are unpinned
                self._rollback(task, step, f"pods not evicted within {self._deadline(task)}: {task.last_refusal}")
            return
        if task.terminating:
            try:
                still = {(p.namespace, p.name) for p in self.cluster.pods_on_node(task.node)}
            except ClusterAPIError as exc:
                # Cannot see the node's pods now: look again next loop, never guess; but
                # not past the time the pods had to be gone by.
                if now >= max(task.terminating.values()):
                    self._rollback(task, step, f"cannot tell whether the evicted pods are gone: {exc}")
                return
            task.terminating = {k: t for k, t in task.terminating.items() if k in still}
            if task.terminating:
                if now >= max(task.terminating.values()):
                    left = ", ".join(f"{ns}/{name}" for ns, name in sorted(task.terminating))
                    self._rollback(task, step, f"pods remaining after their grace period: {left}")
                return
        if not self._volumes_detached(task, step):
            return
        checked = self._last_look(task, step)
        if checked is None:
            return
        try:
            checked.group.delete_nodes([checked.node])
        except CloudError as exc:
            self._rollback(task, step, f"cloud provider refused to delete the node: {exc}")
            return
        del self.tasks[task.node]
        self._event(step, task.node, ActuationKind.DELETED, f"removed from {task.group}")

    def _last_look(self, task: DeletionTask, step: _Step) -> Removable | None:
        """The node and its group when it may be deleted now; None when it waits or was rolled back.

        Volumes the storage driver has not unpinned yet (storage-semantics 3.7) make the
        node wait, still tainted, up to its drain deadline (``eviction_deadline``, the
        same one a guard pod's refused eviction waits for); then the deletion is given
        up and the taint removed. A view that cannot be read is never guessed at: the
        node waits for one that can.
        """
        try:
            if step.view is None:
                step.view = removal_view(self._objects(step), self.options)
            checked = removal_blocker(step.view, task.node, task.group, self.provider, empty=task.planned_empty)
        except ClusterAPIError:
            return None  # no complete view now: decide next step
        if isinstance(checked, Blocked):
            self._rollback(task, step, f"no longer removable: {checked.why}")
            return None
        if isinstance(checked, StillPinned):
            if step.now >= task.eviction_deadline:
                self._observe(task, step, unpinned=False)
                self._rollback(task, step, f"not deleted within {self._deadline(task)}: {checked.why}")
            return None
        self._observe(task, step, unpinned=True)
        return checked

    def _objects(self, step: _Step) -> ClusterObjects:
        if step.objects is None:
            step.objects = self.cluster.list_objects()
        return step.objects

    def _volumes_detached(self, task: DeletionTask, step: _Step) -> bool:
        """True once no VolumeAttachment worth waiting for is left on the node, or the wait is over."""
        limit = self.options.scale_down.max_volume_detach_seconds
        if task.detach_done or limit <= 0:
            return True
        try:
            left = attachments_to_wait_for(self._objects(step), task.node, task.drained)
        except ClusterAPIError:
            return False  # no complete view now: look again next loop
        if not left:
            task.detach_done = True
            return True
        names = ", ".join(left)
        if task.detach_deadline is None:
            task.detach_deadline = step.now + limit
            self._event(step, task.node, ActuationKind.WAITING_FOR_DETACH,
                        f"waiting up to {limit:g}s for {len(left)} VolumeAttachment(s) to go: {names}")
            return False
        if step.now < task.detach_deadline:
            return False
        task.detach_done = True
        message = (f"{len(left)} VolumeAttachment(s) still on the node after --max-volume-detach-time "
                   f"({limit:g}s), deleting it anyway: {names}")
        log.warning("node %s: %s", task.node, message)
        self._event(step, task.node, ActuationKind.VOLUMES_NOT_DETACHED, message, warning=True)
        return True

    def _evict(self, task: DeletionTask, step: _Step) -> None:
        def one(item: tuple[PodKey, int]) -> tuple[PodKey, EvictionResult | ClusterAPIError]:
            (namespace, name), grace = item
            try:
                return (namespace, name), self.cluster.evict_pod(namespace, name, grace)
            except NotFound:
                return (namespace, name), EvictionResult(Eviction.GONE, "not found")
            except ClusterAPIError as exc:
                return (namespace, name), exc

        items = sorted(task.to_evict.items())
        results = list(self.executor.map(one, items)) if self.executor is not None else [one(i) for i in items]
        for key, result in results:
            ref = f"{key[0]}/{key[1]}"
            if isinstance(result, ClusterAPIError) or result.outcome is Eviction.REFUSED:
                # A PDB said no, or the API did not answer: both are worth another try.
                message = str(result) if isinstance(result, ClusterAPIError) else result.message
                task.refusals += 1
                task.last_refusal = f"{ref}: {message}" if message else ref
                continue
            grace = task.to_evict.pop(key)
            if key in task.guards and not task.guards & task.to_evict.keys():
                task.guards_gone_at = step.now
            if result.outcome is Eviction.EVICTED:
                task.terminating[key] = step.now + grace + POD_EVICTION_HEADROOM
            step.events.append(ActuationEvent(step.now, task.node, ActuationKind.EVICTED, ref))

    def _rollback(self, task: DeletionTask, step: _Step, why: str) -> None:
        del self.tasks[task.node]
        if not self._untaint(task.node):
            why += "; the taint could not be removed, it will be retried next loop"
        self._event(step, task.node, ActuationKind.FAILED, why, warning=True)

    def _untaint(self, node: str) -> bool:
        """Remove our taint; False (and retried every step) when the API refused."""
        try:
            self.cluster.untaint_node(node, CA_TO_BE_DELETED_TAINT)
        except NotFound:
            pass  # the node is gone: nothing is left cordoned
        except ClusterAPIError:
            self.untaint_pending.add(node)
            return False
        self.untaint_pending.discard(node)
        return True

    def _retry_untaints(self, step: _Step) -> None:
        for node in sorted(self.untaint_pending):
            if node not in self.tasks and self._untaint(node):
                self._event(step, node, ActuationKind.UNTAINTED, "ToBeDeleted taint removed after a failed scale-down")

"""Kubernetes Events from a loop's results, with upstream CA's reasons and messages.

On pods (CA ``core/scaleup``, ``processors/status/eventing_scale_up_processor.go``):
``TriggeredScaleUp`` ("pod triggered scale-up: [{group 1->3 (max: 10)}]") and
``NotTriggerScaleUp`` ("pod didn't trigger scale-up: ..." with each group's reason),
the latter repeated at most every 10 minutes per pod while its message stays the same,
since a pending pod is reconsidered every loop. On nodes and their pods
when a scale-down starts (CA ``core/scaledown/actuation``): ``ScaleDown`` ("marked
the node as toBeDeleted/unschedulable", "deleting pod for node scale down"). On the
status ConfigMap: ``ScaledUpGroup`` and ``FailedToScaleUpGroup``; ``ScaleDownEmpty``/``ScaleDown``
when a removal starts and when the node is gone (with ``ScaleDown`` "nodes removed by
cluster autoscaler" on the node). The actuator emits
its own node events (``ScaleDownFailed`` ...). With ``--dry-run`` every message says
so. Events are best effort: a failure is counted by the cluster seam and skipped.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from autoscaler.runonce import LoopDecision
from kube.clusterapi import ClusterAPIError
from simulator.utilization import Utilization

__all__ = ["EventEmitter", "EventSink", "GroupSize", "QueuedEvents", "go_utilization"]

log = logging.getLogger("app.run.events")


class EventSink(Protocol):
    """The one call of ``ClusterAPI`` events need."""

    def record_event(self, kind: str, namespace: str, name: str, reason: str, message: str, *,
                     warning: bool = False) -> None: ...


class QueuedEvents:
    """Sends events from a background thread, so the loop never waits on them (CA's recorder is async too).

    At most ``capacity`` events wait; more are dropped and counted (``dropped``), since an
    event is worth less than a loop on time. ``close`` sends what is queued, within a bound.
    """

    def __init__(self, sink: EventSink, capacity: int = 1000) -> None:
        self._sink = sink
        self._queue: queue.Queue[tuple[str, str, str, str, str, bool] | None] = queue.Queue(capacity)
        self.dropped = 0
        self._thread = threading.Thread(target=self._run, name="events", daemon=True)
        self._thread.start()

    def record_event(self, kind: str, namespace: str, name: str, reason: str, message: str, *,
                     warning: bool = False) -> None:
        try:
            self._queue.put_nowait((kind, namespace, name, reason, message, warning))
        except queue.Full:
            self.dropped += 1

    def _run(self) -> None:
        while (item := self._queue.get()) is not None:
            kind, namespace, name, reason, message, warning = item
            try:
                self._sink.record_event(kind, namespace, name, reason, message, warning=warning)
            except ClusterAPIError as exc:  # counted by the guarded seam; one line here
                log.debug("event %s on %s %s/%s not recorded: %s", reason, kind, namespace, name, exc)

    def close(self, timeout: float = 5.0) -> None:
        """Send what is queued (up to ``timeout`` seconds), then stop the thread."""
        with contextlib.suppress(queue.Full):
            self._queue.put(None, timeout=timeout)
        self._thread.join(timeout)

#: A pending pod's NotTriggerScaleUp is repeated at most this often (same message).
NOT_TRIGGERED_QUIET_SECONDS = 600.0


@dataclass(frozen=True, slots=True)
class GroupSize:
    """A group's size before and after a scale-up, for TriggeredScaleUp's message."""

    name: str
    before: int
    after: int
    max_size: int


def _split(ref: str) -> tuple[str, str]:
    namespace, _, name = ref.partition("/")
    return namespace, name


@dataclass(slots=True)
class EventEmitter:
    cluster: EventSink
    #: Where the ConfigMap events go (the status ConfigMap's namespace and name).
    namespace: str
    config_map: str
    dry_run: bool = False
    _not_triggered: dict[str, tuple[str, float]] = field(default_factory=dict)
    emitted: Counter[str] = field(default_factory=Counter)

    def _emit(self, kind: str, namespace: str, name: str, reason: str, message: str, *, warning: bool = False) -> None:
        if self.dry_run:
            message = f"(dry run) {message}"
        with contextlib.suppress(ClusterAPIError):
            self.cluster.record_event(kind, namespace, name, reason, message, warning=warning)
            self.emitted[reason] += 1

    def scale_up(self, decision: LoopDecision, sizes: Sequence[GroupSize]) -> None:
        """TriggeredScaleUp on the pods that caused the scale-up, ScaledUpGroup on the ConfigMap."""
        if not sizes:
            return
        groups = ", ".join(f"{{{s.name} {s.before}->{s.after} (max: {s.max_size})}}" for s in sizes)
        for pod in decision.scale_up.triggered_by:
            self._emit("Pod", pod.namespace, pod.name, "TriggeredScaleUp", f"pod triggered scale-up: [{groups}]")
        for s in sizes:
            self._emit("ConfigMap", self.namespace, self.config_map, "ScaledUpGroup",
                       f"Scale-up: setting group {s.name} size to {s.after} instead of {s.before} "
                       f"(max: {s.max_size})")

    def scale_up_failed(self, group: str, message: str) -> None:
        self._emit("ConfigMap", self.namespace, self.config_map, "FailedToScaleUpGroup",
                   f"Scale-up failed for group {group}: {message}", warning=True)

    def not_triggered(self, decision: LoopDecision, now: float, storage: Mapping[str, str] | None = None) -> None:
        """NotTriggerScaleUp on pods no group can help, each group's reason counted as CA words it.

        ``storage``: pod ref -> the objects behind its storage refusals (``explain``'s detail),
        appended after CA's text.
        """
        current = decision.scale_up.still_unschedulable
        for ref, reasons in sorted(current.items()):
            counts = Counter(reasons.values())
            detail = ", ".join(f"{n} {reason}" for reason, n in sorted(counts.items()))
            message = f"pod didn't trigger scale-up: {detail}" if detail else "pod didn't trigger scale-up"
            if storage and ref in storage:
                message = f"{message}; storage: {storage[ref]}"
            last = self._not_triggered.get(ref)
            if last is not None and last[0] == message and now - last[1] < NOT_TRIGGERED_QUIET_SECONDS:
                continue
            self._not_triggered[ref] = (message, now)
            self._emit("Pod", *_split(ref), "NotTriggerScaleUp", message)
        for ref in set(self._not_triggered) - set(current):
            del self._not_triggered[ref]

    def scale_down(self, decision: LoopDecision, started: Sequence[str]) -> None:
        """ScaleDown on each node whose removal started and on the pods it will evict; on the
        ConfigMap, ScaleDownEmpty or ScaleDown as CA's actuator (``core/scaledown/actuation/actuator.go``)."""
        chosen = {c.node: c for c in decision.scale_down.to_delete}
        utilization = {n.name: n.utilization for n in decision.nodes}
        for node in started:
            cand = chosen.get(node)
            self._emit("Node", "", node, "ScaleDown", "marked the node as toBeDeleted/unschedulable")
            if cand is None:
                continue
            if cand.empty:
                self._on_config_map("ScaleDownEmpty", f'Scale-down: removing empty node "{node}"')
            else:
                pods = ",".join(p.name for p in cand.drain.to_move)
                util = go_utilization(utilization.get(node))
                self._on_config_map("ScaleDown", f"Scale-down: removing node {node}, utilization: {util}, "
                                                 f"pods to reschedule: {pods}")
            for pod in cand.drain.to_move:
                self._emit("Pod", pod.namespace, pod.name, "ScaleDown", "deleting pod for node scale down")

    def removed(self, node: str, drained: bool) -> None:
        """A node the cloud deleted: CA's ``RegisterAndRecordSuccessfulScaleDownEvent``
        (``core/scaledown/actuation/delete_in_batch.go``), on the node and on the ConfigMap."""
        self._emit("Node", "", node, "ScaleDown", "nodes removed by cluster autoscaler")
        if drained:
            self._on_config_map("ScaleDown", f"Scale-down: node {node} removed with drain")
        else:
            self._on_config_map("ScaleDownEmpty", f"Scale-down: empty node {node} removed")

    def _on_config_map(self, reason: str, message: str) -> None:
        self._emit("ConfigMap", self.namespace, self.config_map, reason, message)


def go_utilization(u: Utilization | None) -> str:
    """CA's ``utilization.Info`` as Go's ``%v`` prints it: ``{cpu mem gpu dra resource max}``."""
    if u is None:
        return "{0 0 0 0  0}"
    return f"{{{u.cpu:g} {u.memory:g} {u.gpu or 0:g} 0 {u.resource} {u.value:g}}}"

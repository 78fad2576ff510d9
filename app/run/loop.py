"""One iteration of the live loop, wired: refresh the cloud, decide and act, then report.

``LiveLoop.iterate(now)`` runs the library's ``Autoscaler.run_once`` (or, with
``--dry-run``, only the shared decision with the same memory: ``app.run.dryrun``)
over the guarded seams (``app.run.seams``), then turns what happened into Kubernetes
Events, the status ConfigMap, Prometheus metrics and one structured log line with
the phases' timings. Nothing here decides; it only reports the library's decision.

Errors never end the loop: a cloud that cannot be read, a view the adapter cannot
give completely, a failed API call or an unexpected bug fail this iteration, are
logged once with what failed, counted in ``errors_total`` by type, and the next
iteration starts afresh. ``iterate`` says whether it succeeded (for ``/health-check``).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field

from app.explain.storage import StoragePlugins
from app.explain.verdicts import node_verdicts, storage_details
from app.gc import collector_paused
from app.run.dryrun import DryRun, would_do
from app.run.events import EventEmitter, GroupSize
from app.run.metrics import Metrics
from app.run.seams import ActLog, GuardedCluster, GuardedProvider
from app.run.status import (
    DrainView,
    GroupView,
    NodeView,
    StatusTracker,
    UnpinThroughputView,
    group_views,
    health_ok,
    unreadable_message,
)
from app.run.storage import local_storage_by_group, pods_pending_on_local_storage
from app.run.taints import taint_counts
from autoscaler.config import Options
from autoscaler.loop import Autoscaler, EventKind
from autoscaler.runonce import LoopDecision
from cloudproviders.interface import CloudError
from kube.clusterapi import ClusterAPIError, ViewUnavailable
from kube.names import CA_TO_BE_DELETED_TAINT

__all__ = ["EXPLAIN_ANNOTATION", "LiveLoop"]

log = logging.getLogger("autoscaler.run")

#: ``--explain-node-annotation``'s key: the node's scale-down verdict, as ``explain`` gives it.
EXPLAIN_ANNOTATION = "autoscaler.storage.dev/explain"
#: Annotations written per loop at most (a first loop at 5,000 nodes would otherwise spend
#: the client's rate limit on them); the rest are written in the next loops.
MAX_ANNOTATIONS_PER_LOOP = 100


def _skipped_for_limits(decision: LoopDecision) -> list[tuple[str, str]]:
    """(direction, limit) per scaling a resource limit held back, as CA's ``skipped_scale_events_count``.

    Up: a scale-up capped by ``--cores-total``/``--memory-total`` (the orchestrator's note,
    ``autoscaler/scaleup/orchestrator.py``); down: a node kept by their minimum
    (``MinimalResourceLimitExceeded``, ``autoscaler/scaledown/eligibility.py``).
    """
    out: list[tuple[str, str]] = []
    for note in decision.scale_up.notes:
        if "max cluster cpu limit reached" in note:
            out.append(("up", "CpuResourceLimit"))
        elif "max cluster memory limit reached" in note:
            out.append(("up", "MemoryResourceLimit"))
    for kept in decision.scale_down.unremovable:
        if kept.reason == "MinimalResourceLimitExceeded":
            out.append(("down", "CpuResourceLimit" if "cores" in kept.detail else "MemoryResourceLimit"))
    return out


def _ca_functions(timings: dict[str, float], *, acted: bool) -> dict[str, float]:
    """Our phases under CA's ``function`` labels (``metrics/metrics.go``'s ``FunctionLabel``s).

    The decision's own phases map one to one (the snapshot is CA's cluster-state update,
    scale-down planning is ``findUnneeded``); ``autoscaling`` is the whole decide-and-act
    step and ``scaleDown`` what acting took beyond deciding (none in a dry run).
    """
    out = {"main": timings["main"], "mainSuccessful": timings["main"],
           "cloudProviderRefresh": timings.get("cloudProviderRefresh", 0.0),
           "updateClusterState": timings.get("snapshot", 0.0), "scaleUp": timings.get("scaleUp", 0.0),
           "findUnneeded": timings.get("scaleDown", 0.0), "autoscaling": timings.get("runOnce", 0.0)}
    if acted:
        deciding = sum(timings.get(k, 0.0) for k in ("snapshot", "scaleUp", "scaleDown", "report"))
        out["scaleDown"] = max(0.0, out["autoscaling"] - deciding)
    return out


@dataclass(slots=True)
class LiveLoop:
    cluster: GuardedCluster
    provider: GuardedProvider
    options: Options
    metrics: Metrics
    events: EventEmitter
    acts: ActLog
    #: Write the status ConfigMap (``--write-status-configmap``).
    write_status: bool = True
    dry_run: bool = False
    executor: Executor | None = None
    wall_clock: Callable[[], float] = time.perf_counter
    status: StatusTracker = field(default_factory=StatusTracker)
    loops: int = 0
    #: ``--explain-node-annotation``: write each node's verdict as ``EXPLAIN_ANNOTATION``.
    annotate_nodes: bool = False
    #: node -> the verdict last written there (only changes are written).
    _annotated: dict[str, str] = field(default_factory=dict)
    #: node -> why its removal started (empty, underutilized, unready), the metric's label.
    _removal_reasons: dict[str, str] = field(default_factory=dict)
    _autoscaler: Autoscaler | None = None
    _dry: DryRun | None = None

    def __post_init__(self) -> None:
        # What the first drain deadlines will assume, before the first loop reports it.
        self.metrics.unpin_bytes_per_second.set(self.options.scale_down.unpin_bytes_per_second)
        if self.dry_run:
            self._dry = DryRun(self.cluster, self.provider, self.options)
        else:
            self._autoscaler = Autoscaler(self.cluster, self.provider, self.options, self.executor)

    def _decide(self, now: float) -> LoopDecision:
        if self._dry is not None:
            return self._dry.decide(now)
        assert self._autoscaler is not None
        record = self._autoscaler.run_once(now)
        for event in record.events:
            if event.kind is EventKind.SCALE_UP_TIMED_OUT:  # CA's metrics.Timeout
                self.metrics.scale_up_failed("timeout", event.nodes)
        return record.decision

    def iterate(self, now: float) -> bool:
        """One loop at ``now`` (seconds since the epoch); True when it completed."""
        self.loops += 1
        started = self.wall_clock()
        self.metrics.last_activity.labels("main").set(now)
        timings: dict[str, float] = {}
        self.provider.new_loop()
        try:
            self.provider.refresh()
            timings["cloudProviderRefresh"] = self.wall_clock() - started
            before = self.wall_clock()
            with collector_paused():  # no full collection in the middle of a loop (app/gc.py)
                decision = self._decide(now)
            timings["runOnce"] = self.wall_clock() - before
        except ViewUnavailable as exc:
            self.metrics.errors_total.labels("apiCallError").inc()
            log.warning("loop %d skipped: no complete view of the cluster: %s", self.loops, exc)
            return False
        except ClusterAPIError as exc:
            self.metrics.errors_total.labels("apiCallError").inc()
            log.warning("loop %d failed: Kubernetes API: %s", self.loops, exc)
            return False
        except CloudError as exc:
            self.metrics.errors_total.labels("cloudProviderError").inc()
            log.warning("loop %d failed: cloud provider: %s", self.loops, exc)
            return False
        except Exception:  # a bug must not stop the autoscaler; it is logged with its stack once per loop
            self.metrics.errors_total.labels("internalError").inc()
            log.exception("loop %d failed: internal error", self.loops)
            return False
        before = self.wall_clock()
        try:
            self._report(decision, now)
        except (ClusterAPIError, CloudError) as exc:
            log.warning("loop %d: reporting failed: %s", self.loops, exc)
        timings["statusEventsMetrics"] = self.wall_clock() - before
        timings.update(decision.timings)
        total = self.wall_clock() - started
        timings["main"] = total
        self.metrics.phases(_ca_functions(timings, acted=not self.dry_run))
        self.metrics.last_activity.labels("autoscaling").set(now)
        self._log(decision, timings)
        return True

    def _report(self, decision: LoopDecision, now: float) -> None:
        acts = self.acts.drain()
        for cand in decision.scale_down.to_delete:
            reason = "unready" if not cand.ready else "empty" if cand.empty else "underutilized"
            self._removal_reasons.setdefault(cand.node, reason)
        for node in acts.deleted:
            reason = self._removal_reasons.pop(node, "underutilized")
            self.metrics.scaled_down(reason)
            self.events.removed(node, drained=reason != "empty")
        # Only removals still under way keep their reason: one rolled back (or only decided, with
        # --dry-run) leaves nothing behind, so a run of months does not collect every node name.
        removing = self._autoscaler.actuator.tasks if self._autoscaler is not None else {}
        self._removal_reasons = {n: r for n, r in self._removal_reasons.items() if n in removing}
        if self.dry_run:
            groups = {g.name: g for g in group_views(self.provider.node_groups())}
            sizes = [GroupSize(i.group, i.new_size - i.delta, i.new_size, groups[i.group].max_size)
                     for i in decision.scale_up.increases if i.group in groups]
            started = [c.node for c in decision.scale_down.to_delete]
        else:
            sizes = [GroupSize(*entry) for entry in acts.scaled_up]
            started = acts.tainted
        self.events.scale_up(decision, sizes)
        for group, code, message in acts.scale_up_failed:
            self.status.scale_up_failed(group, now, code, message)
            self.events.scale_up_failed(group, message)
        self.events.not_triggered(decision, now, self._storage_details(decision))
        self._annotate(decision)
        self.events.scale_down(decision, started)
        if sizes:
            self.metrics.last_activity.labels("scaleUp").set(now)
        if started:
            self.metrics.last_activity.labels("scaleDown").set(now)
        # One read of the nodes and groups for both the metrics and the status ConfigMap.
        nodes = [NodeView(n.name, n.group, n.readiness) for n in decision.nodes]
        views = group_views(self.provider.node_groups())
        throughput = self._throughput(decision)
        self._metrics(decision, nodes, views)
        self.metrics.unpin_bytes_per_second.set(throughput.bytes_per_second)
        unreadable = self._unreadable()
        if self.write_status:
            text = self.status.text(now, nodes, views, decision.scale_down.unneeded, unreadable,
                                    unremovable=decision.scale_down.unremovable, drains=self._drains(decision),
                                    throughput=throughput)
            with contextlib.suppress(ClusterAPIError):  # informational; the next loop writes it again
                self.cluster.inner.write_status(text)

    def _throughput(self, decision: LoopDecision) -> UnpinThroughputView:
        """The unpin throughput the drain deadlines assume: observed on the library loop's drains, or the flag."""
        prior = self.options.scale_down.unpin_bytes_per_second
        if self._autoscaler is None:
            rate = decision.scale_down.unpin_bytes_per_second
            return UnpinThroughputView(prior if rate is None else rate)
        observed = self._autoscaler.memory.unpin_throughput
        return UnpinThroughputView(observed.bytes_per_second(prior), len(observed.observations))

    def _drains(self, decision: LoopDecision) -> list[DrainView]:
        """The drains in progress (``--dry-run``: the nodes this loop would drain), each with its deadline."""
        if self._autoscaler is None:
            floor = self.options.scale_down.max_pod_eviction_seconds
            return [DrainView(c.node, c.unpin_bytes, c.unpin_seconds,
                              decision.now + (c.drain_seconds if c.drain_seconds is not None else floor))
                    for c in decision.scale_down.to_delete]
        return [DrainView(t.node, t.unpin_bytes, t.unpin_seconds, t.eviction_deadline)
                for t in self._autoscaler.actuator.tasks.values()]

    def _unreadable(self) -> str:
        """Count the objects the view could not convert (metric) and name them (status message)."""
        try:
            objects = self.cluster.list_objects()
        except ClusterAPIError:
            return ""
        by_kind: dict[str, int] = {}
        for item in objects.unreadable:
            by_kind[item.kind] = by_kind.get(item.kind, 0) + 1
        self.metrics.set_unconvertible(by_kind)
        return unreadable_message(objects)

    def _annotate(self, decision: LoopDecision) -> None:
        """Changed verdicts only, at most ``MAX_ANNOTATIONS_PER_LOOP`` a loop (the rest next loop)."""
        if not self.annotate_nodes or self.dry_run:
            return
        verdicts = node_verdicts(decision)
        changed = [(n, v) for n, v in sorted(verdicts.items()) if self._annotated.get(n) != v]
        for node, verdict in changed[:MAX_ANNOTATIONS_PER_LOOP]:
            try:
                self.cluster.annotate_node(node, EXPLAIN_ANNOTATION, verdict)
            except ClusterAPIError:
                continue  # informational: tried again next loop
            self._annotated[node] = verdict
        for gone in set(self._annotated) - set(verdicts):
            del self._annotated[gone]

    def _storage_details(self, decision: LoopDecision) -> dict[str, str]:
        """The objects behind storage refusals, for NotTriggerScaleUp (read only when there are some)."""
        up = decision.scale_up
        if not any(r.plugin in StoragePlugins for ref in up.still_unschedulable
                   for r in up.refusals.get(ref, {}).values()):
            return {}
        try:
            objects = self.cluster.list_objects()
        except ClusterAPIError:
            return {}
        return storage_details(decision, objects, self.options)

    def _metrics(self, decision: LoopDecision, nodes: Sequence[NodeView], groups: Sequence[GroupView]) -> None:
        m = self.metrics
        by_state = {"ready": sum(1 for n in nodes if n.readiness == "Ready"),
                    "unready": sum(1 for n in nodes if n.readiness == "Unready"),
                    "notStarted": sum(1 for n in nodes if n.readiness == "NotStarted")}
        members: dict[str, int] = {}
        for n in nodes:
            if n.group is not None and n.readiness != "Deleting":
                members[n.group] = members.get(n.group, 0) + 1
        by_state["unregistered"] = sum(max(0, g.target - members.get(g.name, 0)) for g in groups)
        m.set_nodes(by_state)
        rule = self.status.health
        group_nodes = {g.name: [n for n in nodes if n.group == g.name] for g in groups}
        m.set_groups(((g.name, g.min_size, g.max_size, g.target, health_ok(group_nodes[g.name], rule)) for g in groups),
                     sum(g.max_size for g in groups))
        m.cluster_safe_to_autoscale.set(1 if health_ok(nodes, rule) else 0)
        m.set_backoff((g.name for g in groups), self._backed_off(decision.now))
        m.set_unremovable(Counter(str(u.reason) for u in decision.scale_down.unremovable))
        for direction, limit in _skipped_for_limits(decision):
            m.skipped_scale_events_count.labels(direction, limit).inc()
        memory = self._autoscaler.memory if self._autoscaler is not None else None
        m.pending_node_deletions.set(len(memory.deletions_in_progress) if memory is not None else 0)
        up = decision.scale_up
        m.unschedulable_pods_count.labels("unschedulable").set(
            len(up.triggered_by) + len(up.still_unschedulable) + len(up.fits_existing) + len(up.fits_upcoming))
        m.unschedulable_pods_count.labels("scheduler_unprocessed").set(len(up.not_processed))
        m.unneeded_nodes_count.set(len(decision.scale_down.unneeded))
        m.scale_down_in_cooldown.set(1 if decision.scale_down.waiting else 0)
        with contextlib.suppress(ClusterAPIError):
            objects = self.cluster.list_objects()
            free, total = local_storage_by_group(objects.nodes, {n.name: n.group for n in decision.nodes})
            m.set_local_storage(free, total, [g.name for g in groups])
            m.pods_pending_local_storage.set(pods_pending_on_local_storage(objects, self.options.storage))
            live = [n for n in objects.nodes if not n.has_taint(CA_TO_BE_DELETED_TAINT)]
            m.set_resources(sum(n.capacity.cpu for n in live) / 1000, sum(n.capacity.memory for n in live),
                            self.options.scale_up.cores_total, self.options.scale_up.memory_total_gib)
            m.set_taints(taint_counts(objects.nodes, self.options.scale_up.ignore_taints))

    def _backed_off(self, now: float) -> dict[str, str]:
        """Backed-off groups -> the error class (the metric's ``reason``), as the library loop keeps them."""
        if self._autoscaler is None:
            return {}
        backoff = self._autoscaler.backoff
        out: dict[str, str] = {}
        for group in backoff.backed_off(now):
            entry = backoff.status(group, now)
            if entry is not None:
                out[group] = entry.error_class.value
        return out

    def _log(self, decision: LoopDecision, timings: dict[str, float]) -> None:
        up, down = decision.scale_up, decision.scale_down
        log.info("loop", extra={"fields": {
            "loop": self.loops, "dryRun": self.dry_run, "nodes": len(decision.nodes),
            "scaleUp": up.result, "increases": {i.group: i.delta for i in up.increases},
            "pending": len(up.triggered_by) + len(up.still_unschedulable),
            "scaleDown": down.result, "unneeded": len(down.unneeded), "removing": [c.node for c in down.to_delete],
            "phasesMs": {k: round(v * 1000, 2) for k, v in timings.items()},
        }})
        if self.dry_run:
            log.info("dry run, loop %d: %s", self.loops, would_do(decision, self.options))

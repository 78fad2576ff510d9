"""Prometheus metrics of the live loop: all of upstream CA's ``cluster_autoscaler_*``, plus storage.

Every metric CA registers (``metrics/metrics.go``; documented in
``proposals/metrics.md``) is registered here with CA's name, type, labels and
histogram buckets, so CA's dashboards and alerts read ours. Those that mean
something here are kept up to date by the loop and the seams; those that do not
(GPU and DRA counts, node autoprovisioning, MIG consistency, bin-packing
heterogeneity, removal latency tracking) stay at zero or without samples, as CA
leaves them when the feature is off. Labelled counters CA initialises at zero
(error types, scale-up failure and scale-down reasons, eviction results, skipped
scale events) are initialised the same way. CA registers the per-node-group gauges
only with ``--emit-per-nodegroup-metrics``; they are always registered here.

What CA has no notion of is ours, under ``storage_autoscaler_*``: free and total
local bytes per node group, pods pending on local storage, the unpin throughput the drain
deadlines assume (``autoscaler/scaledown/throughput.py``), leadership and dry run.
The exposition is client_golang's (no ``_created`` series).
Each ``Metrics`` has its own registry, so tests and several runs in one process
never share counters.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    Summary,
    disable_created_metrics,
    generate_latest,
)

__all__ = ["CA_FUNCTIONS", "Metrics", "exponential_buckets", "exponential_buckets_range"]

CA = "cluster_autoscaler"
OURS = "storage_autoscaler"

# Go's client exposes no ``*_created`` series; without this every counter, histogram and
# summary would carry an extra gauge family CA's scrapers have never seen.
disable_created_metrics()  # type: ignore[no-untyped-call]


def exponential_buckets(start: float, factor: float, count: int) -> tuple[float, ...]:
    """client_golang's ``ExponentialBuckets``."""
    return tuple(start * factor**i for i in range(count))


def exponential_buckets_range(low: float, high: float, count: int) -> tuple[float, ...]:
    """client_golang's ``ExponentialBucketsRange``: ``count`` buckets from ``low`` to ``high``."""
    factor = (high / low) ** (1.0 / (count - 1))
    return tuple(low * factor**i for i in range(count))


#: CA's ``function_duration_seconds`` buckets: 150 from 0.1 s to 30 min.
FUNCTION_BUCKETS = exponential_buckets_range(0.1, 1800.0, 150)
#: The ``function`` label values this loop reports (a subset of CA's ``FunctionLabel``s).
CA_FUNCTIONS = ("main", "mainSuccessful", "cloudProviderRefresh", "updateClusterState", "autoscaling", "scaleUp",
                "findUnneeded", "scaleDown")
_ERROR_TYPES = ("cloudProviderError", "apiCallError", "internalError", "transientError", "configurationError",
                "nodeGroupDoesNotExistError", "unexpectedScaleDownStateError")
_FAILED_SCALE_UP_REASONS = ("cloudProviderError", "apiCallError", "timeout")
_SCALE_DOWN_REASONS = ("underutilized", "empty", "unready")
_NODE_STATES = ("ready", "unready", "notStarted", "suspended", "longUnregistered", "unregistered")
_GPU = ("gpu_resource_name", "gpu_name")
#: CA's two counters whose names do not end in ``_total``: prometheus_client appends it to every
#: counter (OpenMetrics), Go's client does not, so ``render`` takes it off again.
_GO_COUNTER_NAMES = re.compile(rb"\b(cluster_autoscaler_(?:old_unregistered_nodes_removed_count|"
                               rb"skipped_scale_events_count))_total\b")


@dataclass(slots=True)
class Metrics:
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)
    # Cluster state.
    cluster_safe_to_autoscale: Gauge = field(init=False)
    nodes_count: Gauge = field(init=False)
    node_groups_count: Gauge = field(init=False)
    unschedulable_pods_count: Gauge = field(init=False)
    skipped_pods_count: Gauge = field(init=False)
    max_nodes_count: Gauge = field(init=False)
    cluster_cpu_current_cores: Gauge = field(init=False)
    cpu_limits_cores: Gauge = field(init=False)
    cluster_memory_current_bytes: Gauge = field(init=False)
    memory_limits_bytes: Gauge = field(init=False)
    node_group_min_count: Gauge = field(init=False)
    node_group_max_count: Gauge = field(init=False)
    node_group_target_count: Gauge = field(init=False)
    node_group_healthiness: Gauge = field(init=False)
    node_group_backoff_status: Gauge = field(init=False)
    # Execution.
    last_activity: Gauge = field(init=False)
    function_duration_seconds: Histogram = field(init=False)
    function_duration_quantile_seconds: Summary = field(init=False)
    pending_node_deletions: Gauge = field(init=False)
    # Operations.
    errors_total: Counter = field(init=False)
    scaled_up_nodes_total: Counter = field(init=False)
    scaled_up_gpu_nodes_total: Counter = field(init=False)
    failed_scale_ups_total: Counter = field(init=False)
    failed_node_creations_total: Counter = field(init=False)
    failed_gpu_scale_ups_total: Counter = field(init=False)
    scaled_down_nodes_total: Counter = field(init=False)
    scaled_down_gpu_nodes_total: Counter = field(init=False)
    evicted_pods_total: Counter = field(init=False)
    unneeded_nodes_count: Gauge = field(init=False)
    unremovable_nodes_count: Gauge = field(init=False)
    scale_down_in_cooldown: Gauge = field(init=False)
    old_unregistered_nodes_removed_count: Counter = field(init=False)
    overflowing_controllers_count: Gauge = field(init=False)
    skipped_scale_events_count: Counter = field(init=False)
    created_node_groups_total: Counter = field(init=False)
    deleted_node_groups_total: Counter = field(init=False)
    node_taints_count: Gauge = field(init=False)
    inconsistent_instances_migs_count: Gauge = field(init=False)
    binpacking_heterogeneity: Histogram = field(init=False)
    max_node_skip_eval_duration_seconds: Gauge = field(init=False)
    node_removal_latency_seconds: Histogram = field(init=False)
    dra_node_template_resources_mismatch: Gauge = field(init=False)
    # Ours.
    local_free_bytes: Gauge = field(init=False)
    local_total_bytes: Gauge = field(init=False)
    pods_pending_local_storage: Gauge = field(init=False)
    leader: Gauge = field(init=False)
    dry_run: Gauge = field(init=False)
    unconvertible_objects: Gauge = field(init=False)
    unpin_bytes_per_second: Gauge = field(init=False)
    _unremovable_reasons: set[str] = field(default_factory=set)
    _backoff_reasons: dict[str, str] = field(default_factory=dict)
    _taint_types: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self._cluster_state()
        self._execution()
        self._operations()
        self._ours()
        self._initialise()

    def _gauge(self, name: str, help: str, labels: Iterable[str] = ()) -> Gauge:
        return Gauge(f"{CA}_{name}", help, list(labels), registry=self.registry)

    def _counter(self, name: str, help: str, labels: Iterable[str] = ()) -> Counter:
        # prometheus_client adds ``_total`` itself; CA's names that end in it keep it once.
        return Counter(f"{CA}_{name}", help, list(labels), registry=self.registry)

    def _cluster_state(self) -> None:
        g = self._gauge
        self.cluster_safe_to_autoscale = g("cluster_safe_to_autoscale", "1 while the cluster is healthy enough to "
                                                                        "autoscale, else 0.")
        self.nodes_count = g("nodes_count", "Nodes, by state.", ["state"])
        self.node_groups_count = g("node_groups_count", "Node groups managed, by type.", ["node_group_type"])
        self.unschedulable_pods_count = g("unschedulable_pods_count", "Pending pods, unschedulable or not yet "
                                          "processed by the scheduler.", ["type"])
        self.skipped_pods_count = g("skipped_pods_count", "Pods whose scheduling simulation was skipped.",
                                    ["requestor"])
        self.max_nodes_count = g("max_nodes_count", "Sum of the node groups' maximum sizes.")
        self.cluster_cpu_current_cores = g("cluster_cpu_current_cores", "Cores of the cluster's nodes, "
                                           "nodes being deleted left out.")
        self.cpu_limits_cores = g("cpu_limits_cores", "--cores-total bounds.", ["direction"])
        self.cluster_memory_current_bytes = g("cluster_memory_current_bytes", "Memory bytes of the cluster's "
                                              "nodes, nodes being deleted left out.")
        self.memory_limits_bytes = g("memory_limits_bytes", "--memory-total bounds in bytes.", ["direction"])
        self.node_group_min_count = g("node_group_min_count", "A node group's minimum size.", ["node_group"])
        self.node_group_max_count = g("node_group_max_count", "A node group's maximum size.", ["node_group"])
        self.node_group_target_count = g("node_group_target_count", "A node group's target size.", ["node_group"])
        self.node_group_healthiness = g("node_group_healthiness", "1 while a node group is healthy enough to "
                                        "autoscale, else 0.", ["node_group"])
        self.node_group_backoff_status = g("node_group_backoff_status", "1 while a node group is backed off, "
                                           "by reason.", ["node_group", "reason"])

    def _execution(self) -> None:
        self.last_activity = self._gauge("last_activity", "Unix time a part of the loop last ran.", ["activity"])
        self.function_duration_seconds = Histogram(
            f"{CA}_function_duration_seconds", "Seconds taken by parts of the loop.", ["function"],
            buckets=FUNCTION_BUCKETS, registry=self.registry)
        self.function_duration_quantile_seconds = Summary(
            f"{CA}_function_duration_quantile_seconds", "Seconds taken by parts of the loop (summary).",
            ["function"], registry=self.registry)
        self.pending_node_deletions = self._gauge("pending_node_deletions", "Nodes whose deletion started and "
                                                  "has not finished.")

    def _operations(self) -> None:
        c, g = self._counter, self._gauge
        self.errors_total = c("errors_total", "Loops that failed, by error type.", ["type"])
        self.scaled_up_nodes_total = c("scaled_up_nodes_total", "Nodes added.", [*_GPU, "dra_drivers"])
        self.scaled_up_gpu_nodes_total = c("scaled_up_gpu_nodes_total", "GPU nodes added (deprecated by CA).", _GPU)
        self.failed_scale_ups_total = c("failed_scale_ups_total", "Scale-ups that failed.",
                                        ["reason", *_GPU, "dra_drivers"])
        self.failed_node_creations_total = c("failed_node_creations_total", "Nodes that could not be added.",
                                             ["reason"])
        self.failed_gpu_scale_ups_total = c("failed_gpu_scale_ups_total", "GPU scale-ups that failed (deprecated "
                                            "by CA).", ["reason", *_GPU])
        self.scaled_down_nodes_total = c("scaled_down_nodes_total", "Nodes removed, by reason.",
                                         ["reason", *_GPU, "dra_drivers"])
        self.scaled_down_gpu_nodes_total = c("scaled_down_gpu_nodes_total", "GPU nodes removed (deprecated by CA).",
                                             ["reason", *_GPU])
        self.evicted_pods_total = c("evicted_pods_total", "Pod evictions, by result.", ["eviction_result"])
        self.unneeded_nodes_count = g("unneeded_nodes_count", "Nodes now considered unneeded.")
        self.unremovable_nodes_count = g("unremovable_nodes_count", "Nodes now considered unremovable, by reason.",
                                         ["reason"])
        self.scale_down_in_cooldown = g("scale_down_in_cooldown", "1 while scale-down is in cooldown, else 0.")
        self.old_unregistered_nodes_removed_count = c("old_unregistered_nodes_removed_count",
                                                      "Long-unregistered nodes removed.")
        self.overflowing_controllers_count = g("overflowing_controllers_count", "Controllers with too many "
                                               "different pods to treat them as equivalent.")
        self.skipped_scale_events_count = c("skipped_scale_events_count", "Scalings skipped because a limit was "
                                            "reached.", ["direction", "reason"])
        self.created_node_groups_total = c("created_node_groups_total", "Node groups created (autoprovisioning).",
                                           ["group_type"])
        self.deleted_node_groups_total = c("deleted_node_groups_total", "Node groups deleted (autoprovisioning).",
                                           ["group_type"])
        self.node_taints_count = g("node_taints_count", "Taints on the cluster's nodes, by type.", ["type"])
        self.inconsistent_instances_migs_count = g("inconsistent_instances_migs_count", "GCE MIGs whose instance "
                                                   "lists disagree.")
        self.binpacking_heterogeneity = Histogram(
            f"{CA}_binpacking_heterogeneity", "Equivalence groups of pods in one bin-packing simulation.",
            ["instance_type", "cpu_count", "namespace_count"], buckets=exponential_buckets(1, 2, 6),
            registry=self.registry)
        self.max_node_skip_eval_duration_seconds = g("max_node_skip_eval_duration_seconds", "Longest time a node "
                                                     "was skipped by scale-down.")
        self.node_removal_latency_seconds = Histogram(
            f"{CA}_node_removal_latency_seconds", "Seconds from unneeded to removed (or needed again).",
            ["deleted", "delay_reason"], buckets=exponential_buckets(1, 1.5, 19), registry=self.registry)
        self.dra_node_template_resources_mismatch = g("dra_node_template_resources_mismatch", "DRA resource pool "
                                                      "mismatches between nodes and templates.",
                                                      ["driver", "mismatch_type"])

    def _ours(self) -> None:
        r = self.registry
        self.local_free_bytes = Gauge(f"{OURS}_local_storage_free_bytes",
                                      "Free bytes for new local volumes on a group's nodes (driver reported).",
                                      ["node_group"], registry=r)
        self.local_total_bytes = Gauge(f"{OURS}_local_storage_total_bytes",
                                       "Total local bytes of a group's nodes (max-capacity label).", ["node_group"],
                                       registry=r)
        self.pods_pending_local_storage = Gauge(
            f"{OURS}_pods_pending_local_storage", "Pending pods that need a new node-local volume.", registry=r)
        self.leader = Gauge(f"{OURS}_leader", "1 while this replica holds the leader lease and acts.", registry=r)
        self.dry_run = Gauge(f"{OURS}_dry_run", "1 when running with --dry-run (decides, never acts).", registry=r)
        self.unconvertible_objects = Gauge(
            f"{OURS}_unconvertible_objects",
            "Objects the live view could not convert, by kind; the nodes they could pin are not scaled down.",
            ["kind"], registry=r)
        self.unpin_bytes_per_second = Gauge(
            f"{OURS}_unpin_bytes_per_second",
            "Unpin throughput the drain deadlines assume: the slowest of the last drains observed, or "
            "--storage-unpin-throughput before any.", registry=r)

    def _initialise(self) -> None:
        """The zero samples CA's ``InitMetrics`` writes, so rates and alerts have a series from the start."""
        for kind in _ERROR_TYPES:
            self.errors_total.labels(kind)
        for reason in _FAILED_SCALE_UP_REASONS:
            self.failed_scale_ups_total.labels(reason, "", "", "")
            self.failed_node_creations_total.labels(reason)
        for reason in _SCALE_DOWN_REASONS:
            self.scaled_down_nodes_total.labels(reason, "", "", "")
        for result in ("succeeded", "failed"):
            self.evicted_pods_total.labels(result)
        for direction in ("down", "up"):
            for limit in ("CpuResourceLimit", "MemoryResourceLimit"):
                self.skipped_scale_events_count.labels(direction, limit)
        self.scaled_up_nodes_total.labels("", "", "")

    def render(self) -> bytes:
        """The text exposition of every metric (the ``/metrics`` body), with CA's exact names."""
        return _GO_COUNTER_NAMES.sub(rb"\1", generate_latest(self.registry))

    # --- what the seams and the loop report -------------------------------------------
    def scaled_up(self, nodes: int) -> None:
        self.scaled_up_nodes_total.labels("", "", "").inc(nodes)

    def scale_up_failed(self, reason: str, nodes: int) -> None:
        self.failed_scale_ups_total.labels(reason, "", "", "").inc()
        self.failed_node_creations_total.labels(reason).inc(nodes)

    def scaled_down(self, reason: str) -> None:
        self.scaled_down_nodes_total.labels(reason, "", "", "").inc()

    def eviction(self, succeeded: bool) -> None:
        self.evicted_pods_total.labels("succeeded" if succeeded else "failed").inc()

    def set_nodes(self, by_state: Mapping[str, int]) -> None:
        for state in _NODE_STATES:
            self.nodes_count.labels(state).set(by_state.get(state, 0))

    def set_resources(self, cores: float, memory_bytes: float, cores_total: tuple[int, int],
                      memory_total_gib: tuple[int, int]) -> None:
        self.cluster_cpu_current_cores.set(cores)
        self.cluster_memory_current_bytes.set(memory_bytes)
        self.cpu_limits_cores.labels("minimum").set(cores_total[0])
        self.cpu_limits_cores.labels("maximum").set(cores_total[1])
        self.memory_limits_bytes.labels("minimum").set(memory_total_gib[0] * 2**30)
        self.memory_limits_bytes.labels("maximum").set(memory_total_gib[1] * 2**30)

    def set_groups(self, groups: Iterable[tuple[str, int, int, int, bool]], max_total: int) -> None:
        """Per group: (name, min, max, target, healthy)."""
        rows = list(groups)
        self.node_groups_count.labels("autoscaled").set(len(rows))
        self.node_groups_count.labels("autoprovisioned").set(0)
        self.max_nodes_count.set(max_total)
        for name, low, high, target, healthy in rows:
            self.node_group_min_count.labels(name).set(low)
            self.node_group_max_count.labels(name).set(high)
            self.node_group_target_count.labels(name).set(target)
            self.node_group_healthiness.labels(name).set(1 if healthy else 0)

    def set_backoff(self, groups: Iterable[str], backed_off: Mapping[str, str]) -> None:
        """CA's ``UpdateNodeGroupBackOffStatus``: reason "" at 0 when not backed off, else the reason at 1."""
        for name in groups:
            reason = backed_off.get(name)
            previous = self._backoff_reasons.pop(name, None)
            if previous is not None and previous != reason:
                self.node_group_backoff_status.labels(name, previous).set(0)
            if reason is None:
                self.node_group_backoff_status.labels(name, "").set(0)
            else:
                self.node_group_backoff_status.labels(name, reason).set(1)
                self._backoff_reasons[name] = reason

    def set_unremovable(self, counts: Mapping[str, int]) -> None:
        for reason in self._unremovable_reasons | set(counts):
            self.unremovable_nodes_count.labels(reason).set(counts.get(reason, 0))
        self._unremovable_reasons |= set(counts)

    def set_taints(self, counts: Mapping[str, int]) -> None:
        for kind in self._taint_types | set(counts):
            self.node_taints_count.labels(kind).set(counts.get(kind, 0))
        self._taint_types |= set(counts)

    def set_local_storage(self, free: Mapping[str, int], total: Mapping[str, int], groups: Iterable[str]) -> None:
        for name in groups:
            self.local_free_bytes.labels(name).set(free.get(name, 0))
            self.local_total_bytes.labels(name).set(total.get(name, 0))

    def set_unconvertible(self, by_kind: Mapping[str, int]) -> None:
        """Kinds seen before and now gone drop to 0 rather than keep a stale count."""
        seen = {sample.labels["kind"] for metric in self.unconvertible_objects.collect() for sample in metric.samples}
        for kind in seen | set(by_kind):
            self.unconvertible_objects.labels(kind).set(by_kind.get(kind, 0))

    def phases(self, timings: Mapping[str, float]) -> None:
        """Observe each of CA's ``function`` labels given (others are the log line's only)."""
        for name, seconds in timings.items():
            if name in CA_FUNCTIONS:
                self.function_duration_seconds.labels(name).observe(max(0.0, seconds))
                self.function_duration_quantile_seconds.labels(name).observe(max(0.0, seconds))

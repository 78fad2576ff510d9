"""Prometheus metrics of the live loop: upstream CA's ``cluster_autoscaler_*`` names, plus storage.

Where a metric means what CA's means, it has CA's name, type and labels
(``cluster-autoscaler/metrics/metrics.go``): node and pod counts, scale-up and
scale-down totals, evictions, errors by type, phase durations, last activity
times, cluster health. What CA has no notion of is ours, under
``storage_autoscaler_*``: free and total local bytes per node group and pods that
are pending on local storage. Each ``Metrics`` has its own registry, so tests and
several runs in one process never share counters.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

__all__ = ["Metrics"]

CA = "cluster_autoscaler"
OURS = "storage_autoscaler"

#: CA's ``function_duration_seconds`` buckets (exponential from 10 ms).
_BUCKETS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92, 163.84)


@dataclass(slots=True)
class Metrics:
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)
    cluster_safe_to_autoscale: Gauge = field(init=False)
    nodes_count: Gauge = field(init=False)
    node_groups_count: Gauge = field(init=False)
    unschedulable_pods_count: Gauge = field(init=False)
    unneeded_nodes_count: Gauge = field(init=False)
    max_nodes_count: Gauge = field(init=False)
    last_activity: Gauge = field(init=False)
    function_duration_seconds: Histogram = field(init=False)
    errors_total: Counter = field(init=False)
    scaled_up_nodes_total: Counter = field(init=False)
    failed_scale_ups_total: Counter = field(init=False)
    scaled_down_nodes_total: Counter = field(init=False)
    evicted_pods_total: Counter = field(init=False)
    failed_evictions_total: Counter = field(init=False)
    scale_down_in_cooldown: Gauge = field(init=False)
    node_group_target_count: Gauge = field(init=False)
    local_free_bytes: Gauge = field(init=False)
    local_total_bytes: Gauge = field(init=False)
    pods_pending_local_storage: Gauge = field(init=False)
    leader: Gauge = field(init=False)
    dry_run: Gauge = field(init=False)
    unconvertible_objects: Gauge = field(init=False)

    def __post_init__(self) -> None:
        r = self.registry
        self.cluster_safe_to_autoscale = Gauge(
            f"{CA}_cluster_safe_to_autoscale", "Whether the cluster is healthy enough for autoscaling (1 yes, 0 no).",
            registry=r)
        self.nodes_count = Gauge(f"{CA}_nodes_count", "Number of nodes in the cluster, by state.", ["state"],
                                 registry=r)
        self.node_groups_count = Gauge(f"{CA}_node_groups_count", "Number of node groups managed, by type.",
                                       ["node_group_type"], registry=r)
        self.unschedulable_pods_count = Gauge(f"{CA}_unschedulable_pods_count",
                                              "Number of unschedulable pods in the cluster.", ["type"], registry=r)
        self.unneeded_nodes_count = Gauge(f"{CA}_unneeded_nodes_count",
                                          "Number of nodes currently considered unneeded.", registry=r)
        self.max_nodes_count = Gauge(f"{CA}_max_nodes_count", "Maximum number of nodes in all node groups.",
                                     registry=r)
        self.last_activity = Gauge(f"{CA}_last_activity", "Last time certain part of the autoscaler logic executed.",
                                   ["activity"], registry=r)
        self.function_duration_seconds = Histogram(
            f"{CA}_function_duration_seconds", "Time taken by various parts of the autoscaler's main loop.",
            ["function"], buckets=_BUCKETS, registry=r)
        self.errors_total = Counter(f"{CA}_errors_total", "Errors met by the autoscaler's main loop, by type.",
                                    ["type"], registry=r)
        self.scaled_up_nodes_total = Counter(f"{CA}_scaled_up_nodes_total", "Number of nodes added.", registry=r)
        self.failed_scale_ups_total = Counter(f"{CA}_failed_scale_ups_total", "Number of times a scale-up failed.",
                                              ["reason"], registry=r)
        self.scaled_down_nodes_total = Counter(f"{CA}_scaled_down_nodes_total", "Number of nodes removed.",
                                               ["reason"], registry=r)
        self.evicted_pods_total = Counter(f"{CA}_evicted_pods_total", "Number of pods evicted during scale-down.",
                                          registry=r)
        self.failed_evictions_total = Counter(f"{CA}_failed_evictions_total",
                                              "Number of evictions refused or failed during scale-down.", ["reason"],
                                              registry=r)
        self.scale_down_in_cooldown = Gauge(f"{CA}_scale_down_in_cooldown",
                                            "Whether scale-down is in cooldown (1) or not (0).", registry=r)
        self.node_group_target_count = Gauge(f"{CA}_node_group_target_count", "Target size of each node group.",
                                             ["node_group"], registry=r)
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

    def render(self) -> bytes:
        """The text exposition of every metric (the ``/metrics`` body)."""
        return generate_latest(self.registry)

    def set_nodes(self, by_state: Mapping[str, int]) -> None:
        for state in ("ready", "unready", "notStarted", "longUnregistered", "unregistered"):
            self.nodes_count.labels(state).set(by_state.get(state, 0))

    def set_groups(self, targets: Mapping[str, int], max_total: int) -> None:
        self.node_groups_count.labels("autoscaled").set(len(targets))
        self.node_groups_count.labels("autoprovisioned").set(0)
        self.max_nodes_count.set(max_total)
        for name, target in targets.items():
            self.node_group_target_count.labels(name).set(target)

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
        for name, seconds in timings.items():
            self.function_duration_seconds.labels(name).observe(max(0.0, seconds))

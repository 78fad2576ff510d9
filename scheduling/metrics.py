"""Prometheus metrics of the scheduling side, served on ``GET /metrics`` by both servers.

One registry per server (not the process-global one), so tests and two servers in one
process do not share counters. Names follow the Prometheus conventions under a
``storage_scheduler_`` prefix: these measure our extender, not kube-scheduler (whose own
``scheduler_*`` metrics cover the extender calls from its side).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

__all__ = ["SchedulingMetrics"]

#: Filter latency buckets around the 10 ms target.
_BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.5)


@dataclass(slots=True)
class SchedulingMetrics:
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)
    filter_seconds: Histogram = field(init=False)
    failed_nodes: Counter = field(init=False)
    reservations: Gauge = field(init=False)
    reservations_refused: Counter = field(init=False)
    errors: Counter = field(init=False)
    mutations: Counter = field(init=False)

    def __post_init__(self) -> None:
        r = self.registry
        self.filter_seconds = Histogram("storage_scheduler_extender_filter_duration_seconds",
                                        "Time to answer one filter call, decoding to answer.", registry=r,
                                        buckets=_BUCKETS)
        self.failed_nodes = Counter("storage_scheduler_extender_failed_nodes_total",
                                    "Nodes refused by the filter, by reason.", ["reason"], registry=r)
        self.reservations = Gauge("storage_scheduler_extender_reservations",
                                  "Pods whose approved local bytes are held (in flight).", registry=r)
        self.reservations_refused = Counter(
            "storage_scheduler_extender_reservations_refused_total",
            "Filters that passed nodes but held no bytes: the pod, its uid or its claims are not in the view.",
            registry=r)
        self.errors = Counter("storage_scheduler_errors_total",
                              "Requests answered with an error (bad request, no complete view).", ["verb"],
                              registry=r)
        self.mutations = Counter("storage_scheduler_webhook_reviews_total",
                                 "Admission reviews, by outcome (routed, unchanged, malformed).", ["outcome"],
                                 registry=r)

"""What happened in a simulated run: the numbers a scenario report compares.

The cluster, the cloud and the storage driver record into one ``Metrics``; the
driver of the run (``python -m autoscaler simulate``) reads it at the end and calls
``sample()`` every loop for time series. Node-seconds are integrated exactly: the
cloud reports each change of a group's instance count (provisioning instances are
billed, as a cloud bills them from launch).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol

from emulator.clock import SimClock

__all__ = ["DataLossEvent", "Metrics", "PendingInterval", "Sample", "SampleSource"]


class DataLossEvent(NamedTuple):
    """A node was deleted while a PV pinned to it still held a claim's data."""

    time: float
    node: str
    pv: str


@dataclass(slots=True)
class PendingInterval:
    """One pod's wait for a node: from creation (or the scenario start) to binding."""

    pod: str
    uid: str
    created: float
    #: When the scheduler bound it; None while it waits (or if it was deleted first).
    bound: float | None = None
    #: When it was deleted while still pending.
    deleted: float | None = None

    def duration(self, now: float) -> float:
        end = self.bound if self.bound is not None else (self.deleted if self.deleted is not None else now)
        return end - self.created


@dataclass(frozen=True, slots=True)
class Sample:
    time: float
    #: Registered nodes per node group.
    nodes: Mapping[str, int]
    #: Pods not bound to a node (guard pods included: a pending guard leaves its node unprotected).
    pending: int
    #: sum(max - free) / sum(max) over nodes with both storage values; None when there are none.
    storage_utilization: float | None


class SampleSource(Protocol):
    """What ``Metrics.sample`` reads (implemented by the world)."""

    def group_node_counts(self) -> Mapping[str, int]: ...

    def pending_pod_count(self) -> int: ...

    def storage_totals(self) -> tuple[int, int]:
        """(sum of max local bytes, sum of free local bytes) over nodes with both values."""
        ...


@dataclass(slots=True)
class Metrics:
    clock: SimClock
    #: Price per hour of one node, per group (None: unknown, costs nothing in reports).
    prices: dict[str, float | None] = field(default_factory=dict)
    data_loss_events: list[DataLossEvent] = field(default_factory=list)
    #: Evictions the API server accepted / refused (a PDB allowed no disruption).
    evictions: int = 0
    refused_evictions: int = 0
    #: Volumes unpinned (snapshotted to remote storage) and restored (pinned) elsewhere.
    unpins: int = 0
    restores: int = 0
    #: Bytes of local volumes the driver unpinned (what scale-down made it move).
    bytes_unpinned: int = 0
    #: VolumeAttachments force-detached because their node was deleted before they went.
    force_detaches: int = 0
    #: Pod uid -> its pending interval, for every pod that waited for a node in the run.
    pending: dict[str, PendingInterval] = field(default_factory=dict)
    source: SampleSource | None = None
    _instances: dict[str, int] = field(default_factory=dict)
    _node_seconds: dict[str, float] = field(default_factory=dict)
    _accrued_to: float | None = None

    # --- recording (cluster, cloud, driver) ----------------------------------------------
    def _accrue(self) -> None:
        now = self.clock.now
        if self._accrued_to is not None and now > self._accrued_to:
            span = now - self._accrued_to
            for group, count in self._instances.items():
                self._node_seconds[group] = self._node_seconds.get(group, 0.0) + count * span
        self._accrued_to = now

    def set_instances(self, group: str, count: int) -> None:
        """The group now runs ``count`` instances (registered or still provisioning)."""
        self._accrue()
        self._instances[group] = count
        self._node_seconds.setdefault(group, 0.0)

    def pod_pending(self, pod: str, uid: str, created: float) -> None:
        if uid not in self.pending:
            self.pending[uid] = PendingInterval(pod, uid, created)

    def pod_bound(self, uid: str) -> None:
        interval = self.pending.get(uid)
        if interval is not None and interval.bound is None:
            interval.bound = self.clock.now

    def pod_deleted(self, uid: str) -> None:
        interval = self.pending.get(uid)
        if interval is not None and interval.bound is None and interval.deleted is None:
            interval.deleted = self.clock.now

    def data_loss(self, node: str, pv: str) -> None:
        self.data_loss_events.append(DataLossEvent(self.clock.now, node, pv))

    # --- reading ------------------------------------------------------------------
    def node_seconds_by_group(self) -> dict[str, float]:
        """Instance-seconds per group up to now."""
        self._accrue()
        return dict(self._node_seconds)

    def node_hours_by_group(self) -> dict[str, float]:
        return {g: s / 3600.0 for g, s in self.node_seconds_by_group().items()}

    def cost_by_group(self) -> dict[str, float]:
        """Cost per group up to now (node-hours x ``pricePerHour``; 0 when the price is unknown)."""
        return {g: h * (self.prices.get(g) or 0.0) for g, h in self.node_hours_by_group().items()}

    def node_hours(self) -> float:
        """Instance-hours of every group up to now."""
        return sum(self.node_hours_by_group().values())

    def cost(self) -> float:
        """Cost of every group up to now."""
        return sum(self.cost_by_group().values())

    def pending_intervals(self) -> list[tuple[float, float | None]]:
        """(created, end) per pod that waited: ``end`` is when it was bound, or deleted while still
        pending; None while it waits. Sorted by creation. ``pending`` has the details per pod."""
        ordered = sorted(self.pending.values(), key=lambda p: (p.created, p.pod, p.uid))
        return [(p.created, p.bound if p.bound is not None else p.deleted) for p in ordered]

    def sample(self) -> Sample:
        """The cluster now: nodes per group, pending pods, storage utilization (the caller keeps the series)."""
        if self.source is None:
            raise RuntimeError("Metrics.sample() needs a source (the world sets it)")
        total_max, total_free = self.source.storage_totals()
        util = (total_max - total_free) / total_max if total_max > 0 else None
        return Sample(self.clock.now, dict(self.source.group_node_counts()), self.source.pending_pod_count(), util)

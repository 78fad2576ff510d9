"""What one loop iteration leaves behind for callers: its decision, the scaling events, its time.

The loop keeps none of it: each ``LoopRecord`` is handed to the caller, so a ``run``
of months holds no more than one loop's worth. A bounded run that wants the whole
story (``simulate``'s report, tests) adds each record to a ``History``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from autoscaler.actuation.types import ActuationEvent, ActuationStatus
from autoscaler.runonce import LoopDecision

__all__ = ["EventKind", "History", "LoopRecord", "ScaleEvent"]


class EventKind(StrEnum):
    SCALE_UP = "ScaleUp"
    #: ``increase_size`` failed, or requested instances failed to be created.
    SCALE_UP_FAILED = "ScaleUpFailed"
    #: Requested instances did not register within ``--max-node-provision-time``.
    SCALE_UP_TIMED_OUT = "ScaleUpTimedOut"
    SCALE_DOWN_STARTED = "ScaleDownStarted"


@dataclass(frozen=True, slots=True)
class ScaleEvent:
    time: float
    kind: EventKind
    group: str
    nodes: int
    detail: str


@dataclass(frozen=True, slots=True)
class LoopRecord:
    decision: LoopDecision
    #: Wall seconds the iteration took (decision and actuation).
    wall_seconds: float
    events: tuple[ScaleEvent, ...]
    #: What the actuator did in this iteration.
    actuation: ActuationStatus = field(default_factory=ActuationStatus)


@dataclass(slots=True)
class History:
    """Every scale event and actuation event of the records added, in order (grows with the run)."""

    events: list[ScaleEvent] = field(default_factory=list)
    actuation: list[ActuationEvent] = field(default_factory=list)

    def add(self, record: LoopRecord) -> LoopRecord:
        self.events.extend(record.events)
        self.actuation.extend(record.actuation.events)
        return record

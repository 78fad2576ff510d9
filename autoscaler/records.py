"""What one loop iteration leaves behind for callers: its decision, the scaling events, its time."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from autoscaler.actuation.types import ActuationStatus
from autoscaler.runonce import LoopDecision

__all__ = ["EventKind", "LoopRecord", "ScaleEvent"]


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

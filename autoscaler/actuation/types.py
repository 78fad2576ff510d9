"""What the actuator reports to the loop after each step: frozen, so only the loop keeps state from it."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from autoscaler.scaledown.throughput import DrainObservation

__all__ = ["ActuationEvent", "ActuationKind", "ActuationStatus"]


class ActuationKind(StrEnum):
    TAINTED = "Tainted"
    EVICTED = "Evicted"
    DELETED = "Deleted"
    FAILED = "Failed"
    UNTAINTED = "Untainted"
    #: The drain is done; the node's VolumeAttachments are awaited before it is deleted.
    WAITING_FOR_DETACH = "WaitingForVolumeDetach"
    #: ``--max-volume-detach-time`` passed with VolumeAttachments left: deleted anyway.
    VOLUMES_NOT_DETACHED = "VolumesNotDetached"


@dataclass(frozen=True, slots=True)
class ActuationEvent:
    """Something the actuator did or gave up on (for events, metrics and reports)."""

    time: float
    node: str
    kind: ActuationKind
    message: str = ""


@dataclass(frozen=True, slots=True)
class ActuationStatus:
    """One actuator step: what happened, and which deletions are still under way."""

    events: tuple[ActuationEvent, ...] = ()
    #: Nodes whose deletion is in progress after this step.
    in_progress: frozenset[str] = frozenset()
    #: Nodes whose deletion this step started (tainted).
    started: tuple[str, ...] = ()
    #: Drains with bytes to unpin that ended this step, for the loop's throughput estimate.
    drains: tuple[DrainObservation, ...] = ()
    #: Bytes of local volumes the deletions in progress after this step unpin (the budget's count).
    unpin_bytes_in_flight: int = 0

    @property
    def deleted(self) -> tuple[str, ...]:
        return tuple(e.node for e in self.events if e.kind is ActuationKind.DELETED)

    @property
    def failed(self) -> tuple[str, ...]:
        return tuple(e.node for e in self.events if e.kind is ActuationKind.FAILED)

    def then(self, later: ActuationStatus) -> ActuationStatus:
        """This step followed by ``later``: events and drains of both, ``later``'s in-progress set and bytes."""
        return ActuationStatus(self.events + later.events, later.in_progress, self.started + later.started,
                               self.drains + later.drains, later.unpin_bytes_in_flight)

"""The scale-down planner's results and the memory it keeps between loops."""

from __future__ import annotations

from dataclasses import dataclass, field

from simulator.drainability import NodeDrain

__all__ = ["RemovalCandidate", "ScaleDownMemory", "ScaleDownPlan", "Unremovable"]


@dataclass(frozen=True, slots=True)
class Unremovable:
    node: str
    reason: str
    detail: str = ""


@dataclass(frozen=True, slots=True)
class RemovalCandidate:
    """A node the simulation can remove: its pods to move and where they would go."""

    node: str
    group: str
    ready: bool
    drain: NodeDrain
    #: pod ref -> destination node name (for events and the actuator's logs).
    destinations: dict[str, str]

    @property
    def empty(self) -> bool:
        return not self.drain.to_move


@dataclass(slots=True)
class ScaleDownPlan:
    #: ScaledDown, NoNodesRemoved or Skipped (plan-contract.md).
    result: str
    removed: list[str] = field(default_factory=list)
    unneeded: list[str] = field(default_factory=list)
    unremovable: list[Unremovable] = field(default_factory=list)
    skipped_because: str = ""
    #: The chosen nodes with what actuation needs (pods to evict, guards).
    to_delete: list[RemovalCandidate] = field(default_factory=list)
    #: Why nothing is deleted although nodes are unneeded (cooldown, not long enough).
    waiting: str = ""

    @classmethod
    def skipped(cls, why: str) -> ScaleDownPlan:
        return cls("Skipped", skipped_because=why)


@dataclass(slots=True)
class ScaleDownMemory:
    """What the live loop remembers between iterations (``plan`` starts empty, at steady state)."""

    #: node -> when it was first seen unneeded (seconds since the epoch).
    unneeded_since: dict[str, float] = field(default_factory=dict)
    last_scale_up: float | None = None
    last_scale_down: float | None = None
    last_failure: float | None = None
    #: Drained nodes whose deletion is still in progress (the actuator fills this in).
    deletions_in_progress: set[str] = field(default_factory=set)

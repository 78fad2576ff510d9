"""The scale-down planner's results and the memory the loop keeps between loops.

Outcomes are enums whose values are upstream's words (``plan``'s JSON prints the
values, so they must not change); results are frozen: the planner builds them once
and nobody edits them afterwards.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING

from autoscaler.scaledown.throughput import UnpinThroughput
from simulator.drainability import NodeDrain

if TYPE_CHECKING:
    from autoscaler.scaledown.reuse import PassRecord

__all__ = [
    "SIMULATION_TIMED_OUT",
    "RemovalCandidate",
    "ScaleDownMemory",
    "ScaleDownPlan",
    "ScaleDownResult",
    "Unremovable",
    "UnremovableReason",
]


#: The detail of a candidate the pass had no time left for (its verdict depends on the clock).
SIMULATION_TIMED_OUT = "scale-down simulation timed out (--scale-down-simulation-timeout)"


class ScaleDownResult(StrEnum):
    """plan-contract.md's ``scaleDown.result``."""

    SCALED_DOWN = "ScaledDown"
    NO_NODES_REMOVED = "NoNodesRemoved"
    SKIPPED = "Skipped"


class UnremovableReason(StrEnum):
    """Why a node is kept (upstream ``simulator.UnremovableReason``, plus the storage ones)."""

    CURRENTLY_BEING_DELETED = "CurrentlyBeingDeleted"
    SCALE_DOWN_DISABLED_ANNOTATION = "ScaleDownDisabledAnnotation"
    NOT_AUTOSCALED = "NotAutoscaled"
    SCALE_DOWN_UNREADY_DISABLED = "ScaleDownUnreadyDisabled"
    NOT_UNNEEDED_LONG_ENOUGH = "NotUnneededLongEnough"
    NOT_UNREADY_LONG_ENOUGH = "NotUnreadyLongEnough"
    NOT_UNDERUTILIZED = "NotUnderutilized"
    NODE_GROUP_MIN_SIZE_REACHED = "NodeGroupMinSizeReached"
    MINIMAL_RESOURCE_LIMIT_EXCEEDED = "MinimalResourceLimitExceeded"
    BLOCKED_BY_POD = "BlockedByPod"
    NO_PLACE_TO_MOVE_PODS = "NoPlaceToMovePods"
    #: A ``safe-to-evict: "on-completion"`` pod still runs there (upstream's planner, ``NodesToDelete``).
    BLOCKED_BY_ON_COMPLETION_POD = "BlockedByOnCompletionPod"
    NODE_HAS_LOCAL_VOLUMES = "NodeHasLocalVolumes"
    UNEXPECTED_ERROR = "UnexpectedError"


@dataclass(frozen=True, slots=True)
class Unremovable:
    node: str
    #: An ``UnremovableReason``; a plain string of the same value compares equal.
    reason: str
    detail: str = ""

    def __post_init__(self) -> None:
        # Every reason is one of upstream's words: a typo fails here, not in a report.
        object.__setattr__(self, "reason", UnremovableReason(self.reason))


@dataclass(frozen=True, slots=True)
class RemovalCandidate:
    """A node the simulation can remove: its pods to move and where they would go."""

    node: str
    group: str
    ready: bool
    drain: NodeDrain
    #: pod ref -> destination node name (for events and the actuator's logs).
    destinations: dict[str, str]
    #: Bytes of migratable local volumes pinned to the node: what its removal unpins.
    unpin_bytes: int = 0
    #: How long its drain may take before it is given up (s); None: ``--max-pod-eviction-time``.
    drain_seconds: float | None = None
    #: The predicted unpin time (s): ``unpin_bytes`` over the throughput the plan assumed.
    unpin_seconds: float = 0.0

    @property
    def empty(self) -> bool:
        return not self.drain.to_move


@dataclass(frozen=True, slots=True)
class ScaleDownPlan:
    result: ScaleDownResult
    #: Sorted node names. Lists for the readers' convenience; nobody appends after the planner.
    removed: list[str] = field(default_factory=list)
    unneeded: list[str] = field(default_factory=list)
    unremovable: list[Unremovable] = field(default_factory=list)
    skipped_because: str = ""
    #: The chosen nodes with what actuation needs (pods to evict, guards).
    to_delete: list[RemovalCandidate] = field(default_factory=list)
    #: Why nothing is deleted although nodes are unneeded (cooldown, not long enough).
    waiting: str = ""
    #: node -> since when it has been unneeded, as of this loop: the loop stores it as the
    #: next loop's ``ScaleDownMemory.unneeded_since`` (the planner never writes memory).
    unneeded_since: Mapping[str, float] = field(default_factory=dict)
    #: The removal pass's inputs and verdicts, for the loop to keep as the next loop's
    #: ``ScaleDownMemory.last_pass`` (``reuse.py``); None when there is nothing to keep.
    last_pass: PassRecord | None = None
    #: node -> bytes of migratable local volumes its removal would unpin, as the pass ordered
    #: candidates by them (``cost.py``); ``explain`` reads it rather than count again.
    unpin_bytes: Mapping[str, int] = field(default_factory=dict)
    #: The unpin throughput (bytes/s) observed on earlier drains (``throughput.py``) the drain
    #: deadlines assumed; None: none observed yet, so ``--storage-unpin-throughput`` with
    #: ``cost.PRIOR_MARGIN`` (or not planned).
    unpin_bytes_per_second: float | None = None

    @classmethod
    def skipped(cls, why: str, unneeded_since: Mapping[str, float] | None = None,
                last_pass: PassRecord | None = None) -> ScaleDownPlan:
        """Nothing planned; ``unneeded_since`` and ``last_pass`` carry the memory over unchanged (upstream keeps it)."""
        return cls(ScaleDownResult.SKIPPED, skipped_because=why, unneeded_since=dict(unneeded_since or {}),
                   last_pass=last_pass)


@dataclass(frozen=True, slots=True)
class ScaleDownMemory:
    """What the loop remembers between iterations (``plan`` starts empty, at steady state).

    Frozen: only the loop replaces it (``dataclasses.replace``) with what a loop's plan
    and the actuator's status report; planners read it.
    """

    #: node -> when it was first seen unneeded (seconds since the epoch).
    unneeded_since: Mapping[str, float] = field(default_factory=dict)
    last_scale_up: float | None = None
    last_scale_down: float | None = None
    last_failure: float | None = None
    #: Drained nodes whose deletion is still in progress (as the actuator last reported).
    deletions_in_progress: frozenset[str] = frozenset()
    #: The last removal pass, reused while nothing it read has changed (``reuse.py``).
    last_pass: PassRecord | None = None
    #: node -> its deletions that failed in a row (a drain given up at its deadline, mostly);
    #: each doubles the node's next drain deadline (``cost.drain_deadline``).
    drain_failures: Mapping[str, int] = field(default_factory=dict)
    #: The unpin throughput observed on earlier drains (``throughput.py``).
    unpin_throughput: UnpinThroughput = field(default_factory=UnpinThroughput)

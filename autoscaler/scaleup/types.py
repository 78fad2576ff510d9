"""Scale-up's result: frozen once the orchestrator has decided.

The orchestrator fills a private draft while it works and freezes it into a
``ScaleUpPlan`` when it returns; the loop, ``plan``'s output and the tests read it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from enum import StrEnum

from autoscaler.expander import ExpansionOption
from kube.model import Pod

__all__ = ["Cause", "Increase", "Refusal", "ScaleUpDraft", "ScaleUpPlan", "ScaleUpResult"]


class ScaleUpResult(StrEnum):
    """plan-contract.md's ``scaleUp.result``."""

    SCALED_UP = "ScaledUp"
    NO_SCALE_UP = "NoScaleUp"
    NOT_NEEDED = "NotNeeded"


class Cause(StrEnum):
    """Why a group does not help a pod when no scheduler plugin refused it: the autoscaler's own causes."""

    BACKOFF = "Backoff"
    NO_TEMPLATE = "NoTemplate"
    MAX_SIZE_REACHED = "MaxSizeReached"
    MAX_NODES_TOTAL = "MaxNodesTotalReached"
    ESTIMATOR_LIMIT = "EstimatorLimitReached"
    RESOURCE_LIMIT = "ResourceLimitReached"
    NOT_CHOSEN = "AnotherOptionChosen"


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why one group does not help one pod: the line ``plan`` prints and who said it.

    ``plugin`` is the kube-scheduler filter that refused the pod on the group's template
    (``VolumeBinding``, ``TaintToleration``, ...) or one of the autoscaler's ``Cause``s.
    """

    reason: str
    plugin: str


@dataclass(frozen=True, slots=True)
class Increase:
    group: str
    delta: int
    new_size: int


@dataclass(frozen=True, slots=True)
class ScaleUpPlan:
    result: ScaleUpResult
    increases: list[Increase] = field(default_factory=list)
    triggered_by: list[Pod] = field(default_factory=list)
    #: pod -> group -> why that group does not help it.
    still_unschedulable: dict[str, dict[str, str]] = field(default_factory=dict)
    #: The same refusals with the plugin or cause behind each (``explain`` reads them).
    refusals: dict[str, dict[str, Refusal]] = field(default_factory=dict)
    options: list[ExpansionOption] = field(default_factory=list)
    #: Pending pods placed on existing or upcoming nodes by filter-out-schedulable.
    fits_existing: list[Pod] = field(default_factory=list)
    fits_upcoming: list[Pod] = field(default_factory=list)
    #: Pending pods not yet marked unschedulable by the scheduler (not considered).
    not_processed: list[Pod] = field(default_factory=list)
    chosen: str | None = None
    notes: list[str] = field(default_factory=list)
    #: Where filter-out-schedulable put each pod: (pod, node name). The placements stay
    #: in the loop's snapshot, so scale-down plans with them (upstream CA).
    placed: list[tuple[Pod, str]] = field(default_factory=list)


@dataclass(slots=True)
class ScaleUpDraft:
    """The orchestrator's working copy; ``freeze`` makes the plan."""

    result: ScaleUpResult
    increases: list[Increase] = field(default_factory=list)
    triggered_by: list[Pod] = field(default_factory=list)
    #: pod -> group -> refusal, for the pods still unschedulable when the draft is frozen.
    refusals: dict[str, dict[str, Refusal]] = field(default_factory=dict)
    options: list[ExpansionOption] = field(default_factory=list)
    fits_existing: list[Pod] = field(default_factory=list)
    fits_upcoming: list[Pod] = field(default_factory=list)
    not_processed: list[Pod] = field(default_factory=list)
    chosen: str | None = None
    notes: list[str] = field(default_factory=list)
    placed: list[tuple[Pod, str]] = field(default_factory=list)

    def freeze(self) -> ScaleUpPlan:
        # By name: several fields share a type (lists of pods), so a positional copy could
        # swap two of them silently when a field is added or moved.
        lines = {ref: {g: r.reason for g, r in by_group.items()} for ref, by_group in self.refusals.items()}
        return ScaleUpPlan(still_unschedulable=lines, **{f.name: getattr(self, f.name) for f in fields(self)})

"""Scale-down planning (placeholder until the scale-down planner lands)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class Unremovable:
    node: str
    reason: str
    detail: str = ""


@dataclass(slots=True)
class ScaleDownPlan:
    result: str
    removed: list[str] = field(default_factory=list)
    unneeded: list[str] = field(default_factory=list)
    unremovable: list[Unremovable] = field(default_factory=list)
    skipped_because: str = ""

    @classmethod
    def skipped(cls, why: str) -> ScaleDownPlan:
        return cls("Skipped", skipped_because=why)


@dataclass(slots=True)
class ScaleDownMemory:
    pass


def plan_scale_down(sim: Any, memory: ScaleDownMemory, steady_state: bool) -> ScaleDownPlan:
    return ScaleDownPlan.skipped("not implemented yet")

"""Cluster-wide threshold scale-down (seed 001). Placeholder until implemented."""

from __future__ import annotations

from collections.abc import Callable

from autoscaler.scaledown.eligibility import Candidate
from autoscaler.scaledown.types import RemovalCandidate, Unremovable
from autoscaler.simulation import Simulation


def plan_cluster_wide(sim: Simulation, ordered: list[Candidate], local_volumes: dict[str, list[str]],
                      clock: Callable[[], float]) -> tuple[list[RemovalCandidate], list[Unremovable]]:
    raise NotImplementedError

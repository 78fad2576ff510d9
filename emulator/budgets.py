"""PodDisruptionBudgets as the disruption controller keeps them: ``disruptionsAllowed`` computed live.

A snapshot carries ``status.disruptionsAllowed`` as the controller last wrote it; the
simulated API server instead keeps the budget's spec (``minAvailable`` or
``maxUnavailable``, integers or percentages) and computes the allowance from the pods
that match it, every time it is read. This is what makes a storage guard's PDB
(``minAvailable: 1`` over its one pod) refuse evictions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from kube.convert import FieldError, convert_pdb
from kube.model import LabelSelector, PodDisruptionBudget

__all__ = ["IntOrPercent", "PdbSpec", "parse_pdb"]


@dataclass(frozen=True, slots=True)
class IntOrPercent:
    value: int
    percent: bool = False

    def scaled(self, total: int) -> int:
        """As Kubernetes scales it for budgets: percentages round up."""
        return math.ceil(self.value * total / 100) if self.percent else self.value


def _int_or_percent(raw: object, field: str) -> IntOrPercent | None:
    if raw is None:
        return None
    if isinstance(raw, int) and not isinstance(raw, bool) and raw >= 0:
        return IntOrPercent(raw)
    if isinstance(raw, str):
        text = raw.strip()
        if text.endswith("%") and text[:-1].isdigit():
            return IntOrPercent(int(text[:-1]), percent=True)
        if text.isdigit():
            return IntOrPercent(int(text))
    raise FieldError(field, f"{raw!r} is not a non-negative integer or percentage (e.g. 1, 50%)")


@dataclass(frozen=True, slots=True)
class PdbSpec:
    namespace: str
    name: str
    selector: LabelSelector | None
    min_available: IntOrPercent | None
    max_unavailable: IntOrPercent | None

    @property
    def key(self) -> tuple[str, str]:
        return (self.namespace, self.name)

    def disruptions_allowed(self, healthy: int, expected: int) -> int:
        """The disruption controller's rule; ``expected`` is the number of matching pods."""
        if self.max_unavailable is not None:
            desired = expected - self.max_unavailable.scaled(expected)
        elif self.min_available is not None:
            desired = self.min_available.scaled(expected)
        else:
            desired = 1  # policy/v1beta1 defaulting: minAvailable 1
        return max(0, healthy - desired)

    def status(self, healthy: int, expected: int) -> PodDisruptionBudget:
        return PodDisruptionBudget(self.namespace, self.name, self.selector,
                                   self.disruptions_allowed(healthy, expected))


def parse_pdb(obj: dict[str, Any]) -> PdbSpec:
    """A ``PodDisruptionBudget`` object; raises ``FieldError`` on bad fields."""
    model = convert_pdb(obj)
    spec = obj.get("spec") or {}
    min_available = _int_or_percent(spec.get("minAvailable"), "spec.minAvailable")
    max_unavailable = _int_or_percent(spec.get("maxUnavailable"), "spec.maxUnavailable")
    if min_available is not None and max_unavailable is not None:
        raise FieldError("spec.maxUnavailable", "minAvailable and maxUnavailable are mutually exclusive")
    return PdbSpec(model.namespace, model.name, model.selector, min_available, max_unavailable)

"""Which storage-driver fault (``spec.storageDriverFaults``) holds on a node now.

Read by the storage driver (``storage_driver.py``: slow, stuck or absent unpinning)
and the guard operator (``guard.py``: no guard pod or budget), so a scenario can show
what the autoscaler does when the driver it relies on is late or missing: the
actuator must then wait for the unpin itself and never delete a node that still
holds a pinned volume (storage-semantics 3.7).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from emulator.clock import SimClock
from emulator.scenario import DriverFault, DriverFaultKind

__all__ = ["DriverFaults"]


class DriverFaults:
    def __init__(self, faults: Sequence[DriverFault], clock: SimClock, start: float,
                 group_of: Callable[[str], str | None]) -> None:
        self.faults = tuple(faults)
        self.clock = clock
        self.start = start
        #: node name -> its node group's name (None when it has none).
        self.group_of = group_of

    def _active(self, node: str) -> list[DriverFault]:
        if not self.faults:
            return []
        elapsed = self.clock.now - self.start
        group = self.group_of(node)
        return [f for f in self.faults if f.start <= elapsed < f.end and f.group in ("", group)]

    def kinds(self, node: str) -> set[DriverFaultKind]:
        return {f.kind for f in self._active(node)}

    def unpins(self, node: str) -> bool:
        """False while the driver unpins nothing on ``node`` (stuck or absent)."""
        return not self.kinds(node) & {DriverFaultKind.STUCK_UNPIN, DriverFaultKind.NO_DRIVER}

    def guarded(self, node: str) -> bool:
        """False while the operator keeps no guard on ``node``."""
        return not self.kinds(node) & {DriverFaultKind.NO_GUARD, DriverFaultKind.NO_DRIVER}

    def unpin_seconds_per_gib(self, node: str, default: float) -> float:
        slow = [f.unpin_seconds_per_gib for f in self._active(node) if f.kind is DriverFaultKind.SLOW_UNPIN]
        return max(slow, default=default)

    def boundaries(self) -> list[float]:
        """Scenario-relative times at which some fault starts or ends (the world re-reconciles then)."""
        return sorted({t for f in self.faults for t in (f.start, f.end)})

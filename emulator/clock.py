"""The simulated world's one clock: seconds since the epoch, moved forward only by ``World.advance``.

Injected into every part of the world (cluster, cloud, controllers, storage driver,
metrics) so that nothing reads the wall clock: a 24-hour scenario runs in seconds and
runs the same way every time.
"""

from __future__ import annotations

__all__ = ["SimClock"]


class SimClock:
    """A monotonic simulated clock."""

    __slots__ = ("_now",)

    def __init__(self, start: float) -> None:
        self._now = float(start)

    @property
    def now(self) -> float:
        return self._now

    def advance_to(self, when: float) -> None:
        """Move to ``when``; moving backwards is a bug in the caller."""
        if when < self._now:
            raise ValueError(f"the simulated clock cannot go back from {self._now} to {when}")
        self._now = float(when)

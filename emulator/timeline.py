"""The world's future: timed actions (scenario events, nodes becoming Ready, the storage
driver starting or finishing an unpin), run in time order by ``World.advance``.

Actions are plain callables; one that became moot (a cancelled unpin, a node deleted
before its driver started) checks its own preconditions and does nothing.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["Timeline"]


@dataclass(order=True, slots=True)
class _Entry:
    at: float
    seq: int
    label: str = field(compare=False)
    action: Callable[[], None] = field(compare=False)


class Timeline:
    """A heap of timed actions; equal times run in the order scheduled."""

    def __init__(self) -> None:
        self._heap: list[_Entry] = []
        self._seq = 0

    def schedule(self, at: float, label: str, action: Callable[[], None]) -> None:
        self._seq += 1
        heapq.heappush(self._heap, _Entry(at, self._seq, label, action))

    def next_time(self) -> float | None:
        return self._heap[0].at if self._heap else None

    def pop_due(self, now: float) -> Callable[[], None] | None:
        """The next action due at or before ``now``, or None."""
        if self._heap and self._heap[0].at <= now:
            return heapq.heappop(self._heap).action
        return None

    def labels(self) -> list[tuple[float, str]]:
        """What is scheduled, in time order (for tests and debugging)."""
        return [(e.at, e.label) for e in sorted(self._heap)]

    def __len__(self) -> int:
        return len(self._heap)

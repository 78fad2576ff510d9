"""The storage driver's unpin throughput as observed on earlier drains (issue 21, item 2).

``--storage-unpin-throughput`` is the prior: what a drain deadline assumes until a
drain has been watched. The actuator reports each drain of a node with bytes to unpin
that ended (``DrainObservation``: its volumes found unpinned, or given up at its
deadline with them still pinned); the loop, the only writer, folds them in here and
keeps the result in ``ScaleDownMemory``; the planner reads the estimate for the next
deadlines (``cost.drain_deadline``). ``run`` and ``simulate`` share it, so a slow
driver gets longer deadlines after its first slow drain.

Which observations count:

* a drain given up at its deadline with the bytes still pinned always counts, as
  bytes / the seconds it was given: the true throughput was lower than that;
* a drain whose volumes were unpinned counts when it took longer than
  ``--max-pod-eviction-time``: a shorter one fitted the deadline's floor whatever the
  throughput, and its bytes / seconds measures pod eviction, termination and the loop
  interval more than unpinning (one 1 GiB volume unpinned in a 30 s drain would claim
  35 MiB/s and give a 2 TiB node a 34-hour deadline).

The estimate is the slowest of the last ``HISTORY`` observations. A deadline too short
fails a drain that would have finished (a scale-down failure, the node retried from
the start); one too long only holds a stuck drain longer. So the estimate errs slow,
and forgets: an observation older than ``HISTORY`` drains no longer counts, so a driver
that got faster (or one stall) does not set deadlines for ever.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["HISTORY", "DrainObservation", "UnpinThroughput"]

#: How many recent drains the estimate remembers.
HISTORY = 20


@dataclass(frozen=True, slots=True)
class DrainObservation:
    """A drain with bytes to unpin that ended: how many bytes, and how long it ran (s)."""

    node: str
    unpin_bytes: int
    seconds: float
    #: True: its volumes were found unpinned; False: given up at its deadline, still pinned.
    unpinned: bool


@dataclass(frozen=True, slots=True)
class UnpinThroughput:
    """The recent observations (bytes/s), oldest first, at most ``HISTORY``."""

    observations: tuple[float, ...] = ()

    def observed(self, drain: DrainObservation, floor_seconds: float) -> UnpinThroughput:
        """With ``drain`` added when it counts (module docstring); ``floor_seconds``: ``--max-pod-eviction-time``."""
        if drain.unpin_bytes <= 0 or drain.seconds <= 0:
            return self
        if drain.unpinned and drain.seconds <= floor_seconds:
            return self
        return UnpinThroughput((*self.observations, drain.unpin_bytes / drain.seconds)[-HISTORY:])

    @property
    def estimate(self) -> float | None:
        """Bytes/s the next drain deadlines assume; None before any drain counted (the flag then)."""
        return min(self.observations) if self.observations else None

    def bytes_per_second(self, prior: float) -> float:
        """The estimate, or ``prior`` (``--storage-unpin-throughput``) while there is none."""
        estimate = self.estimate
        return prior if estimate is None else estimate

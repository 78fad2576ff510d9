"""Per-group exponential backoff after failed scale-ups (upstream ``utils/backoff/exponential_backoff.go``).

A failed scale-up backs its group off for the initial duration
(``--initial-node-group-backoff-duration``, 5 min) up to and including its end; a
failure after the backoff ran out doubles it, up to ``--max-node-group-backoff-duration``
(30 min); a failure while still backed off (several requests failing together) keeps
the current duration. Entries whose last failure is older than
``--node-group-backoff-reset-timeout`` (3 h) are forgotten, so the next failure starts
again at the initial duration. As upstream today, a scale-up that completes does not
reset the entry: only time does.

Pure bookkeeping: the loop owns one, passes ``now`` in, and is the only caller.
"""

from __future__ import annotations

from dataclasses import dataclass

from cloudproviders.interface import InstanceErrorClass

__all__ = ["BackoffEntry", "GroupBackoff"]


@dataclass(frozen=True, slots=True)
class BackoffEntry:
    #: The current backoff length (s); the next failure after ``until`` doubles it.
    duration: float
    until: float
    last_failure: float
    error_class: InstanceErrorClass
    #: What failed, for the skipped reason and events ("OutOfCapacity: no c5d.4xlarge in us-east-1a").
    message: str

    @property
    def reason(self) -> str:
        return f"{self.error_class.value}: {self.message}" if self.message else self.error_class.value


class GroupBackoff:
    """Backoff state per node group; see the module docstring."""

    def __init__(self, initial: float = 300.0, maximum: float = 1800.0, reset_after: float = 10800.0) -> None:
        if not 0 < initial <= maximum:
            raise ValueError(f"backoff: need 0 < initial ({initial}) <= maximum ({maximum})")
        self.initial = initial
        self.maximum = maximum
        self.reset_after = reset_after
        self._entries: dict[str, BackoffEntry] = {}

    def fail(self, group: str, error_class: InstanceErrorClass, message: str, now: float) -> BackoffEntry:
        """Record a failed scale-up of ``group`` at ``now``; returns the entry (``until`` is when it ends)."""
        previous = self._entries.get(group)
        duration = self.initial
        if previous is not None:
            # Several failures of one scale-up arrive together: only a failure after the
            # backoff ran out makes the next one longer (upstream's rule).
            duration = min(2 * previous.duration, self.maximum) if previous.until < now else previous.duration
        entry = BackoffEntry(duration, now + duration, now, error_class, message)
        self._entries[group] = entry
        return entry

    def forget_stale(self, now: float) -> None:
        """Drop entries whose last failure is older than the reset timeout."""
        for group, entry in list(self._entries.items()):
            if entry.last_failure + self.reset_after < now:
                del self._entries[group]

    def status(self, group: str, now: float) -> BackoffEntry | None:
        """The entry if ``group`` is backed off at ``now`` (its end included), else None."""
        entry = self._entries.get(group)
        return entry if entry is not None and now <= entry.until else None

    def backed_off(self, now: float) -> dict[str, str]:
        """Groups backed off at ``now`` -> why (what the scale-up planner skips)."""
        return {g: e.reason for g, e in sorted(self._entries.items()) if now <= e.until}

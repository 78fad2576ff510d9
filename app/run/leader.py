"""Who may act: the leadership seam ``run`` checks before every loop and every change.

The live adapter provides the ``coordination.k8s.io/v1`` Lease elector; ``--leader-elect=false``
uses ``AlwaysLeader``. ``is_leader()`` must be cheap and must turn False as soon as the
lease can no longer be renewed within the renew deadline, since the guarded seams
ask it before each taint, eviction, resize and deletion.
"""

from __future__ import annotations

from typing import Protocol

__all__ = ["AlwaysLeader", "Leadership"]


class Leadership(Protocol):
    def start(self) -> None:
        """Begin trying to acquire (and then renew) leadership in the background."""
        ...

    def is_leader(self) -> bool: ...

    def stop(self) -> None:
        """Stop renewing and release the lease if held, so a standby takes over at once."""
        ...


class AlwaysLeader:
    """``--leader-elect=false``: this replica always acts (one replica only)."""

    def start(self) -> None:
        return None

    def is_leader(self) -> bool:
        return True

    def stop(self) -> None:
        return None

"""The cluster seam: what the autoscaler reads from and does to Kubernetes.

The live adapter implements it with the official client over watch caches; the
simulated world (``emulator``) implements it in memory. It sits in the bottom layer
so both sides share its types without importing each other. The loop, the planners
and the actuator only see this.

Expected outcomes are values (``EvictionResult``); failures are typed errors the
caller can act on without parsing strings:

* ``ViewUnavailable``: the adapter cannot give a complete, current view (caches not
  synced, a watch lost): the loop skips, it never decides on a partial view.
* ``NotFound`` (404), ``Conflict`` (409, a stale resourceVersion: re-read and retry),
  ``TransientAPIError`` (429 throttling, 5xx, timeouts; ``retry_after`` seconds).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Protocol, runtime_checkable

from kube.model import ClusterObjects, Pod, Taint

__all__ = [
    "ClusterAPI",
    "ClusterAPIError",
    "Conflict",
    "Eviction",
    "EvictionResult",
    "NodeAnnotator",
    "NotFound",
    "TransientAPIError",
    "ViewUnavailable",
]


class ClusterAPIError(Exception):
    """A call to the cluster failed; the subclasses say how."""


class NotFound(ClusterAPIError):
    """The object does not exist (HTTP 404)."""


class Conflict(ClusterAPIError):
    """The object changed since it was read (HTTP 409): re-read and try again."""


class TransientAPIError(ClusterAPIError):
    """Throttling, a server error or a timeout: worth retrying after ``retry_after`` seconds."""

    def __init__(self, message: str, retry_after: float = 1.0) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class ViewUnavailable(ClusterAPIError):
    """No complete, current view of the cluster now (caches not synced, a watch lost)."""


class Eviction(Enum):
    #: The server accepted the eviction: the pod is terminating (its grace period runs).
    EVICTED = "Evicted"
    #: A PodDisruptionBudget forbids it now (HTTP 429): retry later.
    REFUSED = "Refused"
    #: The pod no longer exists (HTTP 404): nothing to wait for.
    GONE = "Gone"


@dataclass(frozen=True, slots=True)
class EvictionResult:
    outcome: Eviction
    message: str = ""


@runtime_checkable
class NodeAnnotator(Protocol):
    """Optional: write one annotation on a node (``explain``'s verdict for ``kubectl describe node``)."""

    def annotate_node(self, node: str, key: str, value: str | None) -> None:
        """Set ``key`` to ``value`` (None removes it); raises ``NotFound``."""
        ...


class ClusterAPI(Protocol):
    def list_objects(self) -> ClusterObjects:
        """A consistent view of every object the autoscaler reads (nodes, pods, PVs, ...).

        Raises ``ViewUnavailable`` rather than return a partial view.
        """
        ...

    def pods_on_node(self, node: str) -> Sequence[Pod]:
        """The pods bound to ``node`` now, terminating ones included (to see a drain finish)."""
        ...

    def taint_node(self, node: str, taint: Taint) -> None:
        """Add ``taint`` (no-op if a taint with that key is present); raises ``NotFound``."""
        ...

    def untaint_node(self, node: str, key: str) -> None:
        """Remove taints with ``key`` (no-op if none); raises ``NotFound``."""
        ...

    def evict_pod(self, namespace: str, name: str, grace_period_seconds: int | None = None) -> EvictionResult:
        """The Eviction API: PDBs are honoured by the server; a refusal is retryable.

        ``grace_period_seconds``: the deletion's grace period (None: the pod's own).
        """
        ...

    def record_event(self, kind: str, namespace: str, name: str, reason: str, message: str, *,
                     warning: bool = False) -> None:
        """A Kubernetes Event about an object (``kind`` Node, Pod, ...)."""
        ...

    def write_status(self, text: str) -> None:
        """The ``cluster-autoscaler-status`` ConfigMap's ``status`` key."""
        ...

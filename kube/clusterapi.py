"""The cluster seam: what the autoscaler reads from and does to Kubernetes.

The live adapter implements it with the official client; the simulated world
(``emulator``) implements it in memory. It sits in the bottom layer so both sides
can share its types without importing each other. The loop, the planners and the actuator only see this.
Expected refusals are values or typed errors, never strings to parse.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Protocol

from kube.model import ClusterObjects, Taint

__all__ = ["ClusterAPI", "ClusterAPIError", "Eviction", "EvictionResult"]


class ClusterAPIError(Exception):
    """A call to the cluster failed (network, server error); the caller may retry."""


class Eviction(Enum):
    #: The pod is being evicted (or was already gone).
    EVICTED = "Evicted"
    #: A PodDisruptionBudget forbids it now (HTTP 429): retry later.
    REFUSED = "Refused"


@dataclass(frozen=True, slots=True)
class EvictionResult:
    outcome: Eviction
    message: str = ""


class ClusterAPI(Protocol):
    def list_objects(self) -> ClusterObjects:
        """A consistent view of every object the autoscaler reads (nodes, pods, PVs, ...)."""
        ...

    def taint_node(self, node: str, taint: Taint) -> None:
        """Add ``taint`` (no-op if a taint with that key is present)."""
        ...

    def untaint_node(self, node: str, key: str) -> None:
        """Remove taints with ``key`` (no-op if none)."""
        ...

    def evict_pod(self, namespace: str, name: str) -> EvictionResult:
        """The Eviction API: PDBs are honoured by the server, a refusal is retryable."""
        ...

    def delete_pod(self, namespace: str, name: str) -> None: ...

    def record_event(self, kind: str, namespace: str, name: str, reason: str, message: str, *,
                     warning: bool = False) -> None:
        """A Kubernetes Event about an object (``kind`` Node, Pod, ...)."""
        ...

    def write_status(self, text: str) -> None:
        """The ``cluster-autoscaler-status`` ConfigMap's ``status`` key."""
        ...

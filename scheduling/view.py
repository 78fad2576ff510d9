"""Where the scheduling side reads the cluster from: a versioned view of the watch caches.

The extender and the webhook never list the API themselves. They read nodes, pods,
claims, volumes, classes and CSI capacities from a ``ClusterView``: in a live
deployment the Kubernetes adapter's watch caches, in tests and in the simulated world
a ``StaticView`` that a test (or the emulator) fills. Two version counters let the
extender rebuild its per-node arrays only when nodes changed, and its volume index
only when storage objects changed, instead of on every request.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from kube.model import ClusterObjects, Node, Pod

__all__ = ["ClusterView", "StaticView", "ViewState"]


@dataclass(frozen=True, slots=True)
class ViewState:
    """One consistent read of the view.

    ``nodes_version`` changes whenever a node was added, removed or changed;
    ``storage_version`` whenever a claim, volume, class, CSI driver or capacity did.
    ``objects`` holds claims, volumes, storage classes, CSI drivers and capacities
    (its ``nodes`` and ``pods`` lists may be empty: read ``nodes`` and ``pods``).
    ``pod(namespace, name)`` finds a pod, or is None when the view does not watch pods.
    """

    nodes_version: int
    nodes: tuple[Node, ...]
    storage_version: int
    objects: ClusterObjects
    pod: Callable[[str, str], Pod | None] | None


class ClusterView(Protocol):
    """A read-only, versioned view of the cluster objects the scheduling side needs."""

    def read(self) -> ViewState:
        """The current state; cheap (no copy of unchanged objects).

        Raises ``kube.clusterapi.ViewUnavailable`` when the view is not complete and
        current (a cache not synced, a watch lost): nothing may be decided on it."""
        ...


@dataclass(slots=True)
class StaticView:
    """A view whose contents are set by its owner (tests, the simulated world, ``--snapshot``)."""

    _state: ViewState = field(default_factory=lambda: ViewState(0, (), 0, ClusterObjects(), None))
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def of(cls, objects: ClusterObjects) -> StaticView:
        view = cls()
        view.set(objects)
        return view

    def read(self) -> ViewState:
        with self._lock:
            return self._state

    def set(self, objects: ClusterObjects, *, nodes_changed: bool = True, storage_changed: bool = True) -> None:
        """Replace every object (nodes and pods from ``objects.nodes`` / ``objects.pods``)."""
        pods = {(p.namespace, p.name): p for p in objects.pods}

        def pod(namespace: str, name: str) -> Pod | None:
            return pods.get((namespace, name))

        with self._lock:
            old = self._state
            self._state = ViewState(
                old.nodes_version + int(nodes_changed), tuple(objects.nodes),
                old.storage_version + int(storage_changed), objects, pod,
            )

    def put_node(self, node: Node) -> None:
        """Add or replace one node (e.g. the storage driver lowered its capacity annotation)."""
        with self._lock:
            old = self._state
            nodes = [n for n in old.nodes if n.name != node.name]
            nodes.append(node)
            nodes.sort(key=lambda n: n.name)
            self._state = ViewState(old.nodes_version + 1, tuple(nodes), old.storage_version, old.objects,
                                    old.pod)

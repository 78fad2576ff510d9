"""The live view: the Kubernetes adapter's watch caches, read as a ``ClusterView``.

The extender is told nodes by name (``nodeCacheCapable``) and reads them, with claims,
volumes, classes, CSI drivers and capacities, from the same watch caches the
autoscaler's live adapter keeps (``kubeapi.caches.Caches``); nothing is listed per
request. A cache listener counts node changes and storage changes apart, so a pod
created somewhere does not make the extender rebuild its node arrays; the copies it
reads are taken only after a change of their kind. Pods are looked up one by one
(reservations ask for the few pods in flight), never copied.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import cast

from kube.clusterapi import ViewUnavailable
from kube.model import ClusterObjects, CSIDriver, CSIStorageCapacity, Node, Pod
from kubeapi.caches import Caches
from kubeapi.kinds import KINDS, Kind
from scheduling.view import ViewState

__all__ = ["CLAIM_KINDS", "NODE_KINDS", "STORAGE_KINDS", "CachesView", "scheduling_kinds"]

NODE_KINDS = frozenset({"nodes"})
STORAGE_KINDS = frozenset({"persistentvolumeclaims", "persistentvolumes", "storageclasses", "csidrivers",
                           "csistoragecapacities"})


#: What the webhook reads to tell a local claim from another (``--only-local-storage-pods``).
CLAIM_KINDS = frozenset({"persistentvolumeclaims", "persistentvolumes", "storageclasses"})


def scheduling_kinds(*, webhook: bool = False) -> tuple[Kind, ...]:
    """The caches the extender needs (nodes, pods, storage), or the webhook (claims only)."""
    wanted = CLAIM_KINDS if webhook else NODE_KINDS | STORAGE_KINDS | {"pods"}
    return tuple(k for k in KINDS if k.name in wanted)


class CachesView:
    """``ClusterView`` over started ``Caches``; ``read`` raises ``ViewUnavailable`` until they sync."""

    def __init__(self, caches: Caches) -> None:
        self.caches = caches
        self._lock = threading.Lock()
        self._node_changes = 0
        self._storage_changes = 0
        self._nodes: tuple[Node, ...] = ()
        self._nodes_read = -1
        self._objects = ClusterObjects()
        self._storage_read = -1
        caches.add_listener(self._changed)

    def _changed(self, kind: str, event: str, obj: object) -> None:
        with self._lock:
            if kind in NODE_KINDS:
                self._node_changes += 1
            elif kind in STORAGE_KINDS:
                self._storage_changes += 1

    def _pod(self, namespace: str, name: str) -> Pod | None:
        return self.caches.pod(namespace, name)

    def _store(self, kind: str) -> Sequence[object]:
        informer = self.caches.informers.get(kind)
        return list(informer.store.values()) if informer is not None else []

    def read(self) -> ViewState:
        reason = self.caches.unavailable_reason()
        if reason is not None:
            raise ViewUnavailable(reason)
        with self._lock:
            node_changes, storage_changes = self._node_changes, self._storage_changes
        # Counters are read before the stores: a change that lands in between is read again next time.
        if node_changes != self._nodes_read:
            self._nodes = tuple(self.caches.nodes())
            self._nodes_read = node_changes
        if storage_changes != self._storage_read:
            self._objects = ClusterObjects(
                claims=self.caches.claims(), volumes=self.caches.volumes(),
                storage_classes=self.caches.storage_classes(),
                csi_capacities=cast(list[CSIStorageCapacity], self._store("csistoragecapacities")),
                csi_drivers={d.name: d for d in cast(list[CSIDriver], self._store("csidrivers"))},
            )
            self._storage_read = storage_changes
        pod = self._pod if "pods" in self.caches.informers else None
        return ViewState(self._nodes_read, self._nodes, self._storage_read, self._objects, pod)

"""The watch caches of every kind the snapshot reads, and a consistent view over them.

All informers apply events under one lock, so ``objects()`` copies a view in which
no event is half-applied. Reads return model objects (``kube.model``), never raw
JSON. ``version`` counts changes (any event or relist), and listeners hear each one:
the scheduler extender and metrics use them to know when to rebuild.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Sequence
from typing import cast

from kube.clusterapi import ViewUnavailable
from kube.featuregates import FeatureGates
from kube.model import (
    ClusterObjects,
    Controller,
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    Node,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    PodDisruptionBudget,
    StorageClass,
    VolumeAttachment,
)
from kube.names import StorageNames
from kubeapi.informer import Informer, Listener
from kubeapi.kinds import CONTROLLER_CACHES, KINDS, Kind
from kubeapi.transport import Transport

__all__ = ["Caches"]

log = logging.getLogger(__name__)


class Caches:
    """One informer per kind in ``kinds`` (default: all of ``kubeapi.kinds.KINDS``)."""

    def __init__(self, transport: Transport, names: StorageNames, *, namespace: str = "kube-system",
                 kinds: Sequence[Kind] = KINDS, watch_seconds: int = 300,
                 backoff: tuple[float, float] = (0.2, 30.0), gates: FeatureGates | None = None,
                 stale_after: float | None = None) -> None:
        self._lock = threading.RLock()
        #: Seconds without a sign of life from a watch after which the view is stale (None: never).
        #: Must exceed ``watch_seconds``: a healthy watch is reopened at least that often.
        self.stale_after = stale_after
        self._listeners: list[Listener] = []
        #: Incremented on every applied event and every completed LIST.
        self.version = 0
        self.informers: dict[str, Informer] = {
            kind.name: Informer(kind, transport, names, self._lock, self._changed, namespace=namespace,
                                watch_seconds=watch_seconds, backoff=backoff, gates=gates)
            for kind in kinds
        }

    # --- life cycle -----------------------------------------------------
    def start(self) -> None:
        for informer in self.informers.values():
            informer.start()

    def stop(self, timeout: float = 5.0) -> None:
        for informer in self.informers.values():
            informer.stop()
        for informer in self.informers.values():
            informer.join(timeout)

    def wait_synced(self, timeout: float) -> bool:
        """Block until every cache is synced and watching, or ``timeout`` seconds pass."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.unavailable_reason() is None:
                return True
            time.sleep(0.02)
        return self.unavailable_reason() is None

    # --- state ----------------------------------------------------------
    @property
    def synced(self) -> bool:
        return self.unavailable_reason() is None

    def unavailable_reason(self) -> str | None:
        """Why the view is not complete and current now, or None when it is."""
        with self._lock:
            for name, informer in self.informers.items():
                if not informer.synced:
                    return f"cache of {name} not synced ({informer.down or 'listing'})"
                if informer.down is not None:
                    return informer.down
            if self.stale_after is not None:
                return self._stale_reason(self.stale_after)
        return None

    def _stale_reason(self, stale_after: float) -> str | None:
        now = time.monotonic()
        for name, informer in self.informers.items():
            silent = now - informer.last_heard
            if not informer.absent and silent > stale_after:
                return (f"watch of {name} silent for {silent:.0f}s (no event, bookmark or reopen within "
                        f"{stale_after:g}s): the connection may be hung")
        return None

    def status(self) -> dict[str, dict[str, object]]:
        """Per cache: synced, why it is down (or None), objects, resourceVersion, relists, watch errors.

        For health endpoints and metrics; a snapshot taken under the lock.
        """
        with self._lock:
            return {name: {"synced": i.synced, "down": i.down, "objects": len(i.store),
                           "resource_version": i.resource_version, "relists": i.relists,
                           "watch_errors": i.watch_errors, "unconvertible": len(i.failed)}
                    for name, i in self.informers.items()}

    def add_listener(self, listener: Listener) -> None:
        with self._lock:
            self._listeners.append(listener)

    def _changed(self, name: str, event: str, obj: object) -> None:
        with self._lock:
            self.version += 1
            listeners = list(self._listeners)
        for listener in listeners:
            try:
                listener(name, event, obj)
            except Exception:  # a listener's bug must not kill the informer thread
                log.exception("listener %r failed on %s %s", listener, event, name)

    # --- reads ----------------------------------------------------------
    def _values(self, name: str) -> list[object]:
        informer = self.informers.get(name)
        return list(informer.store.values()) if informer is not None else []

    def nodes(self) -> list[Node]:
        with self._lock:
            return sorted(cast(list[Node], self._values("nodes")), key=lambda n: n.name)

    def pods(self) -> list[Pod]:
        with self._lock:
            return cast(list[Pod], self._values("pods"))

    def pod(self, namespace: str, name: str) -> Pod | None:
        with self._lock:
            informer = self.informers.get("pods")
            return cast(Pod | None, informer.store.get((namespace, name))) if informer else None

    def pods_on_node(self, node: str) -> list[Pod]:
        with self._lock:
            informer = self.informers.get("pods")
            return cast(list[Pod], list(informer.index.get(node, {}).values())) if informer and node else []

    def _nodes_protected(self) -> list[Node]:
        """Nodes, with scale-down disabled on those running a pod that could not be converted.

        The view lacks such a pod; deciding the node is empty or drainable could lose
        its data, so it stays (the conversion warning says why).
        """
        nodes = self.nodes()
        pods = self.informers.get("pods")
        bad = {u.node_name for u in pods.failed.values() if u.node_name} if pods is not None else set()
        if not bad:
            return nodes
        return [dataclasses.replace(n, scale_down_disabled=True) if n.name in bad else n for n in nodes]

    def claims(self) -> dict[tuple[str, str], PersistentVolumeClaim]:
        with self._lock:
            return {(c.namespace, c.name): c for c in cast(list[PersistentVolumeClaim],
                                                           self._values("persistentvolumeclaims"))}

    def volumes(self) -> dict[str, PersistentVolume]:
        with self._lock:
            return {v.name: v for v in cast(list[PersistentVolume], self._values("persistentvolumes"))}

    def storage_classes(self) -> dict[str, StorageClass]:
        with self._lock:
            return {s.name: s for s in cast(list[StorageClass], self._values("storageclasses"))}

    def pdbs(self) -> list[PodDisruptionBudget]:
        with self._lock:
            return cast(list[PodDisruptionBudget], self._values("poddisruptionbudgets"))

    def volume_attachments(self) -> list[VolumeAttachment]:
        """VolumeAttachments; one that could not be converted but names its node counts as attached there.

        Read leniently so that an object the converter refuses never makes a node look
        free of attached volumes (the actuator would then delete it too early).
        """
        with self._lock:
            informer = self.informers.get("volumeattachments")
            if informer is None:
                return []
            found = cast(list[VolumeAttachment], list(informer.store.values()))
            found += [VolumeAttachment(name, refused.node_name, attached=True)
                      for (_, name), refused in informer.failed.items() if refused.node_name]
            return found

    def objects(self) -> ClusterObjects:
        """A consistent view of every cache; raises ``ViewUnavailable`` (with the reason) otherwise."""
        with self._lock:
            reason = self.unavailable_reason()
            if reason is not None:
                raise ViewUnavailable(reason)
            controllers: dict[tuple[str, str, str], Controller] = {}
            for name in CONTROLLER_CACHES:
                for c in cast(list[Controller], self._values(name)):
                    controllers[(c.kind, c.namespace, c.name)] = c
            namespaces = self.informers.get("namespaces")
            priority = self._values("priorityconfig")
            warnings = [w for informer in self.informers.values() for ws in informer.warnings.values() for w in ws]
            return ClusterObjects(
                nodes=self._nodes_protected(),
                pods=self.pods(),
                claims=self.claims(),
                volumes=self.volumes(),
                storage_classes=self.storage_classes(),
                pdbs=self.pdbs(),
                csi_capacities=cast(list[CSIStorageCapacity], self._values("csistoragecapacities")),
                csi_drivers={d.name: d for d in cast(list[CSIDriver], self._values("csidrivers"))},
                csi_nodes={n.name: n for n in cast(list[CSINode], self._values("csinodes"))},
                controllers=controllers,
                namespaces={k[1]: v for k, v in namespaces.store.items()} if namespaces else {},  # type: ignore[misc]
                priority_config=cast(str | None, priority[0]) if priority else None,
                volume_attachments=self.volume_attachments(),
                warnings=warnings,
                unreadable=[u for informer in self.informers.values() for u in informer.failed.values()],
            )

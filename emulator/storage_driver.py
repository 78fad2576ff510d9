"""The node-local storage driver (thesis 3.2, Rok's CSI driver and operator), as the cluster sees it.

* Start: ``storageDriverStartDelay`` after a node registers, the driver writes the
  max-capacity label (the group template's value) and the capacity annotation (max minus
  the local volumes already pinned there). Only nodes whose labels, or whose group's
  template, carry the max-capacity label run the driver.
* Unpinning (thesis 3.2.1): on a node that drains (``ToBeDeletedByClusterAutoscaler``
  taint, or cordoned) the driver snapshots each pinned local volume that no running pod
  uses, one at a time, ``size in GiB x unpinSecondsPerGiB`` seconds each; then the PV
  loses its node affinity and the node's capacity annotation grows by its size. A volume
  still used by a running pod waits until the pod leaves. When no pinned local volume is
  left, the operator deletes the node's guard budget (thesis 3.2.2, step 4).
* Faults (``spec.storageDriverFaults``, ``driver_faults.py``): unpinning can be slow
  (``SlowUnpin``), stuck (``StuckUnpin``: an unpin in flight never completes and none
  starts in the window), or the driver absent (``NoDriver``: not started, nothing
  unpinned); the volumes stay pinned, and only the autoscaler's own last look keeps
  the node from being deleted with their data.
* Calling off the drain (taint removed, uncordoned) cancels the unpin in progress; the
  volumes already unpinned stay unpinned (they are restored wherever their pod lands).

The scheduler does the pinning side (restoring an unpinned volume on the pod's node).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from emulator.clock import SimClock
from emulator.cluster import SimCluster, is_draining, pinned_host
from emulator.driver_faults import DriverFaults
from emulator.guard import GuardController
from emulator.scenario import DriverFaultKind
from emulator.timeline import Timeline
from kube.model import Node
from kube.names import StorageNames

__all__ = ["StorageDriver", "with_capacity"]

GiB = 2**30


def with_capacity(node: Node, names: StorageNames, free: int, max_bytes: int | None = None) -> Node:
    """The node with the driver's capacity annotation (and max-capacity label) set."""
    annotations = {**node.annotations, names.capacity_annotation: str(free)}
    if max_bytes is None:
        return dataclasses.replace(node, annotations=annotations, free_local_bytes=free)
    labels = {**node.labels, names.max_capacity_label: str(max_bytes)}
    return dataclasses.replace(node, labels=labels, annotations=annotations, free_local_bytes=free,
                               max_local_bytes=max_bytes)


class StorageDriver:
    def __init__(self, cluster: SimCluster, clock: SimClock, timeline: Timeline, guard: GuardController,
                 names: StorageNames, *, start_delay: float, unpin_seconds_per_gib: float,
                 max_capacity_for: Callable[[Node], int | None], faults: DriverFaults | None = None) -> None:
        self.cluster = cluster
        self.clock = clock
        self.timeline = timeline
        self.guard = guard
        self.names = names
        self.start_delay = start_delay
        self.unpin_seconds_per_gib = unpin_seconds_per_gib
        self.max_capacity_for = max_capacity_for
        self.faults = faults
        #: Nodes whose driver start is scheduled (or done).
        self._starting: set[str] = set()
        #: node -> the PV being unpinned there.
        self._unpinning: dict[str, str] = {}
        #: node -> generation; bumped to cancel an unpin in flight.
        self._generation: dict[str, int] = {}

    def unpinning(self, node: str) -> str | None:
        """The PV being unpinned on ``node`` now, if any."""
        return self._unpinning.get(node)

    def reconcile(self, node_name: str) -> None:
        node = self.cluster.node(node_name)
        if node is None:
            self._cancel(node_name)
            self._starting.discard(node_name)
            return
        if node.free_local_bytes is None:
            if node_name not in self._starting and self.max_capacity_for(node) is not None:
                self._starting.add(node_name)
                now = self.clock.now
                at = max(now, (node.created if node.created is not None else now) + self.start_delay)
                self.timeline.schedule(at, f"storage driver starts on {node_name}", lambda: self._start(node_name))
            return
        if is_draining(node) and self._unpins(node_name):
            self._drain_step(node)
        elif node_name in self._unpinning:
            self._cancel(node_name)

    def _unpins(self, node_name: str) -> bool:
        return self.faults is None or self.faults.unpins(node_name)

    def _start(self, node_name: str) -> None:
        node = self.cluster.node(node_name)
        if node is None or node.free_local_bytes is not None:
            return
        if self.faults is not None and DriverFaultKind.NO_DRIVER in self.faults.kinds(node_name):
            self._starting.discard(node_name)  # started again when the fault's window ends
            return
        max_bytes = self.max_capacity_for(node)
        if max_bytes is None:
            return
        pinned = sum(pv.capacity for pv in self.cluster.volumes_pinned_to(node) if self.cluster.is_local_volume(pv))
        self.cluster.put_node(with_capacity(node, self.names, max(0, max_bytes - pinned), max_bytes))

    def _cancel(self, node_name: str) -> None:
        if self._unpinning.pop(node_name, None) is not None:
            self._generation[node_name] = self._generation.get(node_name, 0) + 1

    def _drain_step(self, node: Node) -> None:
        if node.name in self._unpinning:
            return  # one volume at a time
        local = [pv for pv in self.cluster.volumes_pinned_to(node) if self.cluster.is_local_volume(pv)]
        if not local:
            self.guard.release(node.name)
            return
        used: set[str] = set()
        for pod in self.cluster.pods_on(node.name):
            if pod.phase != "Running":
                continue
            for claim_name in pod.claims:
                claim = self.cluster.claim(pod.namespace, claim_name)
                if claim is not None and claim.volume_name:
                    used.add(claim.volume_name)
        candidates = [pv for pv in local if pv.name not in used]
        if not candidates:
            return  # wait for the pods using them to leave
        pv = candidates[0]
        generation = self._generation.get(node.name, 0)
        self._unpinning[node.name] = pv.name
        rate = self.unpin_seconds_per_gib
        if self.faults is not None:
            rate = self.faults.unpin_seconds_per_gib(node.name, rate)
        seconds = pv.capacity / GiB * rate
        self.timeline.schedule(self.clock.now + seconds, f"unpin {pv.name} from {node.name}",
                               lambda: self._unpinned(node.name, pv.name, generation))

    def _unpinned(self, node_name: str, pv_name: str, generation: int) -> None:
        if self._generation.get(node_name, 0) != generation or self._unpinning.get(node_name) != pv_name:
            return  # cancelled
        del self._unpinning[node_name]
        if not self._unpins(node_name):
            return  # stuck or gone: this snapshot never completes; another starts once the driver is back
        node = self.cluster.node(node_name)
        pv = self.cluster.volume(pv_name)
        if node is None or pv is None or pinned_host(pv) is None:
            return
        self.cluster.put_volume(dataclasses.replace(pv, node_affinity=None))
        self.cluster.metrics.unpins += 1
        self.cluster.metrics.bytes_unpinned += pv.capacity
        if node.free_local_bytes is not None:
            free = node.free_local_bytes + pv.capacity
            if node.max_local_bytes is not None:
                free = min(free, node.max_local_bytes)
            self.cluster.put_node(with_capacity(node, self.names, free))
        self.cluster.changed_nodes.add(node_name)  # next volume, or release the guard

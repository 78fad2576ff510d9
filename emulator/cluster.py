"""The simulated API server: every object of the world, and the ``ClusterAPI`` the autoscaler calls.

``SimCluster`` serves the objects of its store (``emulator.store.ClusterStore``:
immutable model objects, indexed, with the change sets the world drains);
``list_objects`` hands out fresh lists and dicts over the same objects, so a loop's
read costs list copies, not conversions. The ``ClusterAPI`` methods call ``on_change``
when they are done, so a controller recreates an evicted pod at once, as a real one
would within milliseconds.

An accepted eviction marks the pod terminating (``deleted`` set): it stays on its
node, still holding its resources and volumes and no longer counted healthy by its
budgets, until its grace period (the eviction's, else the pod's own) has passed;
then it is gone (``schedule`` is the world's timeline; without one, at once).
Errors are the seam's types: a missing node is ``NotFound``; ``fail_calls`` injects
``TransientAPIError`` into the next calls of a ``ClusterAPI`` method, for tests.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import msgspec.structs

from emulator.clock import SimClock
from emulator.metrics import Metrics
from emulator.store import ClusterStore, OwnerKey, PodKey, hostname, is_draining, pinned_host
from kube.clusterapi import Eviction, EvictionResult, TransientAPIError
from kube.model import (
    ClusterObjects,
    Pod,
    Taint,
)
from kube.names import StorageNames
from simulator.volumes import NodeMatcher

__all__ = [
    "OwnerKey", "PodKey", "RecordedEvent", "SimCluster", "StatusRecord", "hostname", "is_draining", "pinned_host",
]


@dataclass(slots=True)
class RecordedEvent:
    """A Kubernetes Event; repeats are aggregated into ``count`` as the API server does."""

    time: float
    kind: str
    namespace: str
    name: str
    reason: str
    message: str
    warning: bool = False
    count: int = 1
    last_time: float = 0.0


@dataclass(frozen=True, slots=True)
class StatusRecord:
    time: float
    text: str


class SimCluster(ClusterStore):
    """In-memory Kubernetes objects; implements ``kube.clusterapi.ClusterAPI``."""

    def __init__(self, clock: SimClock, names: StorageNames, metrics: Metrics) -> None:
        super().__init__(clock, names, metrics)
        self._events: dict[tuple[str, str, str, str, str, bool], RecordedEvent] = {}
        self.statuses: list[StatusRecord] = []
        #: ClusterAPI method name -> messages of the injected failures still to come.
        self._call_faults: dict[str, list[str]] = {}

    # --- fault injection (tests) -------------------------------------------------------------
    def fail_calls(self, method: str, times: int, message: str = "injected: the API server is unavailable") -> None:
        """The next ``times`` calls of ClusterAPI ``method`` raise ``TransientAPIError`` and change nothing."""
        if times < 0:
            raise ValueError(f"fail_calls: times must not be negative, got {times}")
        if method not in ("taint_node", "untaint_node", "evict_pod", "pods_on_node"):
            raise ValueError(f"fail_calls: {method!r} is not a ClusterAPI method that can fail here")
        self._call_faults.setdefault(method, []).extend([message] * times)

    def _injected(self, method: str) -> None:
        faults = self._call_faults.get(method)
        if faults:
            raise TransientAPIError(f"{method}: {faults.pop(0)}")

    # --- ClusterAPI -------------------------------------------------------------------------
    def list_objects(self) -> ClusterObjects:
        return ClusterObjects(
            nodes=list(self.nodes()),
            pods=list(self._pods.values()),
            claims=dict(self._claims),
            volumes=dict(self._volumes),
            storage_classes=dict(self.storage_classes),
            pdbs=list(self._pdb_statuses()),
            csi_capacities=list(self.csi_capacities),
            csi_drivers=dict(self.csi_drivers),
            csi_nodes=dict(self.csi_nodes),
            controllers=dict(self._controllers),
            node_groups=self.node_group_specs(),
            namespaces=dict(self.namespaces),
            priority_config=self.priority_config,
            volume_attachments=list(self.volume_attachments.values()),
            warnings=list(self.warnings),
        )

    def taint_node(self, node: str, taint: Taint) -> None:
        self._injected("taint_node")
        current = self._require_node(node)
        if not current.has_taint(taint.key):
            self.put_node(dataclasses.replace(current, taints=(*current.taints, taint)))
        self._notify()

    def untaint_node(self, node: str, key: str) -> None:
        self._injected("untaint_node")
        current = self._require_node(node)
        if current.has_taint(key):
            self.put_node(dataclasses.replace(current, taints=tuple(t for t in current.taints if t.key != key)))
        self._notify()

    def annotate_node(self, node: str, key: str, value: str | None) -> None:
        current = self._require_node(node)
        annotations = {k: v for k, v in current.annotations.items() if k != key}
        if value is not None:
            annotations[key] = value
        if annotations != dict(current.annotations):
            self.put_node(dataclasses.replace(current, annotations=annotations))
        self._notify()

    def cordon_node(self, node: str, unschedulable: bool = True) -> None:
        """``kubectl cordon`` / ``uncordon`` (not part of ``ClusterAPI``; scenarios and tests use it)."""
        current = self._require_node(node)
        if current.unschedulable != unschedulable:
            self.put_node(dataclasses.replace(current, unschedulable=unschedulable))
        self._notify()

    def evict_pod(self, namespace: str, name: str, grace_period_seconds: int | None = None) -> EvictionResult:
        self._injected("evict_pod")
        key = (namespace, name)
        pod = self._pods.get(key)
        if pod is None:
            return EvictionResult(Eviction.GONE, "already gone")
        if pod.deleted is not None:
            return EvictionResult(Eviction.EVICTED, "already terminating")
        # As the Eviction API: budgets only protect running pods.
        if pod.node_name and pod.phase == "Running":
            for spec in self.pdbs_matching(pod):
                status = self.pdb_status(spec)
                if status.disruptions_allowed < 1:
                    self.metrics.refused_evictions += 1
                    return EvictionResult(
                        Eviction.REFUSED,
                        "Cannot evict pod as it would violate the pod's disruption budget "
                        f"{spec.namespace}/{spec.name}",
                    )
        self.metrics.evictions += 1
        grace = pod.grace_seconds if grace_period_seconds is None else grace_period_seconds
        self._terminate(pod, grace)
        self._notify()
        return EvictionResult(Eviction.EVICTED)

    def _terminate(self, pod: Pod, grace: float) -> None:
        """The pod terminates for ``grace`` seconds, then is gone (its controller replaces it)."""
        key = (pod.namespace, pod.name)
        if grace <= 0 or self.schedule is None or not pod.node_name:
            self.remove_pod(key, replacement=True)
            return
        self.replace_pod(msgspec.structs.replace(pod, deleted=self.clock.now))
        if pod.owner is not None:  # a ReplicaSet replaces a terminating pod at once
            owner = (pod.owner.kind, pod.namespace, pod.owner.name)
            self.changed_owners[owner] = True
        uid = pod.uid

        def gone() -> None:
            current = self._pods.get(key)
            if current is not None and current.uid == uid:
                self.remove_pod(key, replacement=True)

        self.schedule(self.clock.now + grace, f"pod {pod.ref} terminated", gone)

    def record_event(self, kind: str, namespace: str, name: str, reason: str, message: str, *,
                     warning: bool = False) -> None:
        now = self.clock.now
        key = (kind, namespace, name, reason, message, warning)
        event = self._events.get(key)
        if event is None:
            self._events[key] = RecordedEvent(now, kind, namespace, name, reason, message, warning, 1, now)
        else:
            event.count += 1
            event.last_time = now

    def write_status(self, text: str) -> None:
        self.statuses.append(StatusRecord(self.clock.now, text))

    @property
    def events(self) -> list[RecordedEvent]:
        """Every distinct event, in the order first recorded."""
        return list(self._events.values())

    # --- reads and effects that belong to the API server or the cloud ------------------------
    def pods_on_node(self, node: str) -> Sequence[Pod]:
        self._injected("pods_on_node")
        return self.pods_on(node)


    def terminate_node(self, name: str) -> None:
        """The cloud deleted the instance: local data still pinned to it is lost (one event per PV).

        Pinned as the autoscaler defines it: the PV's required node affinity selects this
        node only, whatever the label key (hostname, TopoLVM, OpenEBS), so data loss is
        counted for every driver, not just the one the simulated storage driver manages.
        """
        node = self._nodes.get(name)
        if node is None:
            return
        lost = {pv.name: pv for pv in self.volumes_pinned_to(node)}
        matcher = NodeMatcher(self.nodes())
        for pv in self._volumes.values():
            if pv.name not in lost and pv.node_affinity is not None and matcher.only_match(pv.node_affinity) == name:
                lost[pv.name] = pv
        for pv in sorted(lost.values(), key=lambda v: v.name):
            if pv.claim is None:
                continue
            self.metrics.data_loss(name, pv.name)
            self.record_event(
                "PersistentVolume", "", pv.name, "DataLoss",
                f"node {name} was deleted while volume {pv.name} of claim {pv.claim[0]}/{pv.claim[1]} was pinned "
                "to it: its data is lost", warning=True)
        self.remove_node(name)


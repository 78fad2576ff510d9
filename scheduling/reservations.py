"""In-flight reservations of local bytes (beyond the thesis; its 5.2 future work).

Between the extender approving a node for a pod and the storage driver lowering that
node's capacity annotation, the annotation still shows the old free bytes, so a second
pod could be approved for the same last bytes. The extender remembers what it
approved: per pod uid, the bytes of its local claims and the nodes it passed.

kube-scheduler asks the extender to *filter*; it picks the node itself and does not
tell us which. So a fresh reservation holds the bytes on every node the filter
passed (the pod may land on any of them), and is narrowed to one node as soon as the
view shows the pod bound to it. Over-reserving only delays another pod by one retry
(kube-scheduler backs off and filters it again); under-reserving leaves a pod stuck
on a node whose disk cannot hold its claims. A reservation ends when every local
claim of the pod is bound to a pinned volume (the driver has provisioned it), when the
pod, once seen, is gone from the view, or after ``timeout`` seconds.

kube-scheduler's volume binder tells its choice earlier than the pod's binding: it sets
``volume.kubernetes.io/selected-node`` on each WaitForFirstConsumer claim it sends to the
provisioner (``AnnSelectedNode``, k8s.io/component-helpers/storage/volume; set in
pkg/scheduler/framework/plugins/volumebinding/binder.go). A claim of the reservation
selected for one of its nodes narrows it to that node; selected for a node it does not
hold, the volume goes elsewhere and the reservation is dropped (it would only hold bytes
the pod will never take).

Time comes from an injected clock (``time.monotonic`` in the server, a fake in tests).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

from kube.model import ClusterObjects, Pod

__all__ = ["Reservation", "ReservationBook"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Reservation:
    """Local bytes held for one pod on the nodes it may land on."""

    uid: str
    namespace: str
    name: str
    #: Names of the pod's claims whose volumes are provisioned (or restored) locally.
    claims: tuple[str, ...]
    local_bytes: int
    #: Nodes the bytes are held on: every node the filter passed, then the chosen one.
    nodes: frozenset[str]
    since: float
    #: The view has shown this pod at least once (so its absence later means it is gone).
    seen: bool = False
    #: Bytes held in the other capacity pools (TopoLVM device classes), on the same nodes.
    pools: tuple[tuple[str, int], ...] = ()

    @property
    def ref(self) -> str:
        return f"{self.namespace}/{self.name}"


class ReservationBook:
    """What the extender approved and the cluster does not show yet. Not thread-safe: the
    extender calls it under its own lock, so a check and the reservation that follows it
    are one step."""

    def __init__(self, timeout: float, clock: Callable[[], float]) -> None:
        self.timeout = timeout
        self.clock = clock
        self._by_uid: dict[str, Reservation] = {}

    def __len__(self) -> int:
        return len(self._by_uid)

    def get(self, uid: str) -> Reservation | None:
        return self._by_uid.get(uid)

    def approve(self, pod: Pod, claims: tuple[str, ...], local_bytes: int, nodes: frozenset[str],
                pools: tuple[tuple[str, int], ...] = ()) -> None:
        """Hold ``local_bytes`` (and ``pools``' bytes) for ``pod`` on ``nodes``, replacing what an
        earlier filter held."""
        pools = tuple((pool, size) for pool, size in pools if size > 0)
        if (local_bytes <= 0 and not pools) or not nodes or not pod.uid:
            self._by_uid.pop(pod.uid, None)
            return
        held = self._by_uid.get(pod.uid)
        if (held is not None and held.local_bytes == local_bytes and held.nodes == nodes and held.claims == claims
                and held.pools == pools):
            return  # the same approval again (kube-scheduler retried the pod): keep its clock
        self._by_uid[pod.uid] = Reservation(pod.uid, pod.namespace, pod.name, claims, local_bytes, nodes,
                                            self.clock(), pools=pools)

    def others(self, uid: str) -> Iterator[Reservation]:
        """Every reservation but the pod's own (a pod filtered again must not compete with itself)."""
        return (r for r in self._by_uid.values() if r.uid != uid)

    def expire(self, objects: ClusterObjects, pod_of: Callable[[str, str], Pod | None] | None) -> None:
        """Drop reservations the cluster now shows (claims bound and pinned), of pods gone, or too old.

        ``pod_of(namespace, name)`` reads the view's pods (None: the view has none); a pod
        of the same name with another uid is a new pod, and the old one is gone."""
        now = self.clock()
        for uid, res in list(self._by_uid.items()):
            reason = None
            current = pod_of(res.namespace, res.name) if pod_of is not None else None
            if current is not None and current.uid != uid:
                current = None
            if now - res.since >= self.timeout:
                reason = "timed out"
            elif pod_of is not None and current is None and res.seen:
                reason = "pod gone"
            elif self._claims_provisioned(res, objects):
                reason = "claims bound"
            else:
                selected = self._selected_node(res, objects)
                if selected is not None and selected not in res.nodes:
                    reason = "claim selected for another node"
                elif selected is not None and res.nodes != frozenset((selected,)):
                    res = replace(res, nodes=frozenset((selected,)))
                    self._by_uid[uid] = res
            if reason is not None:
                log.debug("reservation released", extra={"pod": res.ref, "reason": reason})
                del self._by_uid[uid]
                continue
            if current is not None:
                updated = res if res.seen else replace(res, seen=True)
                if current.node_name and updated.nodes != frozenset((current.node_name,)):
                    updated = replace(updated, nodes=frozenset((current.node_name,)))
                if updated is not res:
                    self._by_uid[uid] = updated

    @staticmethod
    def _selected_node(res: Reservation, objects: ClusterObjects) -> str | None:
        """The node kube-scheduler selected for the pod's claims, if it has selected one."""
        for name in res.claims:
            claim = objects.claims.get((res.namespace, name))
            if claim is not None and claim.selected_node:
                return claim.selected_node
        return None

    @staticmethod
    def _claims_provisioned(res: Reservation, objects: ClusterObjects) -> bool:
        if not res.claims:
            return False
        for name in res.claims:
            claim = objects.claims.get((res.namespace, name))
            if claim is None or not claim.volume_name:
                return False
            pv = objects.volumes.get(claim.volume_name)
            if pv is None or pv.node_affinity is None:
                return False
        return True

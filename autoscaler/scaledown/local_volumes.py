"""Which nodes hold local data: bound volumes pinned there, migratable or not.

Deleting a node that holds a bound PV pinned to it loses the PV's data. Two cases
(storage-semantics 3.6-3.7):

* the PV cannot be migrated (a ``local`` or hostPath PV, a CSI volume of another
  provisioner): the planner keeps the node (``NodeHasLocalVolumes``), and the
  actuator asks again just before it deletes a node, because a volume can be bound
  there while the node drains;
* the PV belongs to the migratable local provisioner: the planner simulates it as
  unpinned, but until the storage driver has actually unpinned it (snapshotted its
  data and dropped its node affinity) the actuator must not delete the node, guard
  pod or not.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from kube.model import ClusterObjects, Node, PersistentVolume
from simulator.volumes import NodeMatcher, VolumeIndex

__all__ = ["PinnedVolumes", "pinned_local_volumes", "pinned_volumes", "unpinning_local_volumes"]


def _pinned(objects: ClusterObjects, volumes: VolumeIndex, nodes: Mapping[str, Node], *, migratable: bool
            ) -> Iterator[tuple[str, PersistentVolume]]:
    """(node, PV) for every bound PV, migratable or not as asked, pinned to exactly one of ``nodes``."""
    return ((node, pv) for node, pv, movable in _pinned_all(objects, volumes, nodes) if movable == migratable)


def _pinned_all(objects: ClusterObjects, volumes: VolumeIndex, nodes: Mapping[str, Node]
                ) -> Iterator[tuple[str, PersistentVolume, bool]]:
    """(node, PV, migratable) for every bound PV pinned to exactly one of ``nodes``.

    None unless storage-aware (upstream CA deletes such nodes).
    Pinned means the PV's required node affinity selects exactly that node among the
    cluster's nodes, whatever the label key: TopoLVM's ``topology.topolvm.io/node``,
    OpenEBS's ``openebs.io/nodename`` and the hostname alike.
    """
    if not volumes.storage_aware:
        return
    matcher = NodeMatcher(nodes.values())
    claims = objects.claims
    for pv in objects.volumes.values():
        if pv.node_affinity is None or pv.claim is None or pv.claim not in claims:
            continue
        node = matcher.only_match(pv.node_affinity)
        if node is not None:
            yield node, pv, volumes.is_migratable(pv)


def pinned_local_volumes(objects: ClusterObjects, volumes: VolumeIndex, nodes: Mapping[str, Node]
                         ) -> dict[str, list[str]]:
    """node -> bound PVs pinned to it whose data cannot be migrated (empty unless storage-aware)."""
    out: dict[str, list[str]] = {}
    for node, pv in _pinned(objects, volumes, nodes, migratable=False):
        out.setdefault(node, []).append(pv.name)
    return out


def unpinning_local_volumes(objects: ClusterObjects, volumes: VolumeIndex, nodes: Mapping[str, Node]
                            ) -> dict[str, list[str]]:
    """node -> bound PVs of the migratable local provisioner still pinned to it (the driver has not unpinned them)."""
    out: dict[str, list[str]] = {}
    for node, pv in _pinned(objects, volumes, nodes, migratable=True):
        out.setdefault(node, []).append(pv.name)
    return out


@dataclass(frozen=True, slots=True)
class PinnedVolumes:
    """The bound volumes pinned to each node, in one pass: the data that cannot move, the bytes that can."""

    #: node -> PVs whose data cannot be migrated: the node is never removed.
    kept: dict[str, list[str]]
    #: node -> bytes of migratable local volumes: what removing it would unpin.
    unpin_bytes: dict[str, int]


def pinned_volumes(objects: ClusterObjects, volumes: VolumeIndex, nodes: Mapping[str, Node]) -> PinnedVolumes:
    kept: dict[str, list[str]] = {}
    unpin: dict[str, int] = {}
    for node, pv, movable in _pinned_all(objects, volumes, nodes):
        if movable:
            unpin[node] = unpin.get(node, 0) + pv.capacity
        else:
            kept.setdefault(node, []).append(pv.name)
    return PinnedVolumes(kept, unpin)

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

from kube.model import ClusterObjects, Node, PersistentVolume
from simulator.volumes import NodeMatcher, VolumeIndex

__all__ = ["pinned_local_volumes", "unpinning_local_volumes"]


def _pinned(objects: ClusterObjects, volumes: VolumeIndex, nodes: Mapping[str, Node], *, migratable: bool
            ) -> Iterator[tuple[str, PersistentVolume]]:
    """(node, PV) for every bound PV, migratable or not as asked, pinned to exactly one of ``nodes``.

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
        if volumes.is_migratable(pv) != migratable:
            continue
        node = matcher.only_match(pv.node_affinity)
        if node is not None:
            yield node, pv


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

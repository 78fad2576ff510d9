"""Which nodes hold local data that cannot move: a bound volume pinned there, not migratable.

Deleting such a node loses the data (storage-semantics 3.6). The planner keeps these
nodes (``NodeHasLocalVolumes``); the actuator asks again just before it deletes a
node, because a volume can be bound there while the node drains.
"""

from __future__ import annotations

from collections.abc import Mapping

from kube.model import ClusterObjects, Node
from simulator.volumes import NodeMatcher, VolumeIndex

__all__ = ["pinned_local_volumes"]


def pinned_local_volumes(objects: ClusterObjects, volumes: VolumeIndex, nodes: Mapping[str, Node]
                         ) -> dict[str, list[str]]:
    """node -> bound PVs pinned to it whose data cannot be migrated (empty unless storage-aware).

    Pinned means the PV's required node affinity selects exactly that node among the
    cluster's nodes, whatever the label key: TopoLVM's ``topology.topolvm.io/node``,
    OpenEBS's ``openebs.io/nodename`` and the hostname alike.
    """
    out: dict[str, list[str]] = {}
    if not volumes.storage_aware:
        return out
    matcher = NodeMatcher(nodes.values())
    claims = objects.claims
    for pv in objects.volumes.values():
        if pv.node_affinity is None or pv.claim is None or pv.claim not in claims or volumes.is_migratable(pv):
            continue
        node = matcher.only_match(pv.node_affinity)
        if node is not None:
            out.setdefault(node, []).append(pv.name)
    return out

"""The last look before a node is deleted: is it still removable?

The planner decided on a view that is a drain old (seconds to many minutes); by the
time the pods are gone the node may have changed. Upstream re-validates before it
deletes (as Karpenter's disruption ``Validator`` does); here:

* the node still exists and still belongs to the group the plan named
  (``CloudProvider.node_group_for``: it may have left it or been replaced);
* storage-aware, no volume that cannot be migrated is pinned to it now (a pod with
  a pinned local volume may have landed while it drained): deleting it would lose data.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from autoscaler.config import Options
from autoscaler.scaledown.local_volumes import pinned_local_volumes
from cloudproviders.interface import CloudProvider, NodeGroup
from kube.model import ClusterObjects, Node
from simulator.volumes import VolumeIndex

__all__ = ["RemovalView", "removal_blocker", "removal_view"]


@dataclass(frozen=True, slots=True)
class RemovalView:
    """What the last look reads, built once per actuator step however many nodes are due."""

    nodes: Mapping[str, Node]
    #: node -> non-migratable local volumes pinned to it now.
    pinned: Mapping[str, list[str]]


def removal_view(objects: ClusterObjects, options: Options) -> RemovalView:
    nodes = {n.name: n for n in objects.nodes}
    volumes = VolumeIndex(objects, options.storage, storage_aware=options.storage_aware)
    return RemovalView(nodes, pinned_local_volumes(objects, volumes, nodes))


def removal_blocker(view: RemovalView, node_name: str, group_name: str, provider: CloudProvider
                    ) -> tuple[Node, NodeGroup] | str:
    """The node and its group if it may go now, or why it may not."""
    node = view.nodes.get(node_name)
    if node is None:
        return f"node {node_name} no longer exists"
    group = provider.node_group_for(node)
    if group is None or group.name != group_name:
        now_in = f"node group {group.name}" if group is not None else "no node group"
        return f"node {node_name} left node group {group_name} (now in {now_in})"
    pinned = view.pinned.get(node_name)
    if pinned:
        return ("node now holds local volume(s) that cannot be migrated, deleting it would lose their data: "
                + ", ".join(sorted(pinned)))
    return node, group

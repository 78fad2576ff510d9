"""What the loop knows about nodes before it simulates: group, readiness, upcoming nodes.

Readiness follows upstream's cluster state registry: a registered node that is not
ready and younger than ``--max-node-startup-time`` has *not started* and counts as
upcoming; older unready nodes are *unready*. Storage-aware, a Ready node whose
storage driver has not written the capacity annotation yet is treated as not
started for that long too (thesis 3.4.5.5 "wait for Rok CSI"), so pods waiting for
its disk do not trigger a second scale-up.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from autoscaler.config import Options
from cloudproviders.interface import NodeGroup
from kube.model import Node, Taint
from kube.names import CA_TO_BE_DELETED_TAINT

__all__ = ["ClusterState", "NodeState", "Readiness", "build_cluster_state"]

NOT_READY_TAINT = Taint("node.kubernetes.io/not-ready", "", "NoSchedule")


class Readiness(StrEnum):
    """A node as the loop sees it (upstream clusterstate's readiness buckets)."""

    READY = "Ready"
    NOT_STARTED = "NotStarted"
    UNREADY = "Unready"
    DELETING = "Deleting"


@dataclass(frozen=True, slots=True)
class NodeState:
    node: Node
    group: str | None
    readiness: Readiness
    #: Ready in Kubernetes, but the storage driver has not reported capacity yet.
    waiting_for_storage: bool = False

    @property
    def name(self) -> str:
        return self.node.name


@dataclass(slots=True)
class ClusterState:
    nodes: list[NodeState]
    groups: dict[str, NodeGroup]
    #: group -> nodes requested but not yet started (target - ready - unready).
    upcoming: dict[str, int]
    #: group -> the storage driver never came up on its nodes (template gets zero local capacity).
    no_storage_driver: set[str] = field(default_factory=set)

    def by_name(self) -> Mapping[str, NodeState]:
        return {s.name: s for s in self.nodes}

    def members(self, group: str) -> list[NodeState]:
        return [s for s in self.nodes if s.group == group]


def _age(node: Node, now: float) -> float:
    return now - node.created if node.created is not None else float("inf")


def snapshot_node(state: NodeState) -> Node:
    """The node as the simulation places pods on it.

    An unready node gets the ``not-ready`` taint the node lifecycle controller
    would add, so no pod is simulated onto it unless it tolerates that.
    """
    node = state.node
    if state.readiness is Readiness.READY or node.has_taint(NOT_READY_TAINT.key):
        return node
    return dataclasses.replace(node, taints=(*node.taints, NOT_READY_TAINT))


def build_cluster_state(nodes: Sequence[Node], groups: Sequence[NodeGroup], group_of: Mapping[str, str],
                        options: Options, now: float) -> ClusterState:
    startup = options.scale_up.max_node_startup_seconds
    storage_aware = options.storage_aware
    # A group whose Ready nodes have run past the startup time without the capacity
    # annotation does not run the storage driver at all (storage-semantics 2.2).
    with_driver: set[str] = set()
    old_without: set[str] = set()
    for node in nodes:
        group = group_of.get(node.name)
        if group is None:
            continue
        if node.free_local_bytes is not None:
            with_driver.add(group)
        elif node.ready and _age(node, now) >= startup:
            old_without.add(group)
    no_driver = old_without - with_driver if storage_aware else set()
    states: list[NodeState] = []
    for node in nodes:
        group = group_of.get(node.name)
        waiting = False
        if node.deleting or node.has_taint(CA_TO_BE_DELETED_TAINT):
            readiness = Readiness.DELETING
        elif not node.ready:
            readiness = Readiness.NOT_STARTED if _age(node, now) < startup else Readiness.UNREADY
        elif (storage_aware and group is not None and group not in no_driver
              and node.free_local_bytes is None and _age(node, now) < startup):
            readiness, waiting = Readiness.NOT_STARTED, True
        else:
            readiness = Readiness.READY
        states.append(NodeState(node, group, readiness, waiting))
    registered: dict[str, int] = {}
    for s in states:
        if s.group is not None and s.readiness is not Readiness.NOT_STARTED:
            registered[s.group] = registered.get(s.group, 0) + 1
    upcoming = {g.name: max(0, g.target_size() - registered.get(g.name, 0)) for g in groups}
    return ClusterState(states, {g.name: g for g in groups}, upcoming, no_driver)

"""The last look before a node is deleted: may it go now, must it wait, or must it stay?

The planner decided on a view that is a drain old (seconds to many minutes); by the
time the pods are gone the node may have changed. Upstream re-validates before it
deletes (as Karpenter's disruption ``Validator`` does); here, on the view read at
that moment:

* the node still exists and still belongs to the group the plan named
  (``CloudProvider.node_group_for``: it may have left it or been replaced);
* no pod annotated ``safe-to-evict: "on-completion"`` still runs on it: it was left to
  finish, and deleting the node would kill it; and a node planned empty has had no
  pod scheduled since (upstream's actuator aborts an empty node's deletion in both
  cases, ``core/scaledown/actuation/actuator.go``);
* no object the live view could not read could pin it (storage-semantics 3.8);
* storage-aware, no bound PV is pinned to it (storage-semantics 3.7): one that cannot
  be migrated means the node must stay (a pod with a pinned local volume may have
  landed while it drained); one of the migratable local provisioner means the storage
  driver has not unpinned it yet, with or without a guard pod, so the node waits.

This is the only gate between the planner and ``NodeGroup.delete_nodes``: empty,
drained and unready nodes all pass through it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from autoscaler.config import Options
from autoscaler.scaledown.local_volumes import pinned_local_volumes, unpinning_local_volumes
from autoscaler.scaledown.unreadable import UnreadableProtection, unreadable_protection
from autoscaler.selectors import guard_selector
from cloudproviders.interface import CloudProvider, NodeGroup
from kube.model import ClusterObjects, Node
from simulator.drainability import is_guard_pod
from simulator.volumes import VolumeIndex

__all__ = ["Blocked", "Removable", "RemovalView", "StillPinned", "removal_blocker", "removal_view"]


@dataclass(frozen=True, slots=True)
class RemovalView:
    """What the last look reads, built once per actuator step however many nodes are due."""

    nodes: Mapping[str, Node]
    #: node -> non-migratable local volumes pinned to it now.
    pinned: Mapping[str, list[str]]
    #: node -> volumes of the migratable local provisioner still pinned to it now.
    unpinning: Mapping[str, list[str]]
    #: node -> running pods annotated ``safe-to-evict: "on-completion"``.
    on_completion: Mapping[str, list[str]]
    #: Objects the live view could not read, and the nodes they could pin (storage-semantics 3.8).
    unreadable: UnreadableProtection = field(default_factory=UnreadableProtection)
    #: node -> pods the deletion would kill that no drain moves: not DaemonSet, mirror,
    #: terminal, terminating or guard pods (an empty node must still be empty).
    workloads: Mapping[str, list[str]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Removable:
    node: Node
    group: NodeGroup


@dataclass(frozen=True, slots=True)
class Blocked:
    """The node must not go: the deletion is called off now."""

    why: str


@dataclass(frozen=True, slots=True)
class StillPinned:
    """The storage driver has not unpinned these volumes yet: wait, up to the node's drain deadline."""

    volumes: tuple[str, ...]

    @property
    def why(self) -> str:
        return ("the storage driver has not unpinned volume(s) still pinned to the node, deleting it would lose "
                "their data: " + ", ".join(self.volumes))


def removal_view(objects: ClusterObjects, options: Options) -> RemovalView:
    nodes = {n.name: n for n in objects.nodes}
    volumes = VolumeIndex(objects, options.storage, storage_aware=options.storage_aware)
    guard = guard_selector(options.storage.guard_pod_selector)
    on_completion: dict[str, list[str]] = {}
    workloads: dict[str, list[str]] = {}
    for pod in objects.pods:
        if not pod.node_name or pod.is_terminal or pod.deleted is not None:
            continue
        if pod.evict_on_completion:
            on_completion.setdefault(pod.node_name, []).append(pod.ref)
        elif not (pod.is_daemonset or pod.is_mirror or is_guard_pod(guard, pod)):
            workloads.setdefault(pod.node_name, []).append(pod.ref)
    return RemovalView(nodes, pinned_local_volumes(objects, volumes, nodes),
                       unpinning_local_volumes(objects, volumes, nodes), on_completion, unreadable_protection(objects),
                       workloads)


def removal_blocker(view: RemovalView, node_name: str, group_name: str, provider: CloudProvider, *,
                    empty: bool = False) -> Removable | Blocked | StillPinned:
    """Whether the node may go now (with its group), must stay, or must wait for its volumes.

    ``empty``: the plan found no pod to move; one scheduled there since is not deleted with
    the node (upstream's actuator aborts an empty node's deletion when new pods are scheduled).
    """
    node = view.nodes.get(node_name)
    if node is None:
        return Blocked(f"node {node_name} no longer exists")
    group = provider.node_group_for(node)
    if group is None or group.name != group_name:
        now_in = f"node group {group.name}" if group is not None else "no node group"
        return Blocked(f"node {node_name} left node group {group_name} (now in {now_in})")
    if view.unreadable.hold:
        return Blocked(view.unreadable.hold_reason)
    pinned = [*view.pinned.get(node_name, ()), *view.unreadable.nodes.get(node_name, ())]
    if pinned:
        return Blocked("node now holds local volume(s) that cannot be migrated, deleting it would lose their data: "
                       + ", ".join(sorted(pinned)))
    running = view.on_completion.get(node_name)
    if running:
        return Blocked("pod(s) left to finish (safe-to-evict: on-completion) still run there: "
                       + ", ".join(sorted(running)))
    arrived = view.workloads.get(node_name) if empty else None
    if arrived:
        return Blocked("the node was empty, pod(s) scheduled there since: " + ", ".join(sorted(arrived)))
    unpinning = view.unpinning.get(node_name)
    if unpinning:
        return StillPinned(tuple(sorted(unpinning)))
    return Removable(node, group)

"""The simulated view of the cluster that one loop's planners share.

Built once per loop from the snapshot objects and the cloud provider: node states,
the forkable snapshot (live nodes, their scheduled pods, and template copies for
upcoming nodes), the volume index, the predicate checker and one template per
group. Nodes that have not started are left out and replaced by their group's
template, as upstream does; unready nodes stay but get the ``not-ready`` taint.

A loop hands its ``ContextMemo`` to the next one (the loop keeps it; nothing else
writes it): the scheduled pods grouped per node, each node's utilization and the
pinned local volumes are taken from it while what they were derived from is the same
objects (identity, or ``==`` on frozen model objects), so an unchanged cluster of
300,000 pods costs a few comparisons instead of a pass over every pod.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass, field

from autoscaler.clusterstate import ClusterState, NodeState, Readiness, build_cluster_state, snapshot_node
from autoscaler.config import Options
from autoscaler.groupconfig import GroupConfig, group_config
from autoscaler.podindex import PodIndex, index_pods
from autoscaler.scaledown.local_volumes import PinnedVolumes, pinned_volumes
from autoscaler.templates import TemplateNode, build_templates, instantiate
from cloudproviders.interface import CloudProvider
from kube.model import ClusterObjects, Node, Pod
from simulator.predicates import PredicateChecker
from simulator.snapshot import ClusterSnapshot
from simulator.utilization import Utilization, node_utilization
from simulator.volumes import VolumeIndex

__all__ = ["LoopContext", "PodIndex", "build_context", "index_pods"]


@dataclass(frozen=True, slots=True)
class ContextMemo:
    """What one loop's context derived that the next may reuse while its inputs are the same objects.

    The loop keeps it between iterations (it writes nothing else here); ``build_context``
    compares by identity, so a memo is never wrong, only unused.
    """

    options: Options
    pods: PodIndex
    #: node -> (the node, its pod list, its utilization, whether DaemonSet pods were left out),
    #: for nodes whose pods read no clock.
    utilization: dict[str, tuple[Node, list[Pod], Utilization, bool]]
    #: The pinned local volumes per node, with what they were computed from (``_volume_inputs``).
    pinned: tuple[tuple[object, ...], PinnedVolumes] | None = None


def _same_list(a: list[Pod], b: list[Pod]) -> bool:
    return len(a) == len(b) and all(map(operator.is_, a, b))


def _same_items(a: list[object] | tuple[object, ...], b: list[object] | tuple[object, ...]) -> bool:
    if len(a) != len(b):
        return False
    if all(map(operator.is_, a, b)):
        return True
    return all(x is y or same(x, y) for x, y in zip(a, b, strict=True))


def same(a: object, b: object) -> bool:
    """Equal for a reader of model objects: identical, or equal element by element in the same order.

    Identity first (the watch caches keep an unchanged object), ``==`` on frozen
    dataclasses otherwise; lists, tuples and dicts compare in order, since order can
    decide a first-fit placement.
    """
    if a is b:
        return True
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return type(a) is type(b) and _same_items(a, b)
    if isinstance(a, dict) and isinstance(b, dict):
        if len(a) != len(b):
            return False
        return all(ka == kb and (va is vb or same(va, vb))
                   for (ka, va), (kb, vb) in zip(a.items(), b.items(), strict=True))
    return bool(a == b)


def shallow_copy(value: object) -> object:
    """A list or dict copied (a cluster API may reuse and refill its containers), anything else as is."""
    if isinstance(value, list):
        return list(value)
    if isinstance(value, dict):
        return dict(value)
    return value


def _volume_inputs(objects: ClusterObjects) -> tuple[object, ...]:
    """What ``pinned_local_volumes`` reads besides the options (copied: kept for the next loop)."""
    return tuple(shallow_copy(v) for v in (objects.volumes, objects.claims, objects.storage_classes, objects.nodes))


@dataclass(slots=True)
class LoopContext:
    objects: ClusterObjects
    options: Options
    now: float
    state: ClusterState
    snapshot: ClusterSnapshot
    volumes: VolumeIndex
    checker: PredicateChecker
    templates: dict[str, TemplateNode | None]
    #: Scheduled, non-terminal pods per node name (including nodes left out of the snapshot). Read-only.
    pods_by_node: dict[str, list[Pod]]
    #: Pods bound to nodes that are not in the snapshot.
    orphans: list[Pod] = field(default_factory=list)
    #: The cloud provider's name (``aws``, ``gce``, ``azure``, ...): some comparisons are per cloud.
    cloud: str = ""
    #: Indices of the upcoming template copies, per group.
    upcoming_idx: dict[str, list[int]] = field(default_factory=dict)
    #: Groups in backoff after a failed scale-up -> why (the loop's ``GroupBackoff``; ``plan``: none).
    backed_off: Mapping[str, str] = field(default_factory=dict)
    _utilization: dict[str, Utilization] = field(default_factory=dict)
    pod_index: PodIndex | None = None
    previous: ContextMemo | None = None
    #: Pending pods filter-out-schedulable fitted onto nodes, with the node: scale-down
    #: plans with them running there (``runonce._keep_placements``).
    placed: tuple[tuple[Pod, str], ...] = ()
    _pinned: PinnedVolumes | None = None
    _group_configs: dict[str | None, GroupConfig] = field(default_factory=dict)

    def group_config(self, group: str | None) -> GroupConfig:
        """The group's own autoscaling options over the flags (``groupconfig``), read once per loop."""
        config = self._group_configs.get(group)
        if config is None:
            node_group = self.state.groups.get(group) if group is not None else None
            config = self._group_configs[group] = group_config(node_group, self.options)
        return config

    def _pinned_volumes(self) -> PinnedVolumes:
        """Once per loop, and kept from the last loop while the volumes, claims, classes and
        nodes are the same objects."""
        if self._pinned is None:
            kept = self.previous.pinned if self.previous is not None else None
            if kept is not None and same(kept[0], (self.objects.volumes, self.objects.claims,
                                                   self.objects.storage_classes, self.objects.nodes)):
                self._pinned = kept[1]
            else:
                nodes = {s.name: s.node for s in self.state.nodes}
                self._pinned = pinned_volumes(self.objects, self.volumes, nodes)
        return self._pinned

    def pinned_local_volumes(self) -> dict[str, list[str]]:
        """node -> bound PVs pinned to it whose data cannot be migrated (storage-semantics 3.6); read only."""
        return self._pinned_volumes().kept

    def unpin_bytes(self) -> dict[str, int]:
        """node -> bytes of migratable local volumes pinned to it (what removing it unpins); read only."""
        return self._pinned_volumes().unpin_bytes

    def utilization(self, state: NodeState) -> Utilization:
        """The node's utilization as scale-down and the report read it, computed once per loop."""
        util = self._utilization.get(state.name)
        if util is None:
            pods = self.pods_by_node.get(state.name, _NO_PODS)
            kept = self.previous.utilization.get(state.name) if self.previous is not None else None
            ignore_daemonsets = self.group_config(state.group).ignore_daemonsets_utilization
            if kept is not None and kept[0] is state.node and kept[1] is pods and kept[3] is ignore_daemonsets:
                util = kept[2]
            else:
                sd = self.options.scale_down
                util = node_utilization(state.node, pods, self.now,
                                        ignore_daemonsets=ignore_daemonsets,
                                        ignore_mirror=sd.ignore_mirror_pods_utilization,
                                        storage_aware=self.options.storage_aware)
            self._utilization[state.name] = util
        return util

    def memo(self) -> ContextMemo | None:
        """What the next loop may reuse (``build_context(previous=...)``)."""
        if self.pod_index is None:
            return None
        by_node = self.pods_by_node
        nodes = {s.node.name: s.node for s in self.state.nodes}
        # A node whose pods are being deleted reads the clock (long-terminating pods): not kept.
        deleting = self.pod_index.deleting
        groups = {s.node.name: s.group for s in self.state.nodes}
        kept = {name: (nodes[name], by_node.get(name, _NO_PODS), util,
                       self.group_config(groups[name]).ignore_daemonsets_utilization)
                for name, util in self._utilization.items() if name in nodes and name not in deleting}
        pinned = (_volume_inputs(self.objects), self._pinned) if self._pinned is not None else None
        return ContextMemo(self.options, self.pod_index, kept, pinned)


_NO_PODS: list[Pod] = []


def is_expendable(pod: Pod, options: Options) -> bool:
    return pod.priority < options.scale_up.expendable_priority_cutoff


def build_context(objects: ClusterObjects, provider: CloudProvider, options: Options, now: float,
                  template_cache: MutableMapping[str, TemplateNode] | None = None, *,
                  backed_off: Mapping[str, str] | None = None, previous: ContextMemo | None = None) -> LoopContext:
    """The loop's simulated view. ``previous``: the last loop's ``LoopContext.memo()``, read only."""
    if previous is not None and previous.options is not options and previous.options != options:
        previous = None
    groups = list(provider.node_groups())
    group_of: dict[str, str] = {}
    for node in objects.nodes:
        group = provider.node_group_for(node)
        if group is not None:
            group_of[node.name] = group.name
    state = build_cluster_state(objects.nodes, groups, group_of, options, now)
    index = index_pods(objects.pods, options.scale_up.expendable_priority_cutoff,
                       previous.pods if previous is not None else None)
    pods_by_node = index.by_node
    in_snapshot = [s for s in state.nodes if s.readiness is not Readiness.NOT_STARTED]
    snapshot = ClusterSnapshot(snapshot_node(s) for s in in_snapshot)
    missing = snapshot.load_grouped(pods_by_node, index.totals, index.ports, index.anti_affinity)
    known = {s.name for s in state.nodes}
    unknown = {name for name in missing if name not in known}
    # Pods bound to nodes the cluster does not list, in the order the cluster lists them.
    orphans = [p for p in index.scheduled if p.node_name in unknown] if unknown else []
    volumes = VolumeIndex(objects, options.storage, storage_aware=options.storage_aware)
    checker = PredicateChecker(snapshot, volumes, objects.namespaces)
    templates = build_templates(state, pods_by_node, objects.controllers.values(), options, template_cache,
                                pools=volumes.pools())
    sim = LoopContext(objects, options, now, state, snapshot, volumes, checker, templates, pods_by_node, orphans,
                      backed_off=dict(backed_off or {}), pod_index=index, previous=previous, cloud=provider.name)
    for group_name, count in sorted(state.upcoming.items()):
        template = templates.get(group_name)
        if template is None:
            continue
        for i in range(count):
            node, pods = instantiate(template, f"upcoming-{i}")
            sim.upcoming_idx.setdefault(group_name, []).append(snapshot.add_node(node, pods, role="upcoming"))
    return sim

"""The simulated view of the cluster that one loop's planners share.

Built once per loop from the snapshot objects and the cloud provider: node states,
the forkable snapshot (live nodes, their scheduled pods, and template copies for
upcoming nodes), the volume index, the predicate checker and one template per
group. Nodes that have not started are left out and replaced by their group's
template, as upstream does; unready nodes stay but get the ``not-ready`` taint.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass, field

from autoscaler.clusterstate import ClusterState, NodeState, Readiness, build_cluster_state, snapshot_node
from autoscaler.config import Options
from autoscaler.templates import TemplateNode, build_templates, instantiate
from cloudproviders.interface import CloudProvider
from kube.model import ClusterObjects, Pod
from simulator.predicates import PredicateChecker
from simulator.snapshot import ClusterSnapshot
from simulator.utilization import Utilization, node_utilization
from simulator.volumes import VolumeIndex

__all__ = ["LoopContext", "build_context"]


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
    #: Scheduled, non-terminal pods per node name (including nodes left out of the snapshot).
    pods_by_node: dict[str, list[Pod]]
    #: Pods bound to nodes that are not in the snapshot.
    orphans: list[Pod] = field(default_factory=list)
    #: Indices of the upcoming template copies, per group.
    upcoming_idx: dict[str, list[int]] = field(default_factory=dict)
    #: Groups in backoff after a failed scale-up -> why (the loop's ``GroupBackoff``; ``plan``: none).
    backed_off: Mapping[str, str] = field(default_factory=dict)
    _utilization: dict[str, Utilization] = field(default_factory=dict)

    def utilization(self, state: NodeState) -> Utilization:
        """The node's utilization as scale-down and the report read it, computed once per loop."""
        util = self._utilization.get(state.name)
        if util is None:
            sd = self.options.scale_down
            util = self._utilization[state.name] = node_utilization(
                state.node, self.pods_by_node.get(state.name, ()), self.now,
                ignore_daemonsets=sd.ignore_daemonsets_utilization,
                ignore_mirror=sd.ignore_mirror_pods_utilization,
                storage_aware=self.options.storage_aware)
        return util


def is_expendable(pod: Pod, options: Options) -> bool:
    return pod.priority < options.scale_up.expendable_priority_cutoff


def build_context(objects: ClusterObjects, provider: CloudProvider, options: Options, now: float,
                  template_cache: MutableMapping[str, TemplateNode] | None = None, *,
                  backed_off: Mapping[str, str] | None = None) -> LoopContext:
    groups = list(provider.node_groups())
    group_of: dict[str, str] = {}
    for node in objects.nodes:
        group = provider.node_group_for(node)
        if group is not None:
            group_of[node.name] = group.name
    state = build_cluster_state(objects.nodes, groups, group_of, options, now)
    pods_by_node: dict[str, list[Pod]] = {}
    scheduled = []
    for pod in objects.pods:
        if pod.node_name and not pod.is_terminal and not is_expendable(pod, options):
            scheduled.append(pod)
            pods_by_node.setdefault(pod.node_name, []).append(pod)
    in_snapshot = [s for s in state.nodes if s.readiness is not Readiness.NOT_STARTED]
    snapshot = ClusterSnapshot(snapshot_node(s) for s in in_snapshot)
    orphans = snapshot.load_pods(scheduled)
    known = {s.name for s in state.nodes}
    orphans = [p for p in orphans if p.node_name not in known]
    volumes = VolumeIndex(objects, options.storage, storage_aware=options.storage_aware)
    checker = PredicateChecker(snapshot, volumes, objects.namespaces)
    templates = build_templates(state, pods_by_node, objects.controllers.values(), options, template_cache)
    sim = LoopContext(objects, options, now, state, snapshot, volumes, checker, templates, pods_by_node, orphans,
                      backed_off=dict(backed_off or {}))
    for group_name, count in sorted(state.upcoming.items()):
        template = templates.get(group_name)
        if template is None:
            continue
        for i in range(count):
            node, pods = instantiate(template, f"upcoming-{i}")
            sim.upcoming_idx.setdefault(group_name, []).append(snapshot.add_node(node, pods, role="upcoming"))
    return sim

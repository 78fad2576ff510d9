"""``--balance-similar-node-groups``: which groups are alike, and how to split a scale-up.

Two groups are similar when their templates have the same capacity in every resource
(memory within 1.5%), allocatable and free resources within 5% (relative to the
larger value), and the same labels apart from ones that differ by nature (hostname,
zone, region, and ``--balancing-ignore-label``). A scale-up of N nodes is then spread
one node at a time onto the group that is currently the smallest, never past a
group's max (upstream's comparator and ``BalanceScaleUpBetweenGroups``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from autoscaler.context import LoopContext
from kube.model import Node, Resources

__all__ = ["nodes_similar", "similar_groups", "split_between"]

IGNORED_LABELS = frozenset({
    "kubernetes.io/hostname",
    "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region",
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
    "beta.kubernetes.io/fluentd-ds-ready",
    "kops.k8s.io/instancegroup",
})
#: Labels each cloud's own comparator also ignores (upstream ``processors/nodegroupset``:
#: ``aws_nodegroups.go``, ``gce_nodegroups.go``, ``azure_nodegroups.go``): node group names, and
#: the CSI drivers' zone keys, which differ between otherwise equal groups in two zones.
CLOUD_IGNORED_LABELS: dict[str, frozenset[str]] = {
    "aws": frozenset({"alpha.eksctl.io/instance-id", "alpha.eksctl.io/nodegroup-name", "eks.amazonaws.com/nodegroup",
                      "k8s.amazonaws.com/eniConfig", "lifecycle", "topology.ebs.csi.aws.com/zone",
                      "topology.gke.io/zone"}),
    "gce": frozenset({"topology.gke.io/zone"}),
    "azure": frozenset({"kubernetes.azure.com/agentpool", "agentpool", "topology.disk.csi.azure.com/zone",
                        "aksEngineVersion", "creationSource", "poolName", "resourceNameSuffix",
                        "kubernetes.azure.com/node-image-version",
                        "kubernetes.azure.com/consolidated-additional-properties"}),
}
#: Azure's comparator: two groups of one AKS agent pool are similar whatever else differs.
AZURE_POOL_LABELS = ("kubernetes.azure.com/agentpool", "agentpool")
MEMORY_DIFFERENCE_RATIO = 0.015
MAX_ALLOCATABLE_DIFFERENCE_RATIO = 0.05
MAX_FREE_DIFFERENCE_RATIO = 0.05


def _close(a: int, b: int, ratio: float) -> bool:
    larger, smaller = max(a, b), min(a, b)
    return larger - smaller <= larger * ratio


def _vector(r: Resources) -> dict[str, int]:
    out = {"cpu": r.cpu, "memory": r.memory, "ephemeral-storage": r.ephemeral_storage, "pods": r.pods}
    out.update(dict(r.extended))
    return out


def nodes_similar(a: Node, b: Node, free_a: Resources, free_b: Resources, ignored: Iterable[str] = ()) -> bool:
    cap_a, cap_b = _vector(a.capacity), _vector(b.capacity)
    if set(cap_a) != set(cap_b):
        return False
    for name, value in cap_a.items():
        if name == "memory":
            if not _close(value, cap_b[name], MEMORY_DIFFERENCE_RATIO):
                return False
        elif value != cap_b[name]:
            return False
    for x, y, ratio in ((a.allocatable, b.allocatable, MAX_ALLOCATABLE_DIFFERENCE_RATIO),
                        (free_a, free_b, MAX_FREE_DIFFERENCE_RATIO)):
        vx, vy = _vector(x), _vector(y)
        if any(not _close(vx.get(k, 0), vy.get(k, 0), ratio) for k in set(vx) | set(vy)):
            return False
    skip = IGNORED_LABELS | set(ignored)
    labels_a = {k: v for k, v in a.labels.items() if k not in skip}
    labels_b = {k: v for k, v in b.labels.items() if k not in skip}
    return labels_a == labels_b and a.max_local_bytes == b.max_local_bytes


def _free(node: Node, pods: Iterable[Resources]) -> Resources:
    """Allocatable minus requests. Upstream subtracts no pod count (a NodeInfo's requested
    resources carry none), so free pods is allocatable pods."""
    cpu, memory, eph = node.allocatable.cpu, node.allocatable.memory, node.allocatable.ephemeral_storage
    for r in pods:
        cpu -= r.cpu
        memory -= r.memory
        eph -= r.ephemeral_storage
    return Resources(cpu, memory, eph, node.allocatable.pods)


def similar_groups(sim: LoopContext, group: str, ignored_labels: Iterable[str]) -> list[str]:
    """Groups below their max whose template is similar to ``group``'s."""
    base = sim.templates.get(group)
    if base is None:
        return []
    base_free = _free(base.node, (p.requests for p in base.pods))
    ignored = {*ignored_labels, *CLOUD_IGNORED_LABELS.get(sim.cloud, ())}
    out = []
    for name, other_group in sorted(sim.state.groups.items()):
        other = sim.templates.get(name)
        if name == group or other is None or other_group.target_size() >= other_group.max_size():
            continue
        if (sim.cloud == "azure" and _same_azure_pool(base.node, other.node)) or nodes_similar(
                base.node, other.node, base_free, _free(other.node, (p.requests for p in other.pods)), ignored):
            out.append(name)
    return out


def _same_azure_pool(a: Node, b: Node) -> bool:
    """Upstream ``nodesFromSameAzureNodePool``: the same AKS pool label (current, then legacy) on both."""
    return any(a.labels.get(key) and a.labels.get(key) == b.labels.get(key) for key in AZURE_POOL_LABELS)


def split_between(groups: Mapping[str, tuple[int, int]], delta: int) -> dict[str, int]:
    """Spread ``delta`` new nodes over groups (name -> (target, max)), smallest first.

    Upstream ``BalanceScaleUpBetweenGroups``: capped at the room the groups have left,
    groups sorted by current size (ties keep the given order: the chosen group first),
    then one node at a time to the group that is smallest, never past a group's max.
    """
    names = sorted(groups, key=lambda g: groups[g][0])  # stable: ties keep the given order
    new = {g: groups[g][0] for g in names}
    left = min(delta, sum(max(0, groups[g][1] - groups[g][0]) for g in names))
    start = current = 0
    while left > 0:
        name = names[current]
        if new[name] < groups[name][1]:
            new[name] += 1
            left -= 1
        else:  # at its max: out of the rotation (moved before ``start``)
            names[start], names[current] = names[current], names[start]
            start += 1
        if current < len(names) - 1 and new[names[current]] > new[names[current + 1]]:
            current += 1
        else:
            current = start
    return {g: new[g] - groups[g][0] for g in groups}

"""Node groups described by the snapshot's ``NodeGroup`` objects (``plan``'s provider).

Membership is by node name and/or node labels (``plan-contract.md``); resizing only
records the new target, since ``plan`` never acts. The simulated cloud's groups
(``emulator.cloud``) extend this bookkeeping with node creation and deletion.
"""

from __future__ import annotations

from collections.abc import Sequence

from cloudproviders.interface import CloudError, GroupOptions, Instance, InstanceState, NodeGroup
from kube.model import Node, NodeGroupSpec, Pod

__all__ = ["SnapshotNodeGroup", "SnapshotProvider"]


class SnapshotNodeGroup:
    def __init__(self, spec: NodeGroupSpec, members: Sequence[str]) -> None:
        self.spec = spec
        self._members = list(members)
        self._target = spec.target_size if spec.target_size is not None else len(self._members)

    @property
    def name(self) -> str:
        return self.spec.name

    def min_size(self) -> int:
        return self.spec.min_size

    def max_size(self) -> int:
        return self.spec.max_size

    def target_size(self) -> int:
        return self._target

    def node_names(self) -> Sequence[str]:
        return tuple(self._members)

    def instances(self) -> Sequence[Instance]:
        """Members as running instances (id ``snapshot:///<group>/<node>``); the rest of the target as creating."""
        running = [Instance(f"snapshot:///{self.name}/{n}", InstanceState.RUNNING) for n in self._members]
        creating = [Instance(f"snapshot:///{self.name}/requested-{i}", InstanceState.CREATING)
                    for i in range(max(0, self._target - len(self._members)))]
        return (*running, *creating)

    def template_node(self) -> Node | None:
        return self.spec.template

    def template_pods(self) -> tuple[Pod, ...]:
        """None: a ``NodeGroup`` object's template says what the node runs (plan contract)."""
        return ()

    def price_per_hour(self) -> float | None:
        return self.spec.price_per_hour

    def group_options(self) -> GroupOptions:
        """The ``NodeGroup`` object's ``spec.autoscalingOptions`` (CA's per-group option tags)."""
        return GroupOptions.of(dict(self.spec.autoscaling_options))

    def increase_size(self, delta: int) -> None:
        if delta <= 0:
            raise CloudError(f"node group {self.name}: size increase must be positive, got {delta}")
        if self._target + delta > self.spec.max_size:
            raise CloudError(f"node group {self.name}: size {self._target + delta} above max {self.spec.max_size}")
        self._target += delta

    def delete_nodes(self, nodes: Sequence[Node]) -> None:
        self.delete_names([n.name for n in nodes])

    def delete_names(self, names: Sequence[str]) -> None:
        for name in names:
            if name not in self._members:
                raise CloudError(f"node group {self.name}: node {name} is not a member")
        if len(set(names)) != len(names):
            raise CloudError(f"node group {self.name}: node names repeated in {list(names)}")
        if self._target - len(names) < self.spec.min_size:
            raise CloudError(f"node group {self.name}: deleting {len(names)} nodes goes below min {self.spec.min_size}")
        for name in names:
            self._members.remove(name)
        self._target -= len(names)

    def decrease_target_size(self, delta: int) -> None:
        if delta >= 0:
            raise CloudError(f"node group {self.name}: size decrease must be negative, got {delta}")
        if self._target + delta < len(self._members):
            raise CloudError(f"node group {self.name}: attempt to delete existing nodes: target {self._target}, "
                             f"registered {len(self._members)}, delta {delta}")
        self._target += delta


class SnapshotProvider:
    """Groups from ``NodeGroup`` objects; a node belongs to the first group that selects it."""

    def __init__(self, specs: Sequence[NodeGroupSpec], nodes: Sequence[Node]) -> None:
        self._by_node: dict[str, SnapshotNodeGroup] = {}
        members: dict[str, list[str]] = {spec.name: [] for spec in specs}
        owner: dict[str, str] = {}
        for node in nodes:
            for spec in specs:
                if spec.selects(node):
                    members[spec.name].append(node.name)
                    owner[node.name] = spec.name
                    break
        self._groups = [SnapshotNodeGroup(spec, members[spec.name]) for spec in specs]
        by_name = {g.name: g for g in self._groups}
        self._by_node = {node: by_name[group] for node, group in owner.items()}

    @property
    def name(self) -> str:
        return "snapshot"

    def node_groups(self) -> Sequence[NodeGroup]:
        return self._groups

    def node_group_for(self, node: Node) -> NodeGroup | None:
        return self._by_node.get(node.name)

    def refresh(self) -> None:
        """Nothing to refresh: the snapshot is the whole truth."""

"""The simulated cloud: node groups that launch nodes after a delay and delete them at once.

``SimCloud`` implements ``cloudproviders.interface.CloudProvider`` and its groups
implement ``NodeGroup`` and ``Priced``, built from the scenario's ``NodeGroup`` objects
(members by name and/or node labels, as ``cloudproviders.snapshot``; a node belongs to
the first group that selects it).

* ``increase_size(d)`` raises the target at once and registers ``d`` nodes
  ``<group>-<n>`` after ``provisioningDelay``: copies of the group's template with their
  own hostname, Ready from creation, ``creationTimestamp`` = registration time, a
  ``providerID``, and *without* the storage driver's label and annotation (the driver
  writes them once it starts, ``emulator.storage_driver``).
* ``delete_nodes(names)`` removes the nodes at once (their pods are deleted; controllers
  recreate them) and lowers the target; a node still holding a pinned local volume
  with a claim is data loss (counted by the cluster).
* ``fail_deletes(times, message)`` is a fault-injection hook for tests and scenarios:
  the group's next ``times`` ``delete_nodes`` calls raise ``CloudError`` and change nothing.
* Instance counts (registered and provisioning) go to ``Metrics`` for node-hours and cost.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence

from cloudproviders.interface import CloudError, NodeGroup
from cloudproviders.snapshot import SnapshotNodeGroup
from emulator.clock import SimClock
from emulator.cluster import SimCluster
from emulator.metrics import Metrics
from emulator.timeline import Timeline
from kube.model import Node, NodeGroupSpec
from kube.names import CA_DELETION_CANDIDATE_TAINT, CA_TO_BE_DELETED_TAINT, HOSTNAME_LABEL, StorageNames

__all__ = ["SimCloud", "SimNodeGroup"]


class SimNodeGroup(SnapshotNodeGroup):
    """One group; see the module docstring for the semantics of each call."""

    def __init__(self, cloud: SimCloud, spec: NodeGroupSpec, members: Sequence[str]) -> None:
        super().__init__(spec, members)
        self._cloud = cloud
        #: Names launched but not registered yet.
        self._provisioning: list[str] = []
        pattern = re.compile(rf"^{re.escape(spec.name)}-(\d+)$")
        numbers = [int(m.group(1)) for n in self._members if (m := pattern.match(n))]
        self._next = max(numbers, default=0) + 1
        self._listed: NodeGroupSpec | None = None
        #: Messages of the injected faults still to come, one per failing ``delete_nodes`` call.
        self._delete_faults: list[str] = []

    # --- NodeGroup (validation and target bookkeeping are SnapshotNodeGroup's) -----------
    def increase_size(self, delta: int) -> None:
        if self.spec.template is None and not self._members:
            raise CloudError(f"node group {self.name}: no template and no node to copy")
        super().increase_size(delta)
        self._listed = None
        self._cloud.launch(self, delta)

    def delete_nodes(self, nodes: Sequence[Node]) -> None:
        self.delete_names([n.name for n in nodes])

    def delete_names(self, names: Sequence[str]) -> None:
        if self._delete_faults:
            raise CloudError(f"node group {self.name}: {self._delete_faults.pop(0)}")
        super().delete_names(names)
        self._listed = None
        self._cloud.terminate(self, names)

    # --- fault injection (tests and scenarios) ----------------------------------------------
    def fail_deletes(self, times: int, message: str = "injected fault: the cloud refused to delete the nodes") -> None:
        """Test/scenario hook: the next ``times`` calls of ``delete_nodes`` raise ``CloudError``.

        A failing call changes nothing (members, target, cluster and metrics stay as they
        were), as a cloud API that rejects the request would. Faults add up over calls;
        ``times=0`` adds none. Raises ``ValueError`` for a negative ``times``.
        """
        if times < 0:
            raise ValueError(f"fail_deletes: times must not be negative, got {times}")
        self._delete_faults.extend([message] * times)

    @property
    def pending_delete_faults(self) -> int:
        """How many injected ``delete_nodes`` failures are still to come."""
        return len(self._delete_faults)

    # --- the world's side ------------------------------------------------------------------
    @property
    def provisioning(self) -> Sequence[str]:
        return tuple(self._provisioning)

    def instance_count(self) -> int:
        return len(self._members) + len(self._provisioning)

    def current_spec(self) -> NodeGroupSpec:
        """The group as a ``NodeGroup`` object would show it now (listed by ``list_objects``)."""
        if self._listed is None:
            self._listed = dataclasses.replace(self.spec, target_size=self._target, node_names=tuple(self._members))
        return self._listed

    def next_name(self, taken: Callable[[str], bool]) -> str:
        while True:
            name = f"{self.name}-{self._next}"
            self._next += 1
            if not taken(name):
                return name

    def new_node(self, name: str, now: float, names: StorageNames) -> Node:
        base = self.spec.template
        if base is None:
            base = self._cloud.cluster.node(self._members[0]) if self._members else None
        if base is None:
            raise CloudError(f"node group {self.name}: no template and no node to copy")
        labels = {k: v for k, v in base.labels.items() if k != names.max_capacity_label}
        labels[HOSTNAME_LABEL] = name
        annotations = {k: v for k, v in base.annotations.items() if k != names.capacity_annotation}
        taints = tuple(t for t in base.taints if t.key not in (CA_TO_BE_DELETED_TAINT, CA_DELETION_CANDIDATE_TAINT))
        return dataclasses.replace(
            base, name=name, labels=labels, annotations=annotations, taints=taints, unschedulable=False,
            ready=True, ready_since=now, created=now, deleting=False, provider_id=f"sim:///{self.name}/{name}",
            free_local_bytes=None, max_local_bytes=None,
        )

    def raise_target_to(self, size: int) -> None:
        self._target = max(self._target, size)
        self._listed = None

    def add_provisioning(self, name: str) -> None:
        self._provisioning.append(name)

    def register(self, name: str) -> bool:
        if name not in self._provisioning:
            return False
        self._provisioning.remove(name)
        self._members.append(name)
        self._listed = None
        return True

    def adopt(self, name: str) -> None:
        """A node that joined from outside (a scenario event): a member, and the target follows."""
        if name not in self._members:
            self._members.append(name)
            self._target += 1
            self._listed = None

    def forget(self, name: str) -> bool:
        """A member disappeared from outside (a scenario deleted the Node)."""
        if name not in self._members:
            return False
        self._members.remove(name)
        self._target = max(0, self._target - 1)
        self._listed = None
        return True


class SimCloud:
    """``CloudProvider`` over ``SimNodeGroup``s; registers itself as the cluster's ``NodeGroup`` source."""

    def __init__(self, specs: Sequence[NodeGroupSpec], cluster: SimCluster, clock: SimClock, timeline: Timeline,
                 *, metrics: Metrics, names: StorageNames, provisioning_delay: float) -> None:
        self.cluster = cluster
        self.clock = clock
        self.timeline = timeline
        self.metrics = metrics
        self.names = names
        self.provisioning_delay = provisioning_delay
        #: Called after ``delete_nodes`` changed the cluster (the world settles).
        self.on_change: Callable[[], None] | None = None
        members: dict[str, list[str]] = {s.name: [] for s in specs}
        for node in cluster.nodes():
            spec = next((s for s in specs if s.selects(node)), None)
            if spec is not None:
                members[spec.name].append(node.name)
        self._groups = [SimNodeGroup(self, s, members[s.name]) for s in specs]
        self._by_name = {g.name: g for g in self._groups}
        self._by_node = {n: g for g in self._groups for n in g.node_names()}
        for group in self._groups:
            metrics.prices[group.name] = group.price_per_hour()
            metrics.set_instances(group.name, group.instance_count())
        cluster.node_group_specs = self.specs

    @property
    def name(self) -> str:
        return "emulator"

    def node_groups(self) -> Sequence[NodeGroup]:
        return self._groups

    def node_group_for(self, node: Node) -> NodeGroup | None:
        return self._by_node.get(node.name)

    def refresh(self) -> None:
        """The simulated cloud is always current."""

    def group(self, name: str) -> SimNodeGroup:
        return self._by_name[name]

    def groups(self) -> Sequence[SimNodeGroup]:
        return self._groups

    def group_of(self, node_name: str) -> SimNodeGroup | None:
        return self._by_node.get(node_name)

    def specs(self) -> list[NodeGroupSpec]:
        return [g.current_spec() for g in self._groups]

    def fill_to_target(self) -> None:
        """At the start: launch what the groups' targets (at least their minimum) ask beyond their members."""
        for group in self._groups:
            want = max(group.target_size(), group.min_size())
            missing = want - group.instance_count()
            group.raise_target_to(want)
            if missing > 0:
                self.launch(group, missing)

    # --- effects ----------------------------------------------------------------------------
    def launch(self, group: SimNodeGroup, count: int) -> None:
        at = self.clock.now + self.provisioning_delay
        taken = {n for g in self._groups for n in g.provisioning}
        for _ in range(count):
            name = group.next_name(lambda n: n in taken or self.cluster.node(n) is not None)
            taken.add(name)
            group.add_provisioning(name)
            self.timeline.schedule(at, f"node {name} of {group.name} registers", self._registration(group, name))
        self.metrics.set_instances(group.name, group.instance_count())

    def _registration(self, group: SimNodeGroup, name: str) -> Callable[[], None]:
        def register() -> None:
            if group.register(name):
                self.cluster.put_node(group.new_node(name, self.clock.now, self.names))
                self._by_node[name] = group

        return register

    def terminate(self, group: SimNodeGroup, names: Sequence[str]) -> None:
        for name in names:
            self._by_node.pop(name, None)
            self.cluster.terminate_node(name)
        self.metrics.set_instances(group.name, group.instance_count())
        if self.on_change is not None:
            self.on_change()

    def adopt(self, node: Node) -> None:
        """A Node created by a scenario event joins the first group that selects it."""
        group = next((g for g in self._groups if g.spec.selects(node)), None)
        if group is not None:
            group.adopt(node.name)
            self._by_node[node.name] = group
            self.metrics.set_instances(group.name, group.instance_count())

    def forget(self, node_name: str) -> None:
        group = self._by_node.pop(node_name, None)
        if group is not None and group.forget(node_name):
            self.metrics.set_instances(group.name, group.instance_count())

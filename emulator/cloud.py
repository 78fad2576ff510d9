"""The simulated cloud: node groups that launch nodes after a delay and delete them at once.

``SimCloud`` implements ``cloudproviders.interface.CloudProvider`` and its groups
implement ``NodeGroup`` and ``Priced``, built from the scenario's ``NodeGroup`` objects
(members by name and/or node labels, as ``cloudproviders.snapshot``; a node belongs to
the first group that selects it).

* ``increase_size(d)`` raises the target at once and registers ``d`` nodes
  ``<group>-<n>`` after ``provisioningDelay``: copies of the group's template with their
  own hostname, Ready from creation, ``creationTimestamp`` = registration time, the
  ``providerID`` ``sim:///<group>/<name>``, and *without* the storage driver's label and
  annotation (the driver writes them once it starts, ``emulator.storage_driver``).
* ``instances()`` lists members (``Running``, by their node's ``providerID``), instances
  on their way (``Creating``) and instances that failed (``Creating`` with an
  ``InstanceError``); ``decrease_target_size`` cancels failed ones first, then the
  newest on their way, never a member.
* Cloud faults (``Scenario.cloud_faults``, or ``add_fault``): in a fault's window,
  ``OutOfCapacity`` makes new instances fail, ``Quota`` and ``Transient`` make
  ``increase_size`` raise ``QuotaExceeded`` / ``Transient``, ``SlowProvisioning`` makes
  new instances take longer to register.
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

from cloudproviders.interface import (
    CloudError,
    Instance,
    InstanceError,
    InstanceErrorClass,
    InstanceState,
    NodeGroup,
    QuotaExceeded,
    Transient,
)
from cloudproviders.snapshot import SnapshotNodeGroup
from emulator.clock import SimClock
from emulator.cluster import SimCluster
from emulator.metrics import Metrics
from emulator.scenario import CloudFault, FaultKind
from emulator.timeline import Timeline
from kube.model import Node, NodeGroupSpec
from kube.names import CA_DELETION_CANDIDATE_TAINT, CA_TO_BE_DELETED_TAINT, HOSTNAME_LABEL, StorageNames

__all__ = ["STOCKOUT_CODE", "SimCloud", "SimNodeGroup", "provider_id"]

#: The error code a stocked-out instance carries (AWS's; GCE says ZONE_RESOURCE_POOL_EXHAUSTED).
STOCKOUT_CODE = "InsufficientInstanceCapacity"


def provider_id(group: str, node: str) -> str:
    """The ``spec.providerID`` of a simulated instance."""
    return f"sim:///{group}/{node}"


class SimNodeGroup(SnapshotNodeGroup):
    """One group; see the module docstring for the semantics of each call."""

    def __init__(self, cloud: SimCloud, spec: NodeGroupSpec, members: Sequence[str]) -> None:
        super().__init__(spec, members)
        self._cloud = cloud
        #: Names launched but not registered yet.
        self._provisioning: list[str] = []
        #: Instances that failed to be created: name -> error (never registers, not billed).
        self._failed: dict[str, InstanceError] = {}
        pattern = re.compile(rf"^{re.escape(spec.name)}-(\d+)$")
        numbers = [int(m.group(1)) for n in self._members if (m := pattern.match(n))]
        self._next = max(numbers, default=0) + 1
        self._listed: NodeGroupSpec | None = None
        #: Messages of the injected faults still to come, one per failing ``delete_nodes`` call.
        self._delete_faults: list[str] = []

    # --- NodeGroup (validation and target bookkeeping are SnapshotNodeGroup's) -----------
    def instances(self) -> Sequence[Instance]:
        cluster = self._cloud.cluster
        out = []
        for name in self._members:
            node = cluster.node(name)
            out.append(Instance(node.provider_id if node is not None and node.provider_id
                                else provider_id(self.name, name), InstanceState.RUNNING))
        out += [Instance(provider_id(self.name, n), InstanceState.CREATING) for n in self._provisioning]
        out += [Instance(provider_id(self.name, n), InstanceState.CREATING, e) for n, e in self._failed.items()]
        return out

    def increase_size(self, delta: int) -> None:
        if self.spec.template is None and not self._members:
            raise CloudError(f"node group {self.name}: no template and no node to copy")
        self._cloud.check_increase(self)
        super().increase_size(delta)
        self._listed = None
        self._cloud.launch(self, delta)

    def decrease_target_size(self, delta: int) -> None:
        super().decrease_target_size(delta)  # validates: delta < 0, never below the members
        self._listed = None
        for _ in range(-delta):
            if self._failed:
                self._failed.pop(next(iter(self._failed)))
            elif self._provisioning:
                self._provisioning.pop()  # its registration, when due, finds nothing to register
        self._cloud.metrics.set_instances(self.name, self.instance_count())

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
            ready=True, ready_since=now, created=now, deleting=False, provider_id=provider_id(self.name, name),
            free_local_bytes=None, max_local_bytes=None,
        )

    def raise_target_to(self, size: int) -> None:
        self._target = max(self._target, size)
        self._listed = None

    def add_provisioning(self, name: str) -> None:
        self._provisioning.append(name)

    def add_failed(self, name: str, error: InstanceError) -> None:
        self._failed[name] = error

    @property
    def failed(self) -> Sequence[str]:
        return tuple(self._failed)

    def register(self, name: str) -> bool:
        if name not in self._provisioning:
            return False
        self._provisioning.remove(name)
        self._members.append(name)
        self._listed = None
        return True

    def adopt(self, name: str) -> None:
        """A node that joined from outside (a scenario event, the start): a member, and the target follows."""
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
                 *, metrics: Metrics, names: StorageNames, provisioning_delay: float,
                 faults: Sequence[CloudFault] = (), start: float | None = None) -> None:
        self.cluster = cluster
        self.clock = clock
        self.timeline = timeline
        self.metrics = metrics
        self.names = names
        self.provisioning_delay = provisioning_delay
        #: Absolute times: (fault, window start, window end, calls still to fail).
        self._faults: list[tuple[CloudFault, float, float, list[int]]] = []
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
        #: Members' ``spec.providerID`` -> group (what ``node_group_for`` reads).
        self._by_provider: dict[str, SimNodeGroup] = {}
        for name, group in self._by_node.items():
            self._give_provider_id(group, name)
        origin = clock.now if start is None else start
        for fault in faults:
            self.add_fault(fault, origin)
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
        """By ``spec.providerID``, as a real provider maps nodes: a node whose ID is not one of
        a group's instances is not autoscaled, whatever its name."""
        return self._by_provider.get(node.provider_id) if node.provider_id else None

    def refresh(self) -> None:
        """The simulated cloud is always current."""

    # --- faults --------------------------------------------------------------------------------
    def add_fault(self, fault: CloudFault, origin: float | None = None) -> None:
        """Inject ``fault``; its window is relative to ``origin`` (default: now). Raises
        ``ValueError`` for an unknown group."""
        if fault.group not in self._by_name:
            raise ValueError(f"cloud fault {fault.kind.value}: no node group {fault.group!r}")
        at = self.clock.now if origin is None else origin
        self._faults.append((fault, at + fault.start, at + fault.end, [fault.times]))

    def _active(self, group: SimNodeGroup, kind: FaultKind) -> tuple[CloudFault, list[int]] | None:
        now = self.clock.now
        for fault, start, end, left in self._faults:
            if fault.group == group.name and fault.kind is kind and start <= now < end and left[0] > 0:
                return fault, left
        return None

    def check_increase(self, group: SimNodeGroup) -> None:
        """Raise what an active ``Quota`` or ``Transient`` fault says ``increase_size`` raises."""
        if self._active(group, FaultKind.QUOTA) is not None:
            raise QuotaExceeded(f"node group {group.name}: injected: vCPU quota exceeded in the region")
        transient = self._active(group, FaultKind.TRANSIENT)
        if transient is not None:
            transient[1][0] -= 1
            raise Transient(f"node group {group.name}: injected: request throttled", retry_after=2.0)

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
        slow = self._active(group, FaultKind.SLOW_PROVISIONING)
        at = self.clock.now + (slow[0].provisioning_delay if slow is not None else self.provisioning_delay)
        stockout = self._active(group, FaultKind.OUT_OF_CAPACITY) is not None
        taken = {n for g in self._groups for n in (*g.provisioning, *g.failed)}
        for _ in range(count):
            name = group.next_name(lambda n: n in taken or self.cluster.node(n) is not None)
            taken.add(name)
            if stockout:
                group.add_failed(name, InstanceError(
                    InstanceErrorClass.OUT_OF_CAPACITY, STOCKOUT_CODE,
                    f"injected: no capacity for {group.name} instances in the zone"))
                continue
            group.add_provisioning(name)
            self.timeline.schedule(at, f"node {name} of {group.name} registers", self._registration(group, name))
        self.metrics.set_instances(group.name, group.instance_count())

    def _registration(self, group: SimNodeGroup, name: str) -> Callable[[], None]:
        def register() -> None:
            if group.register(name):
                self.cluster.put_node(group.new_node(name, self.clock.now, self.names))
                self._by_node[name] = group
                self._by_provider[provider_id(group.name, name)] = group

        return register

    def terminate(self, group: SimNodeGroup, names: Sequence[str]) -> None:
        for name in names:
            self._by_node.pop(name, None)
            self._forget_provider_id(name)
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
            self._give_provider_id(group, node.name)
            self.metrics.set_instances(group.name, group.instance_count())

    def _give_provider_id(self, group: SimNodeGroup, name: str) -> None:
        """A member without ``spec.providerID`` gets its instance's, as a kubelet on a cloud VM would."""
        node = self.cluster.node(name)
        if node is None:
            return
        if not node.provider_id:
            node = dataclasses.replace(node, provider_id=provider_id(group.name, name))
            self.cluster.put_node(node)
        self._by_provider[node.provider_id] = group

    def _forget_provider_id(self, name: str) -> None:
        node = self.cluster.node(name)
        if node is not None:
            self._by_provider.pop(node.provider_id, None)

    def forget(self, node_name: str) -> None:
        group = self._by_node.pop(node_name, None)
        self._forget_provider_id(node_name)
        if group is not None and group.forget(node_name):
            self.metrics.set_instances(group.name, group.instance_count())

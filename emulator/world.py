"""The simulated world: a cluster and a cloud that the real autoscaler loop drives from outside.

``python -m autoscaler simulate SCENARIO`` builds a ``World`` and loops::

    world.advance(until=t)                        # time passes: events, nodes, driver, scheduler
    decision = <the real loop>(world.cluster.list_objects(), world.cloud, now=world.clock.now)
    <the real actuator>(world.cluster, world.cloud)   # taint, evict, delete pods, resize groups

so the world must behave like Kubernetes plus a cloud: an API server that honours
PodDisruptionBudgets and lets evicted pods terminate for their grace period
(``SimCluster``), node groups that launch nodes after a delay and run out of capacity
when the scenario says so (``SimCloud``), controllers that recreate pods, a scheduler that binds them with the
storage-aware predicate (``Scheduler``), and the storage driver that writes capacity,
unpins volumes on draining nodes and guards them (``StorageDriver``, ``GuardController``).

Time only moves in ``advance``: timed actions run in time order, and after each, the
world *settles* (controllers, guards and the driver react to what changed) and the
scheduler runs if a pending pod may now fit. The ``ClusterAPI`` and cloud calls the
autoscaler makes between advances settle at once; their pods are scheduled at the
start of the next ``advance``, at the time the calls were made.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping

import msgspec.structs

from emulator.attach_detach import AttachDetachController
from emulator.clock import SimClock
from emulator.cloud import SimCloud
from emulator.cluster import SimCluster
from emulator.controllers import WORKLOAD_KINDS, WorkloadControllers
from emulator.driver_faults import DriverFaults
from emulator.guard import GuardController
from emulator.ids import IdSource
from emulator.metrics import Metrics, Sample
from emulator.objects import Prepared, prepare, prepare_scenario
from emulator.scenario import ObjectKey, Scenario, ScenarioEvent
from emulator.scheduler import Scheduler
from emulator.storage_driver import StorageDriver
from emulator.timeline import Timeline
from kube.convert import InputError
from kube.featuregates import FeatureGates
from kube.model import Node, Pod
from kube.names import StorageNames

__all__ = ["DEFAULT_NAMES", "World"]

DEFAULT_NAMES = StorageNames()
#: Reactions to one change should die out quickly; more rounds than this is a bug.
_MAX_ROUNDS = 10_000


class World:
    """A cluster + cloud built from a scenario; see the module docstring."""

    def __init__(self, scenario: Scenario, names: StorageNames = DEFAULT_NAMES, seed: int = 0,
                 gates: FeatureGates | None = None) -> None:
        self.scenario = scenario
        self.names = names
        #: The Kubernetes feature gates objects are read under (``--feature-gates``).
        self.gates = gates
        self.seed = seed
        self.clock = SimClock(scenario.start)
        self.metrics = Metrics(self.clock)
        self.timeline = Timeline()
        self.ids = IdSource(seed)
        self.cluster = SimCluster(self.clock, names, self.metrics)
        self.workloads = WorkloadControllers(self.cluster, self.clock, self.ids)
        self.guard = GuardController(self.cluster, self.clock, self.ids, names)
        self.scheduler = Scheduler(self.cluster, names, self.ids, random.Random(seed))
        self._settling = False

        began = time.perf_counter()
        initial = prepare_scenario(scenario, names, gates)
        decoded = time.perf_counter()
        batches = [self._prepare_event(ev) for ev in scenario.events]
        self._validate_events(initial, batches)
        self._apply(initial, joins_groups=False)
        groups = {g.name for g in initial.objects.node_groups}
        for fault in scenario.cloud_faults:
            if fault.group not in groups:
                raise InputError(scenario.source, scenario.ref, f"spec.cloudFaults[{fault.index}].group",
                                 f"no NodeGroup {fault.group!r} in the scenario")
        self.cloud = SimCloud(initial.objects.node_groups, self.cluster, self.clock, self.timeline,
                              metrics=self.metrics, names=names, provisioning_delay=scenario.provisioning_delay,
                              faults=scenario.cloud_faults, start=scenario.start)
        self.driver_faults = self._driver_faults(scenario, groups)
        self.guard.faults = self.driver_faults
        self.driver = StorageDriver(self.cluster, self.clock, self.timeline, self.guard, names,
                                    start_delay=scenario.storage_driver_start_delay,
                                    unpin_seconds_per_gib=scenario.unpin_seconds_per_gib,
                                    max_capacity_for=self._max_capacity_for, faults=self.driver_faults)
        self.attach_detach = AttachDetachController(self.cluster, self.clock, self.timeline,
                                                    detach_delay=scenario.volume_detach_delay)
        self.metrics.source = self
        self.cluster.on_change = self.settle
        self.cluster.schedule = self.timeline.schedule
        self.cloud.on_change = self.settle
        for event, batch in zip(scenario.events, batches, strict=True):
            self.timeline.schedule(scenario.start + event.at, f"scenario event {event.index}",
                                   self._event_action(event, batch))
        self.cloud.fill_to_target()
        self._step()
        #: Wall seconds the build took (benchmarks; ``bench/simstart.py``): decoding the scenario's
        #: objects, then everything else (the cluster, its controllers and first scheduling pass).
        self.build_seconds = {"decode": decoded - began, "emulator": time.perf_counter() - decoded}

    # --- time --------------------------------------------------------------------------------
    @property
    def start(self) -> float:
        return self.scenario.start

    @property
    def end(self) -> float:
        return self.scenario.end

    def advance(self, until: float) -> None:
        """Run everything due up to ``until`` (inclusive), in time order; the clock ends at ``until``."""
        if until < self.clock.now:
            raise ValueError(f"cannot advance back from {self.clock.now} to {until}")
        self._step()
        while (at := self.timeline.next_time()) is not None and at <= until:
            self.clock.advance_to(max(at, self.clock.now))
            while (action := self.timeline.pop_due(self.clock.now)) is not None:
                action()
                self.settle()
            self._step()
        self.clock.advance_to(until)

    def settle(self) -> None:
        """Let controllers, guards and the storage driver react to every change so far."""
        if self._settling:
            return
        self._settling = True
        try:
            cluster = self.cluster
            for _ in range(_MAX_ROUNDS):
                owners, nodes = cluster.changed_owners, cluster.changed_nodes
                if not owners and not nodes:
                    return
                cluster.changed_owners, cluster.changed_nodes = {}, set()
                self.workloads.reconcile(owners)
                for name in sorted(nodes):
                    self.guard.reconcile(name)
                    self.driver.reconcile(name)
                    self.attach_detach.reconcile(name)
            raise RuntimeError("the simulated world did not settle")
        finally:
            self._settling = False

    def _step(self) -> None:
        self.settle()
        for _ in range(_MAX_ROUNDS):
            if not self.cluster.needs_schedule:
                return
            if self.cluster.pending_count():
                self.scheduler.run()
            else:
                self.cluster.needs_schedule = False
            self.settle()
        raise RuntimeError("the simulated scheduler did not settle")

    def sample(self) -> Sample:
        """Nodes per group, pending pods and storage utilization now (``Metrics.sample``)."""
        return self.metrics.sample()

    # --- metrics.SampleSource ------------------------------------------------------------------
    def group_node_counts(self) -> Mapping[str, int]:
        return {g.name: len(g.node_names()) for g in self.cloud.groups()}

    def pending_pod_count(self) -> int:
        return self.cluster.pending_count()

    def storage_totals(self) -> tuple[int, int]:
        total_max = total_free = 0
        for node in self.cluster.nodes():
            if node.max_local_bytes is not None and node.free_local_bytes is not None:
                total_max += node.max_local_bytes
                total_free += min(node.free_local_bytes, node.max_local_bytes)
        return total_max, total_free

    # --- building and events ----------------------------------------------------------------------
    def _driver_faults(self, scenario: Scenario, groups: set[str]) -> DriverFaults:
        """The scenario's storage-driver faults; at each window's edges every node is reconciled again."""
        for fault in scenario.storage_driver_faults:
            if fault.group and fault.group not in groups:
                raise InputError(scenario.source, scenario.ref, f"spec.storageDriverFaults[{fault.index}].group",
                                 f"no NodeGroup {fault.group!r} in the scenario")

        def group_of(node: str) -> str | None:
            group = self.cloud.group_of(node)
            return group.name if group is not None else None

        faults = DriverFaults(scenario.storage_driver_faults, self.clock, scenario.start, group_of)
        for at in faults.boundaries():
            if 0 < at < scenario.duration:
                self.timeline.schedule(scenario.start + at, "storage driver fault window edge", self._touch_nodes)
        return faults

    def _touch_nodes(self) -> None:
        self.cluster.changed_nodes.update(n.name for n in self.cluster.nodes())

    def _max_capacity_for(self, node: Node) -> int | None:
        if node.max_local_bytes is not None:
            return node.max_local_bytes
        group = self.cloud.group_of(node.name)
        template = group.spec.template if group is not None else None
        return template.max_local_bytes if template is not None else None

    def _prepare_event(self, event: ScenarioEvent) -> Prepared:
        where = f"{self.scenario.source}: {self.scenario.ref}: spec.events[{event.index}].create"
        batch = prepare(event.create, where, self.names, self.gates)
        if batch.objects.node_groups:
            raise InputError(where, f"NodeGroup/{batch.objects.node_groups[0].name}", "",
                             "node groups are the cloud's and cannot be created by an event")
        return batch

    def _validate_events(self, initial: Prepared, batches: list[Prepared]) -> None:
        known = initial.workload_refs()
        for event, batch in zip(self.scenario.events, batches, strict=True):
            known |= batch.workload_refs()
            for key in event.delete:
                known.discard((key.kind, key.namespace or "default", key.name))
            for i, scale in enumerate(event.scale):
                if (scale.kind, scale.namespace, scale.name) not in known:
                    raise InputError(self.scenario.source, self.scenario.ref, f"spec.events[{event.index}].scale[{i}]",
                                     f"no {scale.kind} {scale.namespace}/{scale.name} exists at {event.at:g}s")

    def _apply(self, batch: Prepared, *, joins_groups: bool = True) -> None:
        """Put a batch's objects into the cluster; new Nodes join a group (not the initial ones:
        the cloud reads those when it is built)."""
        cluster = self.cluster
        objects = batch.objects
        now = self.clock.now
        for sc in objects.storage_classes.values():
            cluster.put_storage_class(sc)
        cluster.csi_capacities.extend(objects.csi_capacities)
        cluster.csi_drivers.update(objects.csi_drivers)
        cluster.csi_nodes.update(objects.csi_nodes)
        cluster.namespaces.update(objects.namespaces)
        if objects.priority_config is not None:
            cluster.priority_config = objects.priority_config
        cluster.warnings.extend(objects.warnings)
        for node in objects.nodes:
            cluster.put_node(node)
            if joins_groups:
                self.cloud.adopt(node)
        for pv in objects.volumes.values():
            cluster.put_volume(pv)
        for claim in objects.claims.values():
            cluster.put_claim(claim)
        for pod in objects.pods:
            if cluster.pod(pod.namespace, pod.name) is not None:
                cluster.remove_pod((pod.namespace, pod.name))
            cluster.add_pod(_as_admitted(pod, cluster.node(pod.node_name) is not None if pod.node_name else False,
                                         now))
        for pdb in batch.pdbs:
            cluster.put_pdb(pdb)
        for controller in objects.controllers.values():
            cluster.put_controller(controller)
        for workload in batch.workloads:
            self.workloads.add(workload)

    def _event_action(self, event: ScenarioEvent, batch: Prepared) -> Callable[[], None]:
        def apply() -> None:
            self._apply(batch)
            for key in event.delete:
                self._delete(key)
            for scale in event.scale:
                self.workloads.scale(scale.kind, scale.namespace, scale.name, scale.replicas)

        return apply

    def _delete(self, key: ObjectKey) -> None:
        cluster = self.cluster
        namespace = key.namespace or "default"
        kind = key.kind
        if kind in WORKLOAD_KINDS:
            self.workloads.remove(kind, namespace, key.name)
        elif kind == "Pod":
            cluster.remove_pod((namespace, key.name))
        elif kind == "Node":
            self.cloud.forget(key.name)
            cluster.terminate_node(key.name)
        elif kind == "PersistentVolumeClaim":
            cluster.remove_claim(namespace, key.name)
        elif kind == "PersistentVolume":
            cluster.remove_volume(key.name)
        elif kind == "StorageClass":
            cluster.storage_classes.pop(key.name, None)
        elif kind == "PodDisruptionBudget":
            cluster.remove_pdb(namespace, key.name)
        else:
            cluster.remove_controller((kind, namespace, key.name))


def _as_admitted(pod: Pod, on_known_node: bool, now: float) -> Pod:
    """A pod as the world stores it: bound to a node it knows, it runs; without a creation time,
    it was created now. One copy at most (most pods of a large scenario need none)."""
    runs = on_known_node and not pod.is_terminal and (pod.phase != "Running" or pod.marked_unschedulable)
    if pod.created is None:
        if runs:
            return msgspec.structs.replace(pod, phase="Running", marked_unschedulable=False, created=now)
        return msgspec.structs.replace(pod, created=now)
    if runs:
        return msgspec.structs.replace(pod, phase="Running", marked_unschedulable=False)
    return pod

"""Small scenarios for the simulated world's tests: ``make_world(nvme_group(), nvme_node("n1"), ...)``.

Objects are the raw Kubernetes dicts of ``tests.factories`` (so they go through the real
converters); ``make_world`` adds the ``Scenario`` object and builds a ``World``. Every
scenario starts at ``START`` with round numbers: 120 s provisioning, 60 s driver start,
1 s per GiB to unpin.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from autoscaler.actuation.actuator import Actuator
from autoscaler.actuation.types import ActuationEvent
from autoscaler.backoff import GroupBackoff
from autoscaler.loop import Autoscaler, History, LoopRecord, ScaleEvent
from autoscaler.scaledown.types import ScaleDownMemory
from emulator.guard import GUARD_NAMESPACE
from emulator.scenario import parse_scenario
from emulator.world import World
from kube.model import Node, PersistentVolume, Pod
from tests.factories import node_group_json, node_json, options, template

Json = dict[str, Any]

GiB = 2**30
START = dt.datetime(2026, 6, 1, tzinfo=dt.UTC).timestamp()
PROVISIONING = 120.0
DRIVER_START = 60.0
UNPIN_PER_GIB = 1.0


def scenario_json(*, duration: str = "2h", events: Sequence[Json] = (), provisioning: str = "2m",
                  driver: str = "1m", unpin: float = UNPIN_PER_GIB, faults: Sequence[Json] = (),
                  driver_faults: Sequence[Json] = (), detach: str | None = None) -> Json:
    spec: Json = {
        "apiVersion": "autoscaler.storage.dev/v1alpha1",
        "kind": "Scenario",
        "metadata": {"name": "test"},
        "spec": {"start": "2026-06-01T00:00:00Z", "duration": duration, "scanInterval": "10s",
                 "provisioningDelay": provisioning, "storageDriverStartDelay": driver,
                 "unpinSecondsPerGiB": unpin, "events": list(events)},
    }
    if faults:
        spec["spec"]["cloudFaults"] = list(faults)
    if driver_faults:
        spec["spec"]["storageDriverFaults"] = list(driver_faults)
    if detach is not None:
        spec["spec"]["volumeDetachDelay"] = detach
    return spec


def make_world(*objects: Json, seed: int = 0, **spec: Any) -> World:
    return World(parse_scenario([scenario_json(**spec), *objects], "test.yaml"), seed=seed)


@dataclass(slots=True)
class Driven:
    """The real loop, with what each iteration did kept in a ``History`` (the loop keeps none of it)."""

    autoscaler: Autoscaler
    history: History = field(default_factory=History)

    def run_once(self, now: float) -> LoopRecord:
        return self.history.add(self.autoscaler.run_once(now))

    @property
    def events(self) -> list[ScaleEvent]:
        return self.history.events

    @property
    def actuation(self) -> list[ActuationEvent]:
        return self.history.actuation

    @property
    def actuator(self) -> Actuator:
        return self.autoscaler.actuator

    @property
    def memory(self) -> ScaleDownMemory:
        return self.autoscaler.memory

    @property
    def backoff(self) -> GroupBackoff:
        return self.autoscaler.backoff

    @property
    def loops(self) -> int:
        return self.autoscaler.loops


def drive(world: World, *flags: str, until: float, scan: float = 10.0) -> Driven:
    """The real loop with ``flags`` over ``world``, one iteration every ``scan`` seconds from its start to ``until``."""
    driven = Driven(Autoscaler(world.cluster, world.cloud, options(*flags)))
    at = 0.0
    while at <= until:
        world.advance(world.start + at)
        driven.run_once(world.start + at)
        at += scan
    return driven


def rok_class(name: str = "rok", provisioner: str = "rok.arrikto.com") -> Json:
    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name},
            "provisioner": provisioner, "volumeBindingMode": "WaitForFirstConsumer"}


def nvme_group(name: str = "nvme", min_size: int = 0, max_size: int = 10, *, local: str | None = "1000Gi",
               **kw: Any) -> Json:
    """A group of 8-cpu nodes labelled ``ng=<name>``; ``local`` is the template's max-capacity label."""
    return node_group_json(name, min_size, max_size, node_selector={"ng": name},
                           template=template(cpu="8", memory="32Gi", labels={"ng": name}, storage_max=local), **kw)


def nvme_node(name: str, *, free: str | None = "1000Gi", group: str = "nvme", local: str | None = "1000Gi",
              cpu: str = "8") -> Json:
    """A registered node of ``group``; ``free`` None: the storage driver has not started there."""
    return node_json(name, cpu, "32Gi", labels={"ng": group}, storage_max=local, storage_free=free)


def _template(labels: Mapping[str, str], cpu: str, memory: str, claims: Sequence[str] = ()) -> Json:
    spec: Json = {"containers": [{"name": "main", "image": "busybox",
                                  "resources": {"requests": {"cpu": cpu, "memory": memory}}}]}
    if claims:
        spec["volumes"] = [{"name": c, "persistentVolumeClaim": {"claimName": c}} for c in claims]
    return {"metadata": {"labels": dict(labels)}, "spec": spec}


def statefulset(name: str, replicas: int, size: str = "100Gi", *, cpu: str = "1", memory: str = "1Gi",
                namespace: str = "default", ordered: bool = False) -> Json:
    """A StatefulSet with one local claim template ``data`` of ``size``."""
    spec: Json = {
        "replicas": replicas, "serviceName": name, "selector": {"matchLabels": {"app": name}},
        "template": _template({"app": name}, cpu, memory),
        "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {
            "storageClassName": "rok", "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": size}}}}],
    }
    if not ordered:
        spec["podManagementPolicy"] = "Parallel"
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": name, "namespace": namespace},
            "spec": spec}


def deployment(name: str, replicas: int, *, cpu: str = "1", memory: str = "1Gi", namespace: str = "default",
               claims: Sequence[str] = ()) -> Json:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": namespace},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": _template({"app": name}, cpu, memory, claims)}}


def pdb(name: str, selector: Mapping[str, str], *, min_available: int | str | None = None,
        max_unavailable: int | str | None = None, namespace: str = "default") -> Json:
    spec: Json = {"selector": {"matchLabels": dict(selector)}}
    if min_available is not None:
        spec["minAvailable"] = min_available
    if max_unavailable is not None:
        spec["maxUnavailable"] = max_unavailable
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": name, "namespace": namespace}, "spec": spec}


def later(world: World, seconds: float) -> None:
    """Advance the world by ``seconds``."""
    world.advance(world.clock.now + seconds)


def node(world: World, name: str) -> Node:
    found = world.cluster.node(name)
    assert found is not None, f"no node {name}"
    return found


def pods_of(world: World, app: str) -> list[Pod]:
    return sorted((p for p in world.cluster.pods() if p.labels.get("app") == app), key=lambda p: p.name)


def guard_pods(world: World) -> dict[str, Pod]:
    """Guard pods by the node they guard."""
    return {p.labels["guard-node"]: p for p in world.cluster.pods() if world.guard.is_guard(p)}


def volume_of(world: World, claim: str, namespace: str = "default") -> PersistentVolume:
    """The PV bound to ``claim`` (the test fails if the claim is missing or unbound)."""
    found = world.cluster.claim(namespace, claim)
    assert found is not None, f"no claim {namespace}/{claim}"
    assert found.volume_name, f"claim {namespace}/{claim} is not bound"
    pv = world.cluster.volume(found.volume_name)
    assert pv is not None, f"claim {namespace}/{claim} names a missing PV {found.volume_name}"
    return pv


def has_guard_budget(world: World, node_name: str) -> bool:
    """Whether the storage operator's guard PodDisruptionBudget for ``node_name`` exists now."""
    return world.cluster.pdb(GUARD_NAMESPACE, world.guard.name_for(node_name)) is not None

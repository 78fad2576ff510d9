"""Seeded scale-down scenarios where the order of removals decides how much data moves.

Each seed draws a cluster of storage node groups (different CPU and local-disk shapes)
whose nodes hold Rok volumes of widely varying sizes (log-uniform, 1 GiB to 2 TiB):
the claims of StatefulSet replicas, some of which go when the load drops (their claims
stay, pinned). Then a CPU-only load on the same nodes drops so far that more nodes are
underutilized than the rest can absorb: which of them go is the scale-down order's
choice. A seed also draws the driver's speed (``unpinSecondsPerGiB`` 0.05-1, the
default ``--storage-unpin-throughput`` predicting 1), sometimes a ``SlowUnpin`` fault,
budgets on the databases, and the scan interval.

``VARIANTS`` bends the draw the way another author of such a suite might: slower
drivers, more faults, tight budgets, a coarse scan interval, many small volumes.
``bench/order.py`` runs both orders over them; ``tools/gen-order-scenarios`` writes them.
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["VARIANTS", "Knobs", "generate", "write_scenario"]

Json = dict[str, Any]
GiB = 2**30
TB = 10**12
ROK = "rok.arrikto.com"
MAX_LABEL = "rok.arrikto.com/max-instance-capacity"
CAPACITY = "rok.arrikto.com/capacity"
ZONE = "eu-west-1a"


@dataclass(frozen=True, slots=True)
class Shape:
    """An instance type of a storage group: cores, memory (GiB), local NVMe (bytes), price per hour."""

    instance: str
    cpu: int
    memory_gib: int
    local_bytes: int
    price: float


SHAPES = (
    Shape("i3en.2xlarge", 8, 64, 5 * TB, 0.904),
    Shape("i3en.3xlarge", 12, 96, 7_500_000_000_000, 1.356),
    Shape("i3en.6xlarge", 24, 192, 15 * TB, 2.712),
    Shape("i3en.12xlarge", 48, 384, 30 * TB, 5.424),
)


@dataclass(frozen=True, slots=True)
class Knobs:
    """What a variant of the suite may bend (each a range the seed draws from)."""

    unpin_seconds_per_gib: tuple[float, float] = (0.05, 1.0)
    slow_fault_chance: float = 0.25
    slow_fault_seconds_per_gib: tuple[float, float] = (1.0, 1.8)
    scan_intervals: tuple[int, ...] = (10, 20, 30)
    volumes_per_node: tuple[int, int] = (1, 3)
    min_volume_gib: float = 1.0
    max_volume_gib: float = 2048.0
    pdb_chance: float = 0.3
    hours: tuple[float, float] = (3.0, 6.0)
    nodes_per_group: tuple[int, int] = (4, 9)
    groups: tuple[int, int] = (1, 3)
    load_left: tuple[float, float] = (0.25, 0.45)
    #: In how many steps the load drops (the web Deployments step down, databases go at random steps).
    drops: tuple[int, int] = (1, 1)


VARIANTS: dict[str, Knobs] = {
    "base": Knobs(),
    "slow-driver": Knobs(unpin_seconds_per_gib=(0.5, 1.0), slow_fault_chance=0.6,
                         slow_fault_seconds_per_gib=(1.2, 1.9)),
    "crawling-driver": Knobs(slow_fault_chance=0.5, slow_fault_seconds_per_gib=(2.0, 5.0)),
    "fast-driver": Knobs(unpin_seconds_per_gib=(0.05, 0.2), slow_fault_chance=0.0),
    "budgets": Knobs(pdb_chance=1.0),
    "coarse-scan": Knobs(scan_intervals=(60, 120)),
    "many-volumes": Knobs(volumes_per_node=(3, 6), max_volume_gib=1024.0),
    "gradual-drop": Knobs(drops=(2, 4)),
    "at-prediction": Knobs(unpin_seconds_per_gib=(0.9, 1.0), slow_fault_chance=0.0),
    "big-clusters": Knobs(nodes_per_group=(8, 14), groups=(2, 3), hours=(4.0, 6.0)),
}


def _log_uniform(rng: random.Random, low: float, high: float) -> float:
    return math.exp(rng.uniform(math.log(low), math.log(high)))


def _node(name: str, shape: Shape, group: str, pinned: int) -> Json:
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "creationTimestamp": "2026-05-15T00:00:00Z",
                     "labels": {"kubernetes.io/hostname": name, "node.kubernetes.io/instance-type": shape.instance,
                                "topology.kubernetes.io/zone": ZONE, "autoscaler.storage.dev/group": group,
                                MAX_LABEL: str(shape.local_bytes)},
                     "annotations": {CAPACITY: str(max(0, shape.local_bytes - pinned))}},
        "spec": {"providerID": f"sim:///{group}/{name}"},
        "status": {"capacity": {"cpu": str(shape.cpu), "memory": f"{shape.memory_gib}Gi", "pods": "110"},
                   "allocatable": {"cpu": f"{shape.cpu * 1000 - 90}m", "memory": f"{shape.memory_gib - 2}Gi",
                                   "pods": "110"},
                   "conditions": [{"type": "Ready", "status": "True",
                                   "lastTransitionTime": "2026-05-15T00:00:00Z"}]},
    }


def _group(name: str, shape: Shape, size: int) -> Json:
    labels = {"node.kubernetes.io/instance-type": shape.instance, "topology.kubernetes.io/zone": ZONE,
              "autoscaler.storage.dev/group": name, MAX_LABEL: str(shape.local_bytes)}
    return {
        "apiVersion": "autoscaler.storage.dev/v1alpha1", "kind": "NodeGroup", "metadata": {"name": name},
        "spec": {"minSize": 1, "maxSize": size + 4, "nodeSelector": {"autoscaler.storage.dev/group": name},
                 "template": {"metadata": {"labels": labels},
                              "status": {"capacity": {"cpu": str(shape.cpu), "memory": f"{shape.memory_gib}Gi",
                                                      "pods": "110"},
                                         "allocatable": {"cpu": f"{shape.cpu * 1000 - 90}m",
                                                         "memory": f"{shape.memory_gib - 2}Gi", "pods": "110"}}},
                 "pricePerHour": shape.price},
    }


def _volume(namespace: str, claim: str, node: str, size_gib: int) -> list[Json]:
    pv = f"pv-{namespace}-{claim}"
    return [
        {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": claim, "namespace": namespace},
         "spec": {"storageClassName": "rok", "accessModes": ["ReadWriteOnce"],
                  "resources": {"requests": {"storage": f"{size_gib}Gi"}}, "volumeName": pv}},
        {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": pv},
         "spec": {"capacity": {"storage": f"{size_gib}Gi"}, "accessModes": ["ReadWriteOnce"],
                  "storageClassName": "rok", "csi": {"driver": ROK, "volumeHandle": pv},
                  "claimRef": {"namespace": namespace, "name": claim},
                  "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                      {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}]}}},
         "status": {"phase": "Bound"}},
    ]


def _statefulset(namespace: str, name: str, group: str, replicas: int, cpu_milli: int) -> Json:
    return {
        "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": name, "namespace": namespace},
        "spec": {"replicas": replicas, "serviceName": name, "podManagementPolicy": "Parallel",
                 "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": {"nodeSelector": {"autoscaler.storage.dev/group": group},
                                       "containers": [{"name": "db", "image": "example/db:1",
                                                       "resources": {"requests": {"cpu": f"{cpu_milli}m",
                                                                                  "memory": "2Gi"}}}]}},
                 "volumeClaimTemplates": [{"metadata": {"name": "data"},
                                           "spec": {"storageClassName": "rok", "accessModes": ["ReadWriteOnce"],
                                                    "resources": {"requests": {"storage": "1Gi"}}}}]},
    }


def _deployment(namespace: str, name: str, group: str, replicas: int, cpu_milli: int) -> Json:
    return {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": namespace},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": {"nodeSelector": {"autoscaler.storage.dev/group": group},
                                       "containers": [{"name": "web", "image": "example/web:1",
                                                       "resources": {"requests": {"cpu": f"{cpu_milli}m",
                                                                                  "memory": "1Gi"}}}]}}},
    }


def _pdb(namespace: str, app: str) -> Json:
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": app, "namespace": namespace},
            "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": app}}}}


def _storage_group(rng: random.Random, knobs: Knobs, index: int) -> tuple[list[Json], list[Json], str, int]:
    """One group's objects, its drop-time scale actions (the web Deployment's last), its name, web's replicas."""
    shape = rng.choice(SHAPES)
    name = f"{shape.instance.split('.')[1]}-{index}"
    count = rng.randint(*knobs.nodes_per_group)
    # Node names carry no hint of their data: the upstream order (by name) is blind to it.
    suffixes = rng.sample(range(100, 1000), count)
    nodes = [f"{name}-{s}" for s in suffixes]
    ns = f"g{index}"
    objects: list[Json] = [_group(name, shape, count)]
    scale: list[Json] = []
    pinned = dict.fromkeys(nodes, 0)
    db_cpu = 0
    sts = 0
    for node in nodes:
        for _ in range(rng.randint(*knobs.volumes_per_node)):
            size = max(1, round(_log_uniform(rng, knobs.min_volume_gib, knobs.max_volume_gib)))
            if pinned[node] + size * GiB > 0.45 * shape.local_bytes:
                continue  # keep most nodes below the storage-utilization threshold
            sts_name = f"db-{sts}"
            sts += 1
            cpu = rng.choice((250, 500, 1000))
            keep = rng.random() < 0.6
            objects.append(_statefulset(ns, sts_name, name, 1, cpu))
            objects.extend(_volume(ns, f"data-{sts_name}-0", node, size))
            if rng.random() < knobs.pdb_chance:
                objects.append(_pdb(ns, sts_name))
            if keep:
                db_cpu += cpu
            else:
                scale.append({"kind": "StatefulSet", "namespace": ns, "name": sts_name, "replicas": 0})
            pinned[node] += size * GiB
    objects[1:1] = [_node(n, shape, name, pinned[n]) for n in nodes]
    alloc = count * (shape.cpu * 1000 - 90)
    web_cpu = rng.choice((500, 1000))
    busy = int(0.7 * alloc) // web_cpu
    left = rng.uniform(*knobs.load_left)
    after = max(1, int((left * alloc - db_cpu) // web_cpu))
    objects.append(_deployment(ns, "web", name, busy, web_cpu))
    scale.append({"kind": "Deployment", "namespace": ns, "name": "web", "replicas": min(busy, after)})
    return objects, scale, name, busy


def _steps(rng: random.Random, knobs: Knobs, groups: list[tuple[list[Json], int]], minutes: int) -> list[Json]:
    """The drop as events: one at 20-60m, or (``knobs.drops``) several, web stepping down and databases going."""
    if knobs.drops[1] <= 1:
        return [{"at": f"{rng.randint(20, 60)}m", "scale": [a for actions, _ in groups for a in actions]}]
    count = rng.randint(*knobs.drops)
    times = sorted(rng.sample(range(20, max(21 + count, minutes // 2)), count))
    events: list[Json] = [{"at": f"{t}m", "scale": []} for t in times]
    for actions, busy in groups:
        *databases, web = actions
        for action in databases:
            events[rng.randrange(count)]["scale"].append(action)
        for step, event in enumerate(events, start=1):
            replicas = busy - (busy - web["replicas"]) * step // count
            event["scale"].append({**web, "replicas": replicas})
    return events


def generate(seed: int, knobs: Knobs | None = None, *, name: str | None = None) -> list[Json]:
    """The scenario of ``seed`` as plan-snapshot objects (the Scenario object first)."""
    knobs = knobs or Knobs()
    rng = random.Random(seed)
    objects: list[Json] = [{"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "rok"},
                            "provisioner": ROK, "volumeBindingMode": "WaitForFirstConsumer"}]
    drops: list[tuple[list[Json], int]] = []
    groups: list[str] = []
    for index in range(rng.randint(*knobs.groups)):
        more, actions, group, busy = _storage_group(rng, knobs, index)
        objects.extend(more)
        drops.append((actions, busy))
        groups.append(group)
    hours = rng.uniform(*knobs.hours)
    faults: list[Json] = []
    for group in groups:
        if rng.random() < knobs.slow_fault_chance:
            faults.append({"group": group, "kind": "SlowUnpin", "from": "0s", "until": f"{int(hours * 60)}m",
                           "unpinSecondsPerGiB": round(rng.uniform(*knobs.slow_fault_seconds_per_gib), 2)})
    spec: Json = {
        "start": "2026-06-01T18:00:00Z",
        "duration": f"{int(hours * 60)}m",
        "scanInterval": f"{rng.choice(knobs.scan_intervals)}s",
        "provisioningDelay": "3m",
        "storageDriverStartDelay": "1m",
        "unpinSecondsPerGiB": round(_log_uniform(rng, *knobs.unpin_seconds_per_gib), 3),
    }
    spec["events"] = _steps(rng, knobs, drops, int(hours * 60))
    if faults:
        spec["storageDriverFaults"] = faults
    scenario = {"apiVersion": "autoscaler.storage.dev/v1alpha1", "kind": "Scenario",
                "metadata": {"name": name or f"order-{seed}"}, "spec": spec}
    return [scenario, *objects]


def write_scenario(objects: list[Json], path: Path) -> Path:
    """One scenario as a JSON ``List`` (what ``simulate`` reads fastest)."""
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}), encoding="utf-8")
    return path


def variant(name: str) -> Knobs:
    try:
        return VARIANTS[name]
    except KeyError:
        raise SystemExit(f"unknown variant {name!r} (one of {', '.join(VARIANTS)})") from None


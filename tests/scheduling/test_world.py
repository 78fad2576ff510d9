"""The simulated world with the scheduling side: pods stuck on a node whose disk cannot hold
their claims, with the stock (capacity-blind) kube-scheduler, with it plus the extender,
and with the world's own storage-aware scheduler.

The world's scheduler (``emulator.scheduler.Scheduler``) stands for kube-scheduler:
``capacity_aware=False`` is the stock one, and its ``node_filter`` calls the extender's
filter (``scheduling.extender.Extender.filter_pod``, the code path ``POST /filter``
runs after decoding) over a view of the simulated cluster, after the world's own
filters, as kube-scheduler calls extenders after its plugins.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from typing import Any

import pytest

from emulator.cluster import SimCluster
from emulator.scheduler import Scheduler
from emulator.world import World
from kube.model import ClusterObjects, Pod
from scheduling.extender import Extender
from scheduling.view import ViewState
from tests.emulator.worlds import make_world, nvme_group, nvme_node, rok_class
from tests.factories import NAMES

Json = dict[str, Any]


class SimClusterView:
    """The simulated cluster as the extender's ``ClusterView`` (re-read on every call: it is small)."""

    def __init__(self, cluster: SimCluster) -> None:
        self.cluster = cluster
        self.reads = 0

    def read(self) -> ViewState:
        self.reads += 1
        cluster = self.cluster
        objects = ClusterObjects(claims=dict(cluster.claims()), volumes=dict(cluster.volumes()),
                                 storage_classes=dict(cluster.storage_classes),
                                 csi_capacities=list(cluster.csi_capacities), csi_drivers=dict(cluster.csi_drivers))
        nodes = tuple(sorted(cluster.nodes(), key=lambda n: n.name))
        return ViewState(self.reads, nodes, self.reads, objects, cluster.pod)


def database(replicas: int) -> Json:
    """Each replica mounts two 60Gi local volumes: 120Gi on one node (the thesis' example)."""
    claim = {"storageClassName": "rok", "accessModes": ["ReadWriteOnce"],
             "resources": {"requests": {"storage": "60Gi"}}}
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db", "namespace": "default"},
            "spec": {"replicas": replicas, "serviceName": "db", "podManagementPolicy": "Parallel",
                     "selector": {"matchLabels": {"app": "db"}},
                     "template": {"metadata": {"labels": {"app": "db"}}, "spec": {"containers": [
                         {"name": "db", "image": "postgres",
                          "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}},
                     "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": claim},
                                              {"metadata": {"name": "wal"}, "spec": claim}]}}


def world() -> World:
    """Four nodes with 100, 130, 300 and 500 GiB free: room for 0, 1, 2 and 4 replicas; six arrive at 1m."""
    return make_world(
        nvme_group("nvme", 4, 4), rok_class(),
        nvme_node("n1", free="100Gi"), nvme_node("n2", free="130Gi"), nvme_node("n3", free="300Gi"),
        nvme_node("n4", free="500Gi"), database(0),
        events=[{"at": "1m", "scale": {"kind": "StatefulSet", "namespace": "default", "name": "db", "replicas": 6}}],
        duration="10m",
    )


def run(variant: str) -> tuple[World, Scheduler]:
    w = world()
    if variant == "stock kube-scheduler":
        scheduler = Scheduler(w.cluster, NAMES, w.ids, random.Random(0), capacity_aware=False)
    elif variant == "kube-scheduler + extender":
        extender = Extender(SimClusterView(w.cluster), NAMES, reservation_timeout=300.0, clock=time.monotonic)

        def extender_filter(pod: Pod, names: Sequence[str]) -> Sequence[str]:
            return extender.filter_pod(pod, names).passed

        scheduler = Scheduler(w.cluster, NAMES, w.ids, random.Random(0), capacity_aware=False,
                              node_filter=extender_filter)
    else:
        scheduler = w.scheduler
    w.scheduler = scheduler
    w.advance(w.start + 5 * 60)
    return w, scheduler


def stuck_on_small_disks(w: World) -> list[str]:
    """Pods bound to a node but not running because a claim could not be provisioned there."""
    return sorted(p.name for p in w.cluster.pods() if p.labels.get("app") == "db" and p.node_name
                  and p.phase != "Running")


@pytest.mark.parametrize(("variant", "stuck"), [
    pytest.param("stock kube-scheduler", True, id="stock-kube-scheduler-strands-pods"),
    pytest.param("kube-scheduler + extender", False, id="with-the-extender-none-stuck"),
    pytest.param("storage-aware world scheduler", False, id="world-scheduler-none-stuck"),
])
def test_pods_stuck_on_a_node_whose_disk_cannot_hold_them(variant: str, stuck: bool) -> None:
    w, scheduler = run(variant)
    stranded = stuck_on_small_disks(w)
    running = sorted(p.name for p in w.cluster.pods() if p.labels.get("app") == "db" and p.phase == "Running")
    if stuck:
        assert stranded, "the capacity-blind scheduler should strand some replicas"
        assert {f"default/{name}" for name in stranded} == scheduler.stuck
    else:
        assert stranded == []
        assert running == [f"db-{i}" for i in range(6)]
    # Whatever the scheduler, no node ends with less than zero free bytes: the driver never over-commits.
    assert all((n.free_local_bytes or 0) >= 0 for n in w.cluster.nodes())

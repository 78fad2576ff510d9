"""Local storage in the world: the driver, guards, provisioning, unpinning, restoring, data loss."""

from __future__ import annotations

import pytest

from emulator.cluster import pinned_host
from emulator.guard import GUARD_NAMESPACE
from emulator.world import World
from kube.clusterapi import Eviction
from kube.model import Taint
from kube.names import CA_TO_BE_DELETED_TAINT, HOSTNAME_LABEL, StorageNames
from tests.emulator.worlds import (
    DRIVER_START,
    PROVISIONING,
    GiB,
    deployment,
    guard_pods,
    later,
    make_world,
    node,
    nvme_group,
    nvme_node,
    pods_of,
    rok_class,
    statefulset,
)
from tests.factories import expr, pv_json, pvc_json

NAMES = StorageNames()
DELETE_TAINT = Taint(CA_TO_BE_DELETED_TAINT, "0", "NoSchedule")


def _guard_budget(world: World, node_name: str) -> int | None:
    """The guard PDB's live disruptionsAllowed; None if the PDB is gone."""
    for budget in world.cluster.list_objects().pdbs:
        if budget.name == f"rok-csi-guard-{node_name}":
            return budget.disruptions_allowed
    return None


def test_driver_start_writes_capacity_and_guards_the_node() -> None:
    world = make_world(nvme_group(local="1000Gi"), nvme_group("cpu", local=None))
    world.cloud.group("nvme").increase_size(1)
    world.cloud.group("cpu").increase_size(1)
    later(world, PROVISIONING + DRIVER_START - 1)
    assert node(world, "nvme-1").free_local_bytes is None
    assert guard_pods(world) == {}
    later(world, 1)
    nvme = node(world, "nvme-1")
    assert (nvme.max_local_bytes, nvme.free_local_bytes) == (1000 * GiB, 1000 * GiB)
    assert nvme.labels[NAMES.max_capacity_label] == str(1000 * GiB)
    assert nvme.annotations[NAMES.capacity_annotation] == str(1000 * GiB)
    assert node(world, "cpu-1").free_local_bytes is None, "no driver where the template has no max-capacity label"
    guard = guard_pods(world)["nvme-1"]
    assert (guard.namespace, guard.node_name, guard.phase) == (GUARD_NAMESPACE, "nvme-1", "Running")
    assert guard.labels["app"] == "rok-csi-guard"
    assert guard.owner is not None
    objects = world.cluster.list_objects()
    assert ("ReplicaSet", GUARD_NAMESPACE, guard.owner.name) in objects.controllers
    assert _guard_budget(world, "nvme-1") == 0
    assert set(guard_pods(world)) == {"nvme-1"}


def test_driver_start_subtracts_volumes_already_pinned() -> None:
    world = make_world(rok_class(), nvme_group(), nvme_node("nvme-1", free=None), statefulset("db", 1, "300Gi"))
    assert node(world, "nvme-1").free_local_bytes is None
    assert pods_of(world, "db")[0].node_name == "", "no capacity before the driver runs"
    later(world, DRIVER_START)
    assert node(world, "nvme-1").free_local_bytes == 700 * GiB
    assert pods_of(world, "db")[0].node_name == "nvme-1"


@pytest.mark.parametrize(("replicas", "size", "bound", "free_gib"), [
    pytest.param(2, "300Gi", 2, 400, id="two-fit"),
    pytest.param(4, "300Gi", 3, 100, id="fourth-does-not-fit"),
    pytest.param(1, "1200Gi", 0, 1000, id="too-big"),
])
def test_scheduler_provisions_local_volumes_and_lowers_capacity(replicas: int, size: str, bound: int,
                                                                free_gib: int) -> None:
    world = make_world(rok_class(), nvme_group(), nvme_node("nvme-1"), statefulset("db", replicas, size))
    pods = pods_of(world, "db")
    assert sum(1 for p in pods if p.node_name == "nvme-1") == bound
    assert all(p.marked_unschedulable for p in pods if not p.node_name)
    assert node(world, "nvme-1").free_local_bytes == free_gib * GiB
    assert node(world, "nvme-1").annotations[NAMES.capacity_annotation] == str(free_gib * GiB)
    for pod in pods:
        claim = world.cluster.claim("default", f"data-{pod.name}")
        assert claim is not None
        if pod.node_name:
            pv = world.cluster.volume(claim.volume_name)
            assert pv is not None and claim.phase == "Bound"
            assert (pv.driver, pv.claim, pinned_host(pv)) == ("rok.arrikto.com", ("default", claim.name), "nvme-1")
        else:
            assert claim.volume_name == ""


def _drain_world() -> World:
    """nvme-1 holds db-0's 10Gi volume (and db-0: the emptier node); nvme-2 has room for it."""
    world = make_world(rok_class(), nvme_group(), nvme_node("nvme-1"), nvme_node("nvme-2", cpu="2"),
                       statefulset("db", 1, "10Gi", cpu="1"))
    assert pods_of(world, "db")[0].node_name == "nvme-1"
    return world


def test_guard_refuses_eviction_until_the_driver_has_unpinned() -> None:
    world = _drain_world()
    guard = guard_pods(world)["nvme-1"]
    # The guard was evicted after the workload; the volume is unused then.
    world.cluster.taint_node("nvme-1", DELETE_TAINT)
    db = pods_of(world, "db")[0]
    assert world.cluster.evict_pod(db.namespace, db.name, 0).outcome is Eviction.EVICTED  # gone at once
    refused = world.cluster.evict_pod(guard.namespace, guard.name)
    assert refused.outcome is Eviction.REFUSED
    assert "disruption budget rok-system/rok-csi-guard-nvme-1" in refused.message
    later(world, 10 * 1.0 - 1)  # 10 GiB at 1 s/GiB
    assert world.cluster.evict_pod(guard.namespace, guard.name).outcome is Eviction.REFUSED
    later(world, 1)
    assert _guard_budget(world, "nvme-1") is None, "the operator deleted the budget"
    assert world.cluster.evict_pod(guard.namespace, guard.name, 0).outcome is Eviction.EVICTED
    assert "nvme-1" not in guard_pods(world), "no new guard on a draining node"
    assert (world.metrics.evictions, world.metrics.refused_evictions, world.metrics.unpins) == (2, 2, 1)
    assert node(world, "nvme-1").free_local_bytes == 1000 * GiB


def test_recreated_statefulset_pod_reuses_its_claim_and_the_volume_is_restored_elsewhere() -> None:
    world = _drain_world()
    claim = world.cluster.claim("default", "data-db-0")
    assert claim is not None
    volume = claim.volume_name
    world.cluster.taint_node("nvme-1", DELETE_TAINT)
    later(world, 30)
    assert world.driver.unpinning("nvme-1") is None, "nothing to unpin while db-0 runs on it"
    old = pods_of(world, "db")[0]
    assert world.cluster.evict_pod("default", "db-0", 0).outcome is Eviction.EVICTED  # gone at once
    new = pods_of(world, "db")[0]
    assert (new.name, new.claims, new.node_name, new.marked_unschedulable) == ("db-0", ("data-db-0",), "", True)
    assert new.uid != old.uid
    later(world, 9)
    assert pods_of(world, "db")[0].node_name == "", "the volume is still pinned to the draining node"
    later(world, 1)
    db = pods_of(world, "db")[0]
    assert db.node_name == "nvme-2"
    restored = world.cluster.volume(volume)
    assert restored is not None and pinned_host(restored) == "nvme-2"
    assert node(world, "nvme-2").free_local_bytes == 990 * GiB
    assert node(world, "nvme-1").free_local_bytes == 1000 * GiB
    assert world.metrics.restores == 1
    interval = world.metrics.pending[db.uid]
    assert interval.bound is not None and interval.bound - interval.created == 10


def test_removing_the_taint_cancels_the_unpin() -> None:
    world = make_world(rok_class(), nvme_group(), nvme_node("nvme-1"), statefulset("db", 1, "100Gi"))
    world.workloads.scale("StatefulSet", "default", "db", 0)
    world.settle()
    world.cluster.taint_node("nvme-1", DELETE_TAINT)
    later(world, 50)
    world.cluster.untaint_node("nvme-1", CA_TO_BE_DELETED_TAINT)
    later(world, 100)
    claim = world.cluster.claim("default", "data-db-0")
    assert claim is not None
    pv = world.cluster.volume(claim.volume_name)
    assert pv is not None and pinned_host(pv) == "nvme-1", "still pinned: the unpin was cancelled"
    assert world.metrics.unpins == 0
    assert _guard_budget(world, "nvme-1") == 0


def test_cordon_also_unpins_and_then_releases_the_guard() -> None:
    world = make_world(rok_class(), nvme_group(), nvme_node("nvme-1"), statefulset("db", 2, "20Gi"))
    world.workloads.scale("StatefulSet", "default", "db", 0)
    world.cluster.cordon_node("nvme-1")
    later(world, 39)
    assert _guard_budget(world, "nvme-1") == 0
    later(world, 1)
    assert world.metrics.unpins == 2
    assert _guard_budget(world, "nvme-1") is None


@pytest.mark.parametrize(("unpin_first", "lost"), [
    pytest.param(False, 1, id="deleted-while-pinned"),
    pytest.param(True, 0, id="deleted-after-unpin"),
])
def test_data_loss_when_a_node_with_a_pinned_volume_is_deleted(unpin_first: bool, lost: int) -> None:
    world = make_world(rok_class(), nvme_group(), nvme_node("nvme-1"), nvme_node("nvme-2"),
                       statefulset("db", 1, "10Gi"), deployment("web", 1))
    holder = pods_of(world, "db")[0].node_name
    world.workloads.scale("StatefulSet", "default", "db", 0)
    if unpin_first:
        world.cluster.taint_node(holder, DELETE_TAINT)
        later(world, 10)
    world.cloud.group("nvme").delete_names([holder])
    assert len(world.metrics.data_loss_events) == lost
    if lost:
        event = world.metrics.data_loss_events[0]
        assert (event.time, event.node) == (world.clock.now, holder)
        warnings = [e for e in world.cluster.events if e.reason == "DataLoss"]
        assert len(warnings) == 1 and warnings[0].warning and "data-db-0" in warnings[0].message


@pytest.mark.parametrize("key", [
    pytest.param("topology.topolvm.io/node", id="topolvm"),
    pytest.param("openebs.io/nodename", id="openebs-lvm"),
])
def test_data_loss_counts_volumes_pinned_by_any_key(key: str) -> None:
    """A bound PV whose affinity selects only the deleted node is lost, whatever the key."""
    pinned = pv_json("lvm-1", "10Gi", "topolvm", driver="topolvm.io", claim=("default", "lvm-data"),
                     affinity={"nodeSelectorTerms": [{"matchExpressions": [expr(key, "In", "nvme-1")]}]})
    nodes = [nvme_node(name) for name in ("nvme-1", "nvme-2")]
    for raw in nodes:
        raw["metadata"]["labels"][key] = raw["metadata"]["name"]
    world = make_world(rok_class(), nvme_group(), *nodes, pvc_json("lvm-data", "10Gi", "topolvm", volume="lvm-1"),
                       pinned)
    world.cloud.group("nvme").delete_names(["nvme-1"])
    assert [(e.node, e.pv) for e in world.metrics.data_loss_events] == [("nvme-1", "lvm-1")]


def test_hostname_affinity_pins_to_the_node() -> None:
    world = make_world(rok_class(), nvme_group(), nvme_node("nvme-1"), statefulset("db", 1, "10Gi"))
    claim = world.cluster.claim("default", "data-db-0")
    assert claim is not None
    pv = world.cluster.volume(claim.volume_name)
    assert pv is not None and pv.node_affinity is not None
    assert pv.node_affinity.matches({HOSTNAME_LABEL: "nvme-1"}, "nvme-1")
    assert not pv.node_affinity.matches({HOSTNAME_LABEL: "nvme-2"}, "nvme-2")

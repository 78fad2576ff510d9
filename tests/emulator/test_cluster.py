"""The simulated API server and controllers: budgets, listing, replicas, scale and delete events."""

from __future__ import annotations

from typing import Any

import pytest

from emulator.world import World
from kube.clusterapi import ClusterAPI, ClusterAPIError, Eviction
from kube.model import Taint
from tests.emulator.worlds import (
    deployment,
    later,
    make_world,
    nvme_group,
    nvme_node,
    pdb,
    pods_of,
    rok_class,
    statefulset,
)
from tests.factories import node_json, pod_json

Json = dict[str, Any]


def _cpu_world(*objects: Json, **spec: Any) -> World:
    """Two 4-cpu nodes without local storage (no guards to think about)."""
    return make_world(node_json("w1", "4", "16Gi"), node_json("w2", "4", "16Gi"), *objects, **spec)


@pytest.mark.parametrize(("budget", "allowed"), [
    pytest.param({"min_available": 2}, 2, id="min-available"),
    pytest.param({"min_available": "50%"}, 2, id="min-available-percent"),
    pytest.param({"max_unavailable": 1}, 1, id="max-unavailable"),
    pytest.param({"max_unavailable": "30%"}, 2, id="max-unavailable-percent-rounds-up"),
    pytest.param({"min_available": 4}, 0, id="all-needed"),
    pytest.param({}, 3, id="default-min-available-1"),
])
def test_disruptions_allowed_is_computed_from_running_pods(budget: dict[str, Any], allowed: int) -> None:
    world = _cpu_world(deployment("web", 4, cpu="1"), pdb("web", {"app": "web"}, **budget))
    assert [p.disruptions_allowed for p in world.cluster.list_objects().pdbs] == [allowed]


def test_eviction_spends_the_budget_and_is_then_refused() -> None:
    world = _cpu_world(deployment("web", 3, cpu="2500m"), pdb("web", {"app": "web"}, max_unavailable=2))
    running = [p for p in pods_of(world, "web") if p.node_name]
    assert len(running) == 2, "the third does not fit"
    first = world.cluster.evict_pod("default", running[0].name)
    assert first.outcome is Eviction.EVICTED
    # 1 matching pod running of 3 expected: maxUnavailable 2 is spent.
    second = world.cluster.evict_pod("default", running[1].name)
    assert second.outcome is Eviction.REFUSED
    pending = next(p for p in pods_of(world, "web") if not p.node_name)
    assert world.cluster.evict_pod("default", pending.name).outcome is Eviction.EVICTED, "pending pods ignore PDBs"
    assert world.cluster.evict_pod("default", "gone").message == "already gone"


def test_list_objects_is_a_fresh_consistent_view() -> None:
    world = _cpu_world(deployment("web", 2))
    api: ClusterAPI = world.cluster
    first = api.list_objects()
    first.pods.clear()
    first.controllers.clear()
    second = api.list_objects()
    assert len(second.pods) == 2
    owner = second.pods[0].owner
    assert owner is not None and owner.kind == "ReplicaSet"
    assert ("ReplicaSet", "default", owner.name) in second.controllers, "scale-down looks the owner up"
    assert ("Deployment", "default", "web") in second.controllers
    assert [n.name for n in second.nodes] == ["w1", "w2"]


def test_taints_and_api_errors() -> None:
    world = _cpu_world()
    taint = Taint("example.com/maintenance", "", "NoSchedule")
    world.cluster.taint_node("w1", taint)
    world.cluster.taint_node("w1", taint)
    assert world.cluster.list_objects().nodes[0].taints == (taint,)
    world.cluster.untaint_node("w1", taint.key)
    assert world.cluster.list_objects().nodes[0].taints == ()
    with pytest.raises(ClusterAPIError, match="not found"):
        world.cluster.taint_node("w9", taint)


def test_events_are_aggregated_and_statuses_kept() -> None:
    world = _cpu_world()
    for _ in range(3):
        world.cluster.record_event("Pod", "default", "p", "NotTriggerScaleUp", "no group fits", warning=True)
    world.cluster.write_status("scaleUp: NotNeeded")
    [event] = world.cluster.events
    assert (event.count, event.warning, event.reason) == (3, True, "NotTriggerScaleUp")
    assert [s.text for s in world.cluster.statuses] == ["scaleUp: NotNeeded"]


def test_scheduler_spreads_and_respects_taints() -> None:
    world = _cpu_world(deployment("web", 4, cpu="500m"))
    assert sorted(p.node_name for p in pods_of(world, "web")) == ["w1", "w1", "w2", "w2"]
    world.cluster.taint_node("w2", Taint("ToBeDeletedByClusterAutoscaler", "0", "NoSchedule"))
    world.workloads.scale("Deployment", "default", "web", 6)
    later(world, 0)
    assert sorted(p.node_name for p in pods_of(world, "web")).count("w1") == 4


def test_replicaset_scale_down_deletes_pending_then_newest() -> None:
    world = _cpu_world(deployment("web", 2, cpu="3"))
    world.workloads.scale("Deployment", "default", "web", 4)
    later(world, 60)
    assert sum(1 for p in pods_of(world, "web") if not p.node_name) == 2
    world.workloads.scale("Deployment", "default", "web", 2)
    world.settle()
    web = pods_of(world, "web")
    assert len(web) == 2 and all(p.node_name for p in web)
    assert world.cluster.list_objects().controllers[("Deployment", "default", "web")].replicas == 2


def test_statefulset_scale_down_removes_highest_ordinals_and_keeps_claims() -> None:
    world = make_world(rok_class(), nvme_group(), nvme_node("nvme-1"), statefulset("db", 3, "10Gi"))
    world.workloads.scale("StatefulSet", "default", "db", 1)
    world.settle()
    assert [p.name for p in pods_of(world, "db")] == ["db-0"]
    assert all(world.cluster.claim("default", f"data-db-{i}") is not None for i in range(3))


def test_ordered_statefulset_creates_one_pod_at_a_time() -> None:
    world = make_world(rok_class(), nvme_group(), nvme_node("nvme-1", cpu="2"), statefulset("db", 3, "10Gi",
                                                                                           cpu="800m", ordered=True))
    pods = pods_of(world, "db")
    assert [(p.name, bool(p.node_name)) for p in pods] == [("db-0", True), ("db-1", True), ("db-2", False)]


def test_scenario_events_create_scale_and_delete() -> None:
    events = [
        {"at": "10m", "scale": {"kind": "Deployment", "name": "web", "replicas": 3}},
        {"at": "20m", "create": [deployment("api", 2), pod_json("bare", node="")]},
        {"at": "30m", "delete": [{"kind": "Deployment", "name": "web"}, {"kind": "Pod", "name": "bare"}]},
    ]
    world = _cpu_world(deployment("web", 1), events=events)
    later(world, 600)
    assert len(pods_of(world, "web")) == 3
    later(world, 600)
    assert len(pods_of(world, "api")) == 2 and world.cluster.pod("default", "bare") is not None
    later(world, 600)
    assert pods_of(world, "web") == [] and world.cluster.pod("default", "bare") is None
    assert ("Deployment", "default", "web") not in world.cluster.list_objects().controllers


def test_existing_replicaset_of_a_deployment_is_adopted() -> None:
    """A kubectl dump lists the Deployment, its ReplicaSet and its pods: nothing is duplicated."""
    rs: Json = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
                "metadata": {"name": "web-abc", "namespace": "default", "uid": "uid-ReplicaSet-web-abc",
                             "ownerReferences": [{"kind": "Deployment", "name": "web", "controller": True}]},
                "spec": {"replicas": 2, "template": deployment("web", 2)["spec"]["template"]}}
    running = pod_json("web-abc-1", node="w1", owner=("ReplicaSet", "web-abc"), labels={"app": "web"})
    world = _cpu_world(deployment("web", 2), rs, running)
    web = pods_of(world, "web")
    assert len(web) == 2 and {p.owner.name for p in web if p.owner} == {"web-abc"}
    assert world.cluster.pod("default", "web-abc-1") is not None


def test_pending_intervals() -> None:
    world = _cpu_world(deployment("web", 3, cpu="3"))
    later(world, 100)
    world.workloads.scale("Deployment", "default", "web", 2)
    later(world, 50)
    intervals = world.metrics.pending_intervals()
    start = world.start
    assert sorted(intervals, key=lambda i: (i[1] is None, i[1] or 0)) == [(start, start), (start, start),
                                                                          (start, start + 100)]
    assert world.sample().pending == 0


def _placement(world: World) -> list[tuple[str, str]]:
    return sorted((p.name, p.node_name) for p in world.cluster.pods())


def test_runs_are_reproducible_for_a_seed() -> None:
    def build(seed: int) -> World:
        world = _cpu_world(deployment("web", 5, cpu="500m"), seed=seed)
        world.workloads.scale("Deployment", "default", "web", 9)
        later(world, 60)
        return world

    assert _placement(build(7)) == _placement(build(7))
    assert _placement(build(7)) != _placement(build(8)), "names come from the seed"


def test_idle_time_costs_no_scheduling_pass() -> None:
    world = _cpu_world(deployment("web", 12, cpu="1"))
    assert sum(1 for p in pods_of(world, "web") if not p.node_name) > 0
    passes = world.scheduler.passes
    for _ in range(100):
        later(world, 10)
        world.cluster.list_objects()
        world.cluster.taint_node("w1", Taint("DeletionCandidateOfClusterAutoscaler", "0", "PreferNoSchedule"))
    assert world.scheduler.passes == passes, "nothing that could help a pending pod happened"
    world.workloads.scale("Deployment", "default", "web", 13)  # a new pending pod: worth a pass
    later(world, 10)
    assert world.scheduler.passes == passes + 1

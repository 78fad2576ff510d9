"""The actuator against the simulated cluster: pods terminate, a node is re-checked, untaints retry.

``nvme-1`` runs a 5-cpu web pod (needed); ``nvme-2`` joins at the start and runs a 2-cpu
``app`` pod that fits on ``nvme-1``: with ``--scale-down-unneeded-time=1m`` the loop
drains ``nvme-2`` at 60 s (``T0``). Its pods are ``app`` and the storage operator's guard
(30 s grace, Kubernetes' default); the simulated cluster keeps an evicted pod on its node,
terminating, for its grace period.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from autoscaler.loop import Autoscaler
from emulator.world import World
from kube.names import CA_TO_BE_DELETED_TAINT
from tests.emulator.worlds import Driven, Json, deployment, make_world, nvme_group, nvme_node
from tests.factories import options, pv, pvc

SCAN = 10.0
T0 = 60.0


def _app(grace: int | None) -> Json:
    app = deployment("app", 1, cpu="2")
    if grace is not None:
        app["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] = grace
    return app


def _world(grace: int | None = None) -> World:
    world = make_world(nvme_group(), nvme_node("nvme-1"), deployment("web", 1, cpu="5"),
                       events=[{"at": "0s", "create": [nvme_node("nvme-2"), _app(grace)]}])
    world.advance(world.start)
    [app] = [p for p in world.cluster.pods() if p.labels.get("app") == "app"]
    assert app.node_name == "nvme-2", "least allocated"
    return world


def _loop(world: World, *flags: str) -> Driven:
    return Driven(Autoscaler(world.cluster, world.cloud, options("--scale-down-unneeded-time=1m", *flags)))


def _step(world: World, autoscaler: Driven, at: float) -> None:
    world.advance(world.start + at)
    autoscaler.run_once(world.start + at)


def _history(world: World, autoscaler: Driven) -> list[tuple[float, str]]:
    return [(e.time - world.start, e.kind.value) for e in autoscaler.actuation if e.node == "nvme-2"]


def _terminating_app_on_nvme2(world: World) -> bool:
    return any(p.labels.get("app") == "app" and p.deleted is not None for p in world.cluster.pods_on("nvme-2"))


@pytest.mark.parametrize(("grace", "flags", "deleted_after"), [
    pytest.param(None, (), 30.0, id="default-30s-grace"),
    pytest.param(120, (), 120.0, id="pod-asks-120s"),
    pytest.param(120, ("--max-graceful-termination-sec=60",), 60.0, id="capped-by-max-graceful-termination"),
])
def test_a_node_goes_only_after_its_evicted_pods_are_gone(grace: int | None, flags: tuple[str, ...],
                                                          deleted_after: float) -> None:
    world = _world(grace)
    autoscaler = _loop(world, *flags)
    at = 0.0
    while at < T0 + deleted_after:
        _step(world, autoscaler, at)
        if at >= T0:
            # Evicted, terminating for its (capped) grace period: still on the node, and so is the node.
            assert _terminating_app_on_nvme2(world), at
            assert world.cluster.node("nvme-2") is not None, at
        at += SCAN
    _step(world, autoscaler, at)
    assert world.cluster.node("nvme-2") is None
    assert _history(world, autoscaler) == [(T0, "Tainted"), (T0, "Evicted"), (T0, "Evicted"),
                                           (T0 + deleted_after, "Deleted")]
    [app] = [p for p in world.cluster.pods() if p.labels.get("app") == "app"]
    assert app.node_name == "nvme-1", "its replacement, created at eviction, runs on nvme-1"


def test_an_untaint_that_fails_is_retried_next_loop() -> None:
    world = _world()
    world.cloud.group("nvme").fail_deletes(1, "injected: termination refused")
    world.cluster.fail_calls("untaint_node", 1)
    autoscaler = _loop(world)
    for at in range(0, int(T0 + 30) + 1, int(SCAN)):
        _step(world, autoscaler, at)
    failed = [e for e in autoscaler.actuation if e.kind.value == "Failed"]
    assert [e.time - world.start for e in failed] == [T0 + 30]
    assert failed[0].message.endswith("the taint could not be removed, it will be retried next loop")
    node = world.cluster.node("nvme-2")
    assert node is not None and node.has_taint(CA_TO_BE_DELETED_TAINT), "the untaint failed"
    _step(world, autoscaler, T0 + 40)
    node = world.cluster.node("nvme-2")
    assert node is not None and not node.has_taint(CA_TO_BE_DELETED_TAINT)
    assert _history(world, autoscaler)[-1] == (T0 + 40, "Untainted")
    assert autoscaler.actuator.untaint_pending == set()


def _pin_a_local_volume(world: World) -> None:
    """A pod that tolerates the taint lands with a hostPath-backed local PV: its data lives on nvme-2."""
    world.cluster.put_claim(pvc("logs", "5Gi", "local-disk", volume="logs-pv"))
    world.cluster.put_volume(pv("logs-pv", "5Gi", "local-disk", hosts=["nvme-2"], claim=("default", "logs"),
                                driver="local"))


def _leave_the_group(world: World) -> None:
    world.cloud.forget("nvme-2")


@pytest.mark.parametrize(("change", "why"), [
    pytest.param(_pin_a_local_volume, "node now holds local volume(s) that cannot be migrated, deleting it "
                 "would lose their data: logs-pv", id="gained-a-pinned-local-volume"),
    pytest.param(_leave_the_group, "node nvme-2 left node group nvme (now in no node group)", id="left-its-group"),
])
def test_a_node_that_changed_during_its_drain_is_not_deleted(change: Callable[[World], None], why: str) -> None:
    world = _world()
    autoscaler = _loop(world)
    for at in range(0, int(T0) + 1, int(SCAN)):
        _step(world, autoscaler, at)
    assert _history(world, autoscaler)[0] == (T0, "Tainted")
    change(world)
    for at in range(int(T0) + 10, int(T0) + 31, int(SCAN)):
        _step(world, autoscaler, at)
    assert world.cluster.node("nvme-2") is not None
    failed = [e for e in autoscaler.actuation if e.kind.value == "Failed"]
    assert [(e.time - world.start, e.message) for e in failed] == [(T0 + 30, f"no longer removable: {why}")]
    node = world.cluster.node("nvme-2")
    assert node is not None and not node.has_taint(CA_TO_BE_DELETED_TAINT), "rolled back"
    assert world.metrics.data_loss_events == []


def test_a_drain_that_cannot_see_its_pods_gives_up_when_they_had_to_be_gone() -> None:
    world = _world()
    world.cluster.fail_calls("pods_on_node", 100)
    autoscaler = _loop(world)
    for at in range(0, int(T0) + 61, int(SCAN)):
        _step(world, autoscaler, at)
    failed = [(e.time - world.start, e.message) for e in autoscaler.actuation if e.kind.value == "Failed"]
    # 30 s grace plus upstream's 30 s headroom after the evictions at T0.
    assert failed == [(T0 + 60, "cannot tell whether the evicted pods are gone: "
                                "pods_on_node: injected: the API server is unavailable")]
    assert world.cluster.node("nvme-2") is not None

"""A storage driver that is slow, stuck or absent never makes the autoscaler lose data.

``nvme-1`` runs a 5-cpu web pod (needed). ``nvme-2`` (4 cpu) runs nothing but holds ``data-pv``,
a bound 100Gi Rok volume pinned to it (its pod is gone, the StatefulSet kept the
claim): the planner simulates the volume as unpinned, so with
``--scale-down-unneeded-time=1m`` the empty node is chosen at 60 s (``T0``). No guard
pod runs there in any case below (``NoGuard``): only the actuator's last look keeps the
node until the driver has unpinned the volume (storage-semantics 3.7), for at most
``--max-pod-eviction-time`` (2m); then it untaints the node and reports the volume.
The driver unpins at 1 s/GiB: 100 s for ``data-pv``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from emulator.world import World
from kube.names import CA_TO_BE_DELETED_TAINT
from tests.emulator.worlds import Driven, Json, deployment, drive, make_world, nvme_group, nvme_node, rok_class
from tests.factories import options, pv_json, pvc_json

SCAN = 10.0
T0 = 60.0
NO_GUARD: Json = {"kind": "NoGuard"}


def _world(*driver_faults: Json) -> World:
    world = make_world(
        rok_class(), nvme_group(), nvme_node("nvme-1"), nvme_node("nvme-2", free="900Gi", cpu="4"),
        deployment("web", 1, cpu="5"),
        pvc_json("data", "100Gi", "rok", volume="data-pv"),
        pv_json("data-pv", "100Gi", "rok", hosts=["nvme-2"], claim=("default", "data")),
        driver_faults=driver_faults)
    world.advance(world.start)
    [web] = [p for p in world.cluster.pods() if p.labels.get("app") == "web"]
    assert web.node_name == "nvme-1"
    return world


def _run(world: World, until: float) -> Driven:
    # 100Gi at 8Gi/s, a quarter of it before any drain is observed (cost.PRIOR_MARGIN): 2Gi/s predicts
    # 50 s to unpin, twice over 100 s: the drain deadline stays --max-pod-eviction-time (2m).
    return drive(world, "--scale-down-unneeded-time=1m", "--storage-unpin-throughput=8Gi", until=until, scan=SCAN)


def _history(world: World, autoscaler: Driven) -> list[tuple[float, str]]:
    return [(e.time - world.start, e.kind.value) for e in autoscaler.actuation if e.node == "nvme-2"]


def _still_pinned(world: World) -> bool:
    volume = world.cluster.volume("data-pv")
    return volume is not None and volume.node_affinity is not None


@pytest.mark.parametrize(("faults", "deleted_at"), [
    # Unpinned at T0+100 s (100Gi at 1 s/GiB): deleted in that loop.
    pytest.param((NO_GUARD,), T0 + 100, id="no-guard-driver-on-time"),
    # The guard's budget goes at T0+100; the guard is evicted then and takes its 30 s grace.
    pytest.param((), T0 + 130, id="guarded-driver-on-time"),
])
def test_the_node_goes_after_the_driver_unpins_never_before(faults: tuple[Json, ...], deleted_at: float) -> None:
    world = _world(*faults)
    autoscaler = _run(world, T0 + 150)
    history = _history(world, autoscaler)
    assert history[0] == (T0, "Tainted")
    assert history[-1] == (deleted_at, "Deleted")
    assert world.cluster.node("nvme-2") is None
    assert not _still_pinned(world)
    assert world.metrics.data_loss_events == []


@pytest.mark.parametrize("faults", [
    pytest.param((NO_GUARD, {"kind": "StuckUnpin"}), id="stuck-driver"),
    pytest.param(({"kind": "NoDriver"},), id="absent-driver"),
    pytest.param((NO_GUARD, {"kind": "SlowUnpin", "unpinSecondsPerGiB": 5}), id="slow-driver-500s"),
])
def test_a_driver_that_does_not_unpin_in_time_keeps_the_node_and_its_taint_goes(faults: tuple[Json, ...]) -> None:
    world = _world(*faults)
    autoscaler = _run(world, T0 + 130)
    assert _history(world, autoscaler) == [(T0, "Tainted"), (T0 + 120, "Failed")]
    [failed] = [e for e in autoscaler.actuation if e.kind.value == "Failed"]
    assert failed.message == ("not deleted within --max-pod-eviction-time: the storage driver has not unpinned "
                              "volume(s) still pinned to the node, deleting it would lose their data: data-pv")
    node = world.cluster.node("nvme-2")
    assert node is not None and not node.has_taint(CA_TO_BE_DELETED_TAINT), "rolled back"
    assert _still_pinned(world)
    assert world.metrics.data_loss_events == []


def test_a_driver_stuck_for_a_while_is_waited_out_and_the_node_goes_once_it_unpins() -> None:
    world = _world(NO_GUARD, {"kind": "StuckUnpin", "until": "5m"})
    autoscaler = _run(world, 900)
    history = _history(world, autoscaler)
    assert history[:2] == [(T0, "Tainted"), (T0 + 120, "Failed")]
    assert history[-1][1] == "Deleted"
    tainted_again = [t for t, kind in history if kind == "Tainted"][-1]
    assert tainted_again >= 300, "retried once the driver is back"
    assert history[-1][0] >= tainted_again + 100, "not before the driver unpinned the volume"
    assert world.cluster.node("nvme-2") is None
    assert world.metrics.data_loss_events == []


@pytest.mark.parametrize(("storage_aware", "events", "losses"), [
    # The drain deadline: 100Gi at the default --storage-unpin-throughput (1Gi/s) with its prior
    # margin (x4: no drain observed yet), twice over: 800 s. The retry (failed once) gets twice
    # as long; the driver is back at 40m and unpins the volume in 100 s.
    pytest.param(True, [(600.0, "Tainted"), (1400.0, "Failed"), (2000.0, "Tainted"),
                        (2500.0, "Deleted")], 0, id="storage-aware-waits-for-the-unpin"),
    pytest.param(False, [(600.0, "Tainted"), (600.0, "Deleted")], 1, id="upstream-loses-data-pv"),
])
def test_the_shipped_stuck_driver_scenario(storage_aware: bool, events: list[tuple[float, str]], losses: int) -> None:
    from app.simulate.runner import run_scenario
    from emulator.scenario import load_scenario

    scenario = load_scenario(Path(__file__).resolve().parents[2] / "examples" / "scenarios" / "stuck-driver.yaml")
    run = run_scenario(scenario, options(f"--storage-aware={str(storage_aware).lower()}"))
    assert run.world is not None
    assert [(a.time - run.world.start, a.kind.value) for a in run.actuation if a.kind.value != "Evicted"] == events
    assert len(run.world.metrics.data_loss_events) == losses

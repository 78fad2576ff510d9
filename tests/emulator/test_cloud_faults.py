"""The loop against a cloud that fails: stock-outs, quotas, throttling, slow boots.

Each test drives the real ``Autoscaler`` over a small world whose scenario carries
``cloudFaults`` (the simulated cloud raises or fails instances as a real one would),
and checks the scaling events in time order: a failed scale-up backs its group off
(5 min, doubling), the loop falls back to the next-best group meanwhile and retries
after the backoff; an instance that does not register within
``--max-node-provision-time`` is given up on (target lowered) and backs its group off;
``Transient`` errors are retried within the loop without waiting in simulated time.
"""

from __future__ import annotations

from typing import Any

import pytest

from autoscaler.loop import Autoscaler
from emulator.world import World
from tests.emulator.worlds import Driven, Json, deployment, make_world
from tests.factories import node_group_json, options, template

SCAN = 10.0


def _group(name: str, cpu: str) -> Json:
    return node_group_json(name, 0, 5, node_selector={"ng": name},
                           template=template(cpu=cpu, memory=f"{4 * int(cpu)}Gi", labels={"ng": name}))


def _world(*faults: Json, groups: tuple[str, ...] = ("small", "big"), **spec: Any) -> World:
    """``small`` (4 cpu) is least-waste's choice for a 3-cpu pod, ``big`` (16 cpu) the fallback."""
    sizes = {"small": "4", "big": "16"}
    return make_world(*(_group(g, sizes[g]) for g in groups), deployment("web", 1, cpu="3", memory="1Gi"),
                      faults=list(faults), **spec)


def _drive(world: World, *flags: str, minutes: float, sleeps: list[float] | None = None) -> Driven:
    autoscaler = Driven(Autoscaler(world.cluster, world.cloud, options(*flags),
                                   sleep=(sleeps.append if sleeps is not None else lambda _: None)))
    for i in range(int(minutes * 60 / SCAN) + 1):
        now = world.start + i * SCAN
        world.advance(now)
        autoscaler.run_once(now)
    return autoscaler


def _events(world: World, autoscaler: Driven) -> list[tuple[float, str, str, int]]:
    return [(e.time - world.start, e.kind.value, e.group, e.nodes) for e in autoscaler.events]


def _web_node(world: World) -> str:
    [pod] = [p for p in world.cluster.pods() if p.labels.get("app") == "web"]
    return pod.node_name


def test_stockout_falls_back_to_the_next_group() -> None:
    world = _world({"group": "small", "kind": "OutOfCapacity"})
    autoscaler = _drive(world, minutes=4)
    assert _events(world, autoscaler) == [
        (0.0, "ScaleUp", "small", 1),
        (10.0, "ScaleUpFailed", "small", 1),  # the instance came back OutOfCapacity
        (10.0, "ScaleUp", "big", 1),  # small is backed off: the next-best group
    ]
    failed = autoscaler.events[1]
    assert "InsufficientInstanceCapacity" in failed.detail and "backed off for 300s" in failed.detail
    assert world.cloud.group("small").target_size() == 0, "the failed instance was given up"
    assert _web_node(world) == "big-1"
    assert autoscaler.backoff.status("small", world.clock.now) is not None


def test_stockout_is_retried_after_the_backoff_which_doubles() -> None:
    world = _world({"group": "small", "kind": "OutOfCapacity", "until": "6m"}, groups=("small",))
    autoscaler = _drive(world, minutes=20)
    assert _events(world, autoscaler) == [
        (0.0, "ScaleUp", "small", 1),
        (10.0, "ScaleUpFailed", "small", 1),  # backed off for 5 min: up to 310 s included
        (320.0, "ScaleUp", "small", 1),  # retried when the backoff ran out: still stocked out
        (330.0, "ScaleUpFailed", "small", 1),  # a failure after a backoff doubles it: up to 930 s
        (940.0, "ScaleUp", "small", 1),  # the stock-out is over
    ]
    assert "backed off for 600s" in autoscaler.events[3].detail
    # The node registered 2 min later; the backoff has run out (only time resets it).
    assert _web_node(world) == "small-3"
    assert autoscaler.backoff.backed_off(world.clock.now) == {}
    assert world.cloud.group("small").target_size() == 1


def test_an_instance_that_never_registers_is_given_up_after_the_provision_time() -> None:
    world = _world({"group": "small", "kind": "SlowProvisioning", "until": "1m", "provisioningDelay": "30m"},
                   groups=("small",))
    autoscaler = _drive(world, "--max-node-provision-time=5m", minutes=15)
    # Asked for at 0 s; more than 5 min later it is given up, the group backed off up to 610 s.
    assert _events(world, autoscaler) == [
        (0.0, "ScaleUp", "small", 1),
        (310.0, "ScaleUpTimedOut", "small", 1),
        (620.0, "ScaleUp", "small", 1),
    ]
    assert "not registered within --max-node-provision-time (300s)" in autoscaler.events[1].detail
    group = world.cloud.group("small")
    assert (list(group.node_names()), group.provisioning, group.target_size()) == (["small-2"], (), 1)
    assert _web_node(world) == "small-2"
    world.advance(world.start + 31 * 60)
    assert world.cluster.node("small-1") is None, "the cancelled instance never registers"


@pytest.mark.parametrize(("times", "kinds", "sleeps"), [
    pytest.param(2, [(0.0, "ScaleUp", "small", 1)], [2.0, 2.0], id="retried-within-the-loop"),
    pytest.param(3, [(0.0, "ScaleUpFailed", "small", 1), (10.0, "ScaleUp", "big", 1)], [2.0, 2.0],
                 id="still-throttled-after-3-calls-backs-off"),
])
def test_transient_errors_are_retried(times: int, kinds: list[tuple[float, str, str, int]],
                                      sleeps: list[float]) -> None:
    world = _world({"group": "small", "kind": "Transient", "times": times})
    waited: list[float] = []
    autoscaler = _drive(world, minutes=0.2, sleeps=waited)
    assert _events(world, autoscaler) == kinds
    assert waited == sleeps, "the cloud's retry_after, through the injected sleep"


def test_quota_backs_the_group_off_at_once() -> None:
    world = _world({"group": "small", "kind": "Quota"})
    autoscaler = _drive(world, minutes=0.2)
    assert _events(world, autoscaler) == [(0.0, "ScaleUpFailed", "small", 1), (10.0, "ScaleUp", "big", 1)]
    assert autoscaler.backoff.backed_off(world.start + 10) == {
        "small": "Quota: node group small: injected: vCPU quota exceeded in the region"}
    assert world.cloud.group("small").target_size() == 0, "a refused increase changes nothing"


def test_the_shipped_stockout_scenario_exercises_every_path() -> None:
    from pathlib import Path

    from app.simulate.runner import run_scenario
    from emulator.scenario import load_scenario

    scenario = load_scenario(Path(__file__).resolve().parents[2] / "examples" / "scenarios" / "cloud-stockout.yaml")
    run = run_scenario(scenario, options())
    assert run.world is not None
    assert [(e.time - run.world.start, e.kind.value, e.group) for e in run.events] == [
        (300.0, "ScaleUp", "nvme"),
        (310.0, "ScaleUpFailed", "nvme"),  # stock-out: back off, fall back
        (310.0, "ScaleUp", "nvme-b"),  # after two throttled calls, retried at once
        (1220.0, "ScaleUpTimedOut", "nvme-b"),  # asked for at 310 s, more than 15 min without a node
        (1220.0, "ScaleUp", "nvme"),  # nvme's backoff is over, but it is still out of capacity
        (1230.0, "ScaleUpFailed", "nvme"),
        (1530.0, "ScaleUp", "nvme-b"),  # nvme-b's backoff is over, and it boots in 3 min now
    ]
    assert run.world.cluster.pending_count() == 0
    assert run.world.metrics.data_loss_events == []

"""The real autoscaler loop over the world, end to end (what ``autoscaler simulate`` runs).

Scale-down of a node holding a pinned volume behind a guard: storage-aware, the actuator's
evictions of the guard are refused until the storage driver has unpinned the volume, then
the node goes and no data is lost; upstream is blocked by the guard's budget.
"""

from __future__ import annotations

import logging

import pytest

from autoscaler.loop import Autoscaler
from emulator.world import World
from tests.emulator.worlds import (
    Driven,
    deployment,
    make_world,
    nvme_group,
    nvme_node,
    pods_of,
    rok_class,
    statefulset,
)
from tests.factories import options


def _run(world: World, *flags: str, minutes: int) -> Driven:
    autoscaler = Driven(Autoscaler(world.cluster, world.cloud, options(*flags)))
    now = world.clock.now
    end = now + minutes * 60
    while now <= end:
        world.advance(now)
        autoscaler.run_once(now)
        now += 10
    return autoscaler


def _world() -> World:
    """db-1's claim keeps a 60Gi volume pinned to one of two nodes; a scale event at 1m frees that node."""
    return make_world(rok_class(), nvme_group(min_size=1), nvme_node("nvme-1"), nvme_node("nvme-2"),
                      statefulset("db", 2, "60Gi", cpu="3"), deployment("web", 2, cpu="500m"),
                      events=[{"at": "1m", "scale": {"kind": "StatefulSet", "name": "db", "replicas": 1}}])


@pytest.mark.parametrize(("flags", "removed"), [
    pytest.param(("--storage-aware=true",), 1, id="storage-aware"),
    pytest.param(("--storage-aware=false",), 0, id="upstream"),
])
def test_scale_down_waits_for_the_driver_and_loses_nothing(flags: tuple[str, ...], removed: int) -> None:
    world = _world()
    autoscaler = _run(world, *flags, "--scale-down-unneeded-time=2m", minutes=15)
    deleted = [a for a in autoscaler.actuation if a.kind == "Deleted"]
    assert len(deleted) == removed
    assert world.metrics.data_loss_events == []
    if removed:
        assert world.metrics.refused_evictions >= 1, "the guard held the drain until the volume was unpinned"
        assert world.metrics.unpins == 1
        assert [p.node_name for p in pods_of(world, "db")] != [""]
        assert len(world.cloud.group("nvme").node_names()) == 1


def test_one_structured_log_line_per_loop(caplog: pytest.LogCaptureFixture) -> None:
    world = _world()
    with caplog.at_level(logging.INFO, logger="autoscaler.loop"):
        autoscaler = _run(world, "--scale-down-unneeded-time=2m", minutes=3)
    records = [r for r in caplog.records if r.name == "autoscaler.loop"]
    assert len(records) == autoscaler.loops == 19
    fields = records[-1].__dict__["autoscaler"]
    assert fields["loop"] == 19 and fields["scale_up"] == "NotNeeded"
    assert records[-1].getMessage().startswith("loop=19 now=")
    assert "scale_down=" in records[-1].getMessage() and "wall_ms=" in records[-1].getMessage()

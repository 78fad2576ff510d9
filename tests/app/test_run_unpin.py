"""``run`` shows each drain's predicted unpin time and deadline, and the unpin throughput it assumes.

Over the simulated world: ``nvme-1`` runs a 5-cpu web pod (needed); ``nvme-2`` runs
nothing but holds ``pv-nvme-2``, a bound 100Gi Rok volume pinned to it, with no guard
pod. The driver unpins at 3 s/GiB (300 s); the flag (1Gi/s) predicts 100 s and gives a
200 s deadline, so the first drain fails and the throughput it showed (100Gi in 200 s at
most) is what the next deadline, the gauge and the status ConfigMap use.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
import yaml

from app.run.loop import LiveLoop
from emulator.world import World
from tests.app.run_helpers import live_loop, sample
from tests.emulator.worlds import deployment, make_world, nvme_group, nvme_node, rok_class
from tests.factories import pv_json, pvc_json

GiB = 2**30
SCAN = 10.0
T0 = 60.0  # --scale-down-unneeded-time=1m
GAUGE = "storage_autoscaler_unpin_bytes_per_second"


#: 4Gi/s: before any drain is observed a deadline assumes a quarter of it (``cost.PRIOR_MARGIN``),
#: 1Gi/s: 200 s for 100Gi, which the driver's 3 s/GiB (300 s) overruns.
PRIOR_1GI = "--storage-unpin-throughput=4Gi"


def _world() -> World:
    world = make_world(rok_class(), nvme_group(), nvme_node("nvme-1"), nvme_node("nvme-2", free="900Gi", cpu="4"),
                       deployment("web", 1, cpu="5"),
                       pvc_json("data", "100Gi", "rok", volume="pv-nvme-2"),
                       pv_json("pv-nvme-2", "100Gi", "rok", hosts=["nvme-2"], claim=("default", "data")),
                       driver_faults=[{"kind": "NoGuard"}], unpin=3.0)
    world.advance(world.start)
    return world


def _run(world: World, loop: LiveLoop, start: float, until: float) -> None:
    at = start
    while at <= until:
        world.advance(world.start + at)
        assert loop.iterate(world.start + at)
        at += SCAN


def _scale_down(world: World) -> dict[str, Any]:
    status = yaml.safe_load(world.cluster.statuses[-1].text)
    down = status["clusterWide"]["scaleDown"]
    assert isinstance(down, dict)
    return down


def _rfc3339(world: World, at: float) -> str:
    return dt.datetime.fromtimestamp(world.start + at, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.mark.parametrize("dry_run", [pytest.param(False, id="acting"), pytest.param(True, id="dry-run")])
def test_the_status_lists_the_drain_with_its_predicted_unpin_time_and_deadline(dry_run: bool) -> None:
    world = _world()
    loop = live_loop(world, "--scale-down-unneeded-time=1m", PRIOR_1GI, dry_run=dry_run)
    _run(world, loop, 0.0, T0)
    down = _scale_down(world)
    assert down["drainingNodes"] == [{"name": "nvme-2", "bytesToUnpin": 100 * GiB, "predictedUnpinSeconds": 25.0,
                                      "drainDeadline": _rfc3339(world, T0 + 200)}]
    assert down["unpinThroughput"] == {"bytesPerSecond": 4 * GiB, "source": "--storage-unpin-throughput",
                                       "observedDrains": 0}
    assert sample(loop, GAUGE) == 4 * GiB, "the flag before any drain was observed"


def test_a_failed_drain_sets_the_gauge_the_status_and_the_next_deadline() -> None:
    world = _world()
    loop = live_loop(world, "--scale-down-unneeded-time=1m", PRIOR_1GI)
    _run(world, loop, 0.0, T0 + 200)  # the drain fails at T0+200
    observed = 100 * GiB / 200
    assert sample(loop, GAUGE) == pytest.approx(observed)
    down = _scale_down(world)
    assert down["unpinThroughput"] == {"bytesPerSecond": round(observed), "source": "observed", "observedDrains": 1}
    assert "drainingNodes" not in down, "rolled back: nothing is being drained"
    _run(world, loop, T0 + 210, T0 + 400)  # chosen again once unneeded for 1m
    [again] = _scale_down(world)["drainingNodes"]
    # Calling the drain off cancelled the unpin in flight: 100Gi still to unpin, at the observed
    # 0.5Gi/s: 200 s predicted, a deadline of at least 400 s from the second start.
    started = min(s.time - world.start for s in world.cluster.statuses
                  if s.time - world.start > T0 + 200 and "drainingNodes" in s.text)
    assert again["predictedUnpinSeconds"] == pytest.approx(200.0)
    assert again["drainDeadline"] >= _rfc3339(world, started + 400)  # RFC 3339 in UTC sorts as time

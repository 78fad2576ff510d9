"""A driver slower than predicted: a node whose drain failed at its deadline gets twice as long next time.

``nvme-2`` is empty but holds ``data-pv``, a 100Gi Rok volume whose pod is gone; no guard
pod runs (``NoGuard``), so only the actuator's last look keeps the node until the driver
has unpinned it. ``--storage-unpin-throughput=4Gi`` (1Gi/s before any drain is observed,
``cost.PRIOR_MARGIN``) predicts 100 s: the first drain may take 200 s (``cost.SAFETY_FACTOR``).
The driver takes 3 s/GiB (300 s) and a cancelled snapshot starts over, so with one deadline
for every attempt the node would fail forever; the second attempt may take 400 s and the
node goes, its volume unpinned, nothing lost.
"""

from __future__ import annotations

from emulator.world import World
from tests.emulator.worlds import deployment, drive, make_world, nvme_group, nvme_node, rok_class
from tests.factories import pv_json, pvc_json

SCAN = 10.0
T0 = 60.0


def _world(unpin_seconds_per_gib: float) -> World:
    world = make_world(
        rok_class(), nvme_group(), nvme_node("nvme-1"), nvme_node("nvme-2", free="900Gi", cpu="4"),
        deployment("web", 1, cpu="5"),
        pvc_json("data", "100Gi", "rok", volume="data-pv"),
        pv_json("data-pv", "100Gi", "rok", hosts=["nvme-2"], claim=("default", "data")),
        driver_faults=[{"kind": "NoGuard"}, {"kind": "SlowUnpin", "unpinSecondsPerGiB": unpin_seconds_per_gib}])
    world.advance(world.start)
    return world


def _history(world: World, until: float) -> list[tuple[float, str]]:
    autoscaler = drive(world, "--scale-down-unneeded-time=1m", "--scale-down-delay-after-failure=1m",
                       "--storage-unpin-throughput=4Gi", until=until, scan=SCAN)
    return [(e.time - world.start, e.kind.value) for e in autoscaler.actuation if e.node == "nvme-2"]


def test_a_failed_drain_doubles_the_nodes_next_deadline() -> None:
    world = _world(3.0)
    history = _history(world, 1200)
    assert history[:2] == [(T0, "Tainted"), (T0 + 200, "Failed")], "first deadline: 100Gi / (4Gi/s / 4) x 2"
    (retried, _), (deleted, kind) = history[2], history[-1]
    assert history[2][1] == "Tainted" and kind == "Deleted"
    assert len(history) == 4, f"one failure, then the longer deadline holds: {history}"
    assert 300 <= deleted - retried <= 400, "the snapshot started over and took 300 s, within the 400 s allowed"
    assert world.cluster.node("nvme-2") is None
    assert world.metrics.data_loss_events == []


def test_a_driver_on_time_needs_no_second_attempt() -> None:
    world = _world(1.0)
    assert _history(world, 400) == [(T0, "Tainted"), (T0 + 100, "Deleted")]

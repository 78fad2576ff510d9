"""The unpin throughput observed on earlier drains sets the next drain deadlines (``scaledown/throughput.py``).

The emulated cases: ``nvme-1`` runs a 5-cpu web pod (needed); ``nvme-2`` and ``nvme-3``
run nothing but hold bound Rok volumes pinned to them (the pods are gone, the claims
stay), with no guard pod unless a case says so: only the actuator's last look keeps a
node until its volumes are unpinned. ``--storage-unpin-throughput`` is the default
1Gi/s and ``--max-pod-eviction-time`` the default 2m; the driver is slower than the flag.
"""

from __future__ import annotations

import pytest

from autoscaler.actuation.types import ActuationKind
from autoscaler.scaledown.cost import drain_deadline
from autoscaler.scaledown.throughput import HISTORY, DrainObservation, UnpinThroughput
from emulator.world import World
from tests.emulator.worlds import Driven, Json, deployment, drive, make_world, nvme_group, nvme_node, rok_class
from tests.factories import options, pv_json, pvc_json

GiB = 2**30
FLOOR = 120.0  # --max-pod-eviction-time's default
SCAN = 10.0
T0 = 60.0  # --scale-down-unneeded-time=1m: the empty nodes are chosen then
NO_GUARD: Json = {"kind": "NoGuard"}


def _drain(gib: float, seconds: float, unpinned: bool = True) -> DrainObservation:
    return DrainObservation("n", int(gib * GiB), seconds, unpinned)


def _fold(*drains: DrainObservation) -> UnpinThroughput:
    throughput = UnpinThroughput()
    for drain in drains:
        throughput = throughput.observed(drain, FLOOR)
    return throughput


@pytest.mark.parametrize(("drains", "estimate_gib"), [
    pytest.param((), None, id="none-the-flag"),
    pytest.param((_drain(300, 600),), 0.5, id="one-slow-drain-sets-it"),
    pytest.param((_drain(300, 150), _drain(300, 600), _drain(900, 300)), 0.5, id="the-slowest-of-several"),
    pytest.param((_drain(100, 200, unpinned=False),), 0.5, id="a-failed-drain-counts-bytes-over-its-time"),
    pytest.param((_drain(10, FLOOR, unpinned=False),), 10 / FLOOR, id="a-failure-at-the-floor-counts"),
    pytest.param((_drain(1, 30),), None, id="a-drain-within-the-floor-says-nothing"),
    pytest.param((_drain(0, 500), _drain(5, 0, unpinned=False)), None, id="no-bytes-or-no-time-ignored"),
    pytest.param((_drain(300, 600), *[_drain(300, 150)] * HISTORY), 2.0, id="bounded-history-forgets"),
    pytest.param((_drain(300, 600), *[_drain(300, 150)] * (HISTORY - 1)), 0.5, id="within-history-remembers"),
])
def test_estimate_from_observations(drains: tuple[DrainObservation, ...], estimate_gib: float | None) -> None:
    throughput = _fold(*drains)
    assert len(throughput.observations) <= HISTORY
    if estimate_gib is None:
        assert throughput.estimate is None
        assert throughput.bytes_per_second(prior=GiB) == GiB, "the flag stays the prior"
    else:
        assert throughput.estimate == pytest.approx(estimate_gib * GiB)
        assert throughput.bytes_per_second(prior=GiB) == pytest.approx(estimate_gib * GiB)


@pytest.mark.parametrize(("gib", "rate_gib", "deadline"), [
    pytest.param(100, None, 800.0, id="flag-1Gi-per-s-with-its-prior-margin"),
    pytest.param(100, 0.5, 400.0, id="observed-half-the-flag"),
    pytest.param(100, 4.0, FLOOR, id="observed-fast-still-the-floor"),
    pytest.param(0, 0.01, FLOOR, id="no-bytes-the-floor"),
])
def test_drain_deadline_uses_the_observed_throughput(gib: int, rate_gib: float | None, deadline: float) -> None:
    rate = None if rate_gib is None else rate_gib * GiB
    assert drain_deadline(gib * GiB, options(), bytes_per_second=rate) == pytest.approx(deadline)


def _world(volumes: dict[str, str], *driver_faults: Json, unpin: float = 1.0) -> World:
    objects: list[Json] = [rok_class(), nvme_group(), nvme_node("nvme-1"), deployment("web", 1, cpu="5")]
    for node, size in volumes.items():
        objects += [nvme_node(node, free="900Gi", cpu="4"),
                    pvc_json(f"data-{node}", size, "rok", volume=f"pv-{node}"),
                    pv_json(f"pv-{node}", size, "rok", hosts=[node], claim=("default", f"data-{node}"))]
    world = make_world(*objects, driver_faults=driver_faults, unpin=unpin)
    world.advance(world.start)
    return world


#: A flag whose throughput, less ``cost.PRIOR_MARGIN`` (x4) before any drain is observed, is 1Gi/s.
PRIOR_1GI = "--storage-unpin-throughput=4Gi"


def _run(world: World, until: float, *flags: str) -> Driven:
    return drive(world, "--scale-down-unneeded-time=1m", *flags, until=until, scan=SCAN)


def _history(world: World, driven: Driven, node: str) -> list[tuple[float, str]]:
    return [(e.time - world.start, e.kind.value) for e in driven.actuation
            if e.node == node and e.kind is not ActuationKind.EVICTED]


@pytest.mark.parametrize("faults", [
    pytest.param((NO_GUARD,), id="last-look-still-pinned"),
    pytest.param((), id="guard-eviction-refused"),
])
def test_a_failed_drain_lowers_the_estimate_and_the_retry_gets_the_time_it_needs(faults: tuple[Json, ...]) -> None:
    # 100Gi at 3 s/GiB: 300 s. The flag (4Gi/s, a quarter of it before any drain is observed:
    # cost.PRIOR_MARGIN) gives 200 s: the first drain fails and says the throughput is below
    # 100Gi/200s; the retry gets twice the 200 s and the node goes.
    world = _world({"nvme-2": "100Gi"}, *faults, unpin=3.0)
    driven = _run(world, 1500, PRIOR_1GI)
    history = _history(world, driven, "nvme-2")
    assert history[:2] == [(T0, "Tainted"), (T0 + 200, "Failed")]
    assert [kind for _, kind in history] == ["Tainted", "Failed", "Tainted", "Deleted"], history
    assert world.cluster.node("nvme-2") is None
    assert world.metrics.data_loss_events == []
    estimate = driven.memory.unpin_throughput.estimate
    assert estimate is not None and estimate <= 100 * GiB / 200, "the failure set it, at most bytes / its deadline"


def test_a_stuck_drain_counts_and_the_next_deadline_doubles() -> None:
    # The driver never unpins: every drain fails, each one with (at least) twice the deadline of the last.
    world = _world({"nvme-2": "100Gi"}, NO_GUARD, {"kind": "StuckUnpin"})
    driven = _run(world, 1800, PRIOR_1GI)
    history = _history(world, driven, "nvme-2")
    tainted = [t for t, kind in history if kind == "Tainted"]
    failed = [t for t, kind in history if kind == "Failed"]
    first, second = [f - t for t, f in zip(tainted, failed, strict=False)][:2]
    assert first == 200.0 and second >= 2 * first
    assert world.metrics.data_loss_events == []


def test_drains_under_way_get_the_longer_deadline_the_first_slow_drain_shows() -> None:
    # Both empty nodes are drained together at T0 under the flag (1Gi/s with its margin): 200 s for nvme-2, 800 s for
    # nvme-3. At 3 s/GiB nvme-2 fails at T0+200 (100Gi in 200 s at most: 0.5Gi/s); nvme-3's
    # deadline becomes 1600 s, enough for its 1200 s, instead of failing at T0+800.
    world = _world({"nvme-2": "100Gi", "nvme-3": "400Gi"}, NO_GUARD, unpin=3.0)
    driven = _run(world, T0 + 1300, PRIOR_1GI)
    assert _history(world, driven, "nvme-2")[:2] == [(T0, "Tainted"), (T0 + 200, "Failed")]
    assert _history(world, driven, "nvme-3") == [(T0, "Tainted"), (T0 + 1200, "Deleted")]
    assert world.metrics.data_loss_events == []


def test_a_fast_drain_within_the_floor_leaves_the_flag() -> None:
    # 10Gi at 1 s/GiB: unpinned in 10 s, within --max-pod-eviction-time: not an observation.
    world = _world({"nvme-2": "10Gi"}, NO_GUARD)
    driven = _run(world, T0 + 60)
    assert _history(world, driven, "nvme-2")[-1][1] == "Deleted"
    assert driven.memory.unpin_throughput.estimate is None


def test_a_guarded_drain_is_timed_to_its_guards_eviction() -> None:
    # The guard's budget goes when the driver has unpinned the node's volumes (100Gi at
    # 2 s/GiB: 200 s, within the 1,600 s deadline at 512Mi/s and its prior margin); the guard's grace period and the
    # last look after it are not unpinning.
    world = _world({"nvme-2": "100Gi"}, unpin=2.0)
    driven = _run(world, T0 + 400, "--storage-unpin-throughput=512Mi")
    assert _history(world, driven, "nvme-2")[-1][1] == "Deleted"
    guard_gone = max(e.time - world.start for e in driven.actuation
                     if e.node == "nvme-2" and e.kind is ActuationKind.EVICTED and "guard" in e.message)
    deleted = _history(world, driven, "nvme-2")[-1][0]
    assert guard_gone < deleted
    [observed] = driven.memory.unpin_throughput.observations
    assert observed == pytest.approx(100 * GiB / (guard_gone - T0))

"""``--scale-down-order``: the cheaper removal first, a stable order, drain deadlines from bytes, an unpin budget.

Two nodes hold migratable volumes of different sizes; the one destination has room for
only one of them. Upstream's order (by name) moves whichever comes first; the
disruption-cost order moves the fewer bytes.
"""

from __future__ import annotations

import pytest

from autoscaler.scaledown.cost import MAX_DOUBLINGS, RESTART_SECONDS, drain_deadline
from autoscaler.scaledown.types import ScaleDownMemory
from kube.model import ClusterObjects
from tests.autoscaler.scaledown_helpers import Remembered, loop, reasons, scale_down
from tests.autoscaler.test_scaledown_storage import candidate, destination, storage_cluster, volume_pod
from tests.factories import NOW, node, options

GI = 2**30


def _two_candidates() -> ClusterObjects:
    """``a-big`` unpins 200Gi, ``b-small`` 60Gi; ``dest`` has 250Gi free: room for one of them."""
    return storage_cluster(
        candidate("a-big", free="200Gi"), *volume_pod("db-big", "a-big", "200Gi"),
        candidate("b-small"), *volume_pod("db-small", "b-small", "60Gi"),
        *destination("dest", "250Gi"))


@pytest.mark.parametrize(("flags", "removed", "kept"), [
    pytest.param((), "b-small", "a-big", id="disruption-cost-moves-fewer-bytes"),
    pytest.param(("--scale-down-order=upstream",), "a-big", "b-small", id="upstream-goes-by-name"),
    pytest.param(("--storage-aware=false",), None, None, id="upstream-default-when-not-storage-aware"),
])
def test_the_cheaper_node_goes_when_only_one_can(flags: tuple[str, ...], removed: str | None,
                                                 kept: str | None) -> None:
    decision = scale_down(_two_candidates(), *flags)
    if removed is None or kept is None:
        assert options(*flags).scale_down_order == "upstream"
        return
    assert removed in decision.unneeded
    assert reasons(decision)[kept] == "NoPlaceToMovePods"


def test_equal_costs_keep_one_order_from_loop_to_loop() -> None:
    objects = storage_cluster(candidate("w1"), *volume_pod("db-1", "w1", "60Gi"),
                              candidate("w2"), *volume_pod("db-2", "w2", "60Gi"), *destination("dest", "100Gi"))
    first = scale_down(objects)
    for _ in range(3):
        again = scale_down(objects)
        assert (again.unneeded, reasons(again)) == (first.unneeded, reasons(first))
    assert first.unneeded == ["w1"], "ties go by name"


def test_the_operator_annotation_raises_a_nodes_cost() -> None:
    objects = _two_candidates()
    objects.nodes = [node(n.name, storage_max="400Gi", storage_free="340Gi",
                          annotations={"autoscaler.storage.dev/disruption-cost": "100000"})
                     if n.name == "b-small" else n for n in objects.nodes]
    decision = scale_down(objects)
    assert "a-big" in decision.unneeded
    assert reasons(decision)["b-small"] == "NoPlaceToMovePods"


@pytest.mark.parametrize(("flags", "bytes_", "expected"), [
    pytest.param((), 0, 120.0, id="nothing-to-unpin-gets-max-pod-eviction-time"),
    pytest.param((), 10 * GI, 120.0, id="10Gi-at-1Gi-per-s-needs-less-than-the-flag"),
    # None observed yet: the flag's throughput with PRIOR_MARGIN (x4), twice over.
    pytest.param((), 200 * GI, 1600.0, id="200Gi-eight-times-over-before-any-drain-was-observed"),
    pytest.param(("--storage-unpin-throughput=100Mi",), 200 * GI, 16384.0, id="slow-driver"),
    pytest.param(("--max-pod-eviction-time=10m",), 60 * GI, 600.0, id="never-below-the-flag"),
])
def test_the_drain_deadline_follows_the_bytes_to_unpin(flags: tuple[str, ...], bytes_: int, expected: float) -> None:
    assert drain_deadline(bytes_, options(*flags)) == pytest.approx(expected)


@pytest.mark.parametrize(("bytes_", "grace", "expected"), [
    pytest.param(200 * GI, 30.0, 1630.0, id="the-pods-go-before-the-unpin-starts"),
    pytest.param(10 * GI, 30.0, 120.0, id="within-the-flag-anyway"),
    pytest.param(0, 600.0, 120.0, id="nothing-to-unpin-the-flag-alone"),
])
def test_the_pods_grace_comes_before_the_unpin(bytes_: int, grace: float, expected: float) -> None:
    assert drain_deadline(bytes_, options(), grace=grace) == pytest.approx(expected)


@pytest.mark.parametrize(("failures", "expected"), [
    pytest.param(0, 1600.0, id="first-attempt"),
    pytest.param(1, 3200.0, id="failed-once-twice-as-long"),
    pytest.param(2, 6400.0, id="failed-twice-four-times"),
    pytest.param(MAX_DOUBLINGS + 3, 1600.0 * 2**MAX_DOUBLINGS, id="doubling-stops"),
])
def test_each_failed_deletion_doubles_the_nodes_next_deadline(failures: int, expected: float) -> None:
    assert drain_deadline(200 * GI, options(), failures=failures) == pytest.approx(expected)
    assert drain_deadline(0, options(), failures=failures) == pytest.approx(120.0), "nothing to unpin: the flag"


def test_a_failed_node_is_planned_with_its_longer_deadline() -> None:
    memory = Remembered(ScaleDownMemory(drain_failures={"b-small": 2}))
    (chosen,) = loop(_two_candidates(), memory=memory, steady_state=True).scale_down.to_delete
    assert chosen.node == "b-small"
    assert chosen.drain_seconds == pytest.approx(30 + 1920.0), "30 s for db-small to go, then 60 s x 8, doubled twice"


def test_equal_costs_keep_their_order_through_the_loops_memory() -> None:
    """Loop after loop (the live loop's memory, reused passes included) the same node of two equal ones is chosen."""
    objects = storage_cluster(candidate("w2"), *volume_pod("db-2", "w2", "60Gi"),
                              candidate("w1"), *volume_pod("db-1", "w1", "60Gi"), *destination("dest", "100Gi"))
    memory = Remembered()
    seen = []
    for i in range(4):
        decision = loop(objects, "--scale-down-unneeded-time=0s", now=NOW + 10 * i, memory=memory).scale_down
        seen.append((tuple(decision.unneeded), reasons(decision).get("w2")))
    assert set(seen) == {(("w1",), "NoPlaceToMovePods")}, seen


def test_chosen_nodes_carry_their_bytes_and_deadline() -> None:
    decision = scale_down(_two_candidates())
    (chosen,) = decision.to_delete
    assert (chosen.node, chosen.unpin_bytes) == ("b-small", 60 * GI)
    assert chosen.drain_seconds == pytest.approx(30 + 480.0), "db-small's 30 s grace, then its volume 8 times over"


def _parallel() -> ClusterObjects:
    return storage_cluster(candidate("w1"), *volume_pod("db-1", "w1", "60Gi"),
                           candidate("w2"), *volume_pod("db-2", "w2", "100Gi"),
                           *destination("d1", "100Gi"), *destination("d2", "150Gi"))


@pytest.mark.parametrize(("budget", "removed"), [
    pytest.param(None, ["w1", "w2"], id="unlimited"),
    pytest.param("1Ti", ["w1", "w2"], id="both-fit-the-budget"),
    pytest.param("100Gi", ["w1"], id="second-waits-for-the-first"),
    pytest.param("10Gi", ["w1"], id="one-alone-may-exceed-it"),
])
def test_the_unpin_budget_holds_new_drains(budget: str | None, removed: list[str]) -> None:
    flags = ["--max-drain-parallelism=2"]
    if budget is not None:
        flags.append(f"--scale-down-max-unpin-bytes-in-flight={budget}")
    decision = scale_down(_parallel(), *flags)
    assert decision.removed == removed, decision.waiting
    if len(removed) == 1:
        assert "--scale-down-max-unpin-bytes-in-flight" in decision.waiting


def test_restarting_pods_weigh_when_bytes_are_equal() -> None:
    assert RESTART_SECONDS > 0
    objects = storage_cluster(candidate("a"), *volume_pod("db-a", "a", "60Gi"), *volume_pod("x-a", "a", "1Gi"),
                              candidate("b"), *volume_pod("db-b", "b", "61Gi"), *destination("dest", "100Gi"))
    assert scale_down(objects).unneeded == ["b"], "b: one pod to restart, a: two (1Gi more to unpin is ~1 s)"


def _one_of(first: str, first_size: str, second: str, second_size: str, room: str = "250Gi") -> ClusterObjects:
    """Two candidates whose volumes ``dest`` (``room`` free) can take only one of."""
    return storage_cluster(candidate(first, free="200Gi"), *volume_pod(f"db-{first}", first, first_size),
                           candidate(second, free="200Gi"), *volume_pod(f"db-{second}", second, second_size),
                           *destination("dest", room))


@pytest.mark.parametrize("waiting", [
    pytest.param("", id="no-memory"),
    pytest.param("b", id="the-dearer-was-unneeded-last-loop"),
    pytest.param("a", id="the-cheaper-was-unneeded-last-loop"),
])
def test_the_cost_order_reads_no_memory(waiting: str) -> None:
    """61Gi against 60Gi, room for one: the cheaper goes, whichever node waited (its place changes with its cost)."""
    since = {waiting: NOW - 60} if waiting else {}
    memory = Remembered(ScaleDownMemory(unneeded_since=since))
    decision = loop(_one_of("a", "60Gi", "b", "61Gi", "100Gi"), memory=memory, steady_state=True).scale_down
    assert decision.unneeded == ["a"]

"""``copies_at``: ``feasible`` for one node read as scalars, and how many copies of a pod the node takes.

The estimator trusts it in place of ``find_node`` for the node a pod group last landed on,
and places that many pods at once. Differential: over every case of the predicate and pool
tables, on live and appended nodes, its verdict is ``find_node``'s, and placing the copies
one by one with ``place`` takes exactly that many. Then the static-verdict cache it reads
(per constraints and node serial) across reverts that reuse a node's index.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec.structs
import pytest

from kube.model import ClusterObjects, Node, Pod
from simulator.predicates import PredicateChecker
from tests.factories import World, cluster, node, pod, pod_affinity, world
from tests.simulator import test_pools, test_predicates

#: Enough copies to run any case's node out of pod slots (110) or resources.
MOST = 120


def _copy(subject: Pod, k: int) -> Pod:
    return msgspec.structs.replace(subject, name=f"{subject.name}-copy{k}")


def assert_copies_agree(w: World, subject: Pod) -> None:
    """On every node: ``copies_at`` says what ``find_node(lo=idx)`` says, and counts exactly."""
    snap, checker = w.snapshot, w.checker
    plan = w.plan(subject)
    for idx in range(snap.count):
        room = checker.copies_at(subject, plan, idx)
        if room is None:
            assert checker.needs_node_checks(subject, plan)
            continue
        name = snap.nodes[idx].name
        snap.fork()
        try:
            for k in range(min(room, MOST) + 1):
                copy = _copy(subject, k)
                left = checker.copies_at(copy, plan, idx)
                assert left == room - k, f"{name}: {left} copies after {k} placed, {room - k} expected"
                assert (checker.find_node(copy, plan, lo=idx) == idx) == (left > 0), name
                if not left:
                    break
                checker.place(copy, plan, idx)
        finally:
            snap.revert()


def _cases(params: Sequence[object]) -> list[object]:
    return [pytest.param(*p.values[:2], id=p.id) for p in params]  # type: ignore[attr-defined]


@pytest.mark.parametrize("appended", [False, True], ids=["base-nodes", "appended-nodes"])
@pytest.mark.parametrize(("objects", "subject"), _cases(test_predicates.CASES) + _cases(test_pools.CASES))
def test_copies_at_agrees_with_find_node(objects: ClusterObjects, subject: Pod, appended: bool) -> None:
    assert_copies_agree(world(objects, appended=appended), subject)


@pytest.mark.parametrize(("objects", "subject", "want"), [
    pytest.param(cluster(node("n", cpu="1"), pod("big", cpu="2", node="n")), pod("p", cpu=None, memory="3Gi"),
                 2, id="zero-request-on-an-overcommitted-node-is-not-compared"),
    pytest.param(cluster(node("n", cpu="1"), pod("big", cpu="2", node="n")), pod("p", cpu="1m"),
                 0, id="overcommitted-node-takes-no-cpu"),
    pytest.param(cluster(node("n", pods=3)), pod("p", cpu=None, memory=None), 3, id="pod-slots-bound-an-empty-request"),
    pytest.param(cluster(node("n")), pod("p", node="other"), 0, id="bound-by-name-elsewhere"),
    pytest.param(cluster(node("n")), pod("p", host_ports=[80]), None, id="host-ports-left-to-find-node"),
    pytest.param(cluster(node("n")), pod("p", labels={"a": "b"}, affinity=pod_affinity({"a": "b"}, anti=True)),
                 None, id="anti-affinity-left-to-find-node"),
])
def test_copies_at(objects: ClusterObjects, subject: Pod, want: int | None) -> None:
    w = world(objects)
    assert w.checker.copies_at(subject, w.plan(subject), 0) == want
    assert_copies_agree(w, subject)


def test_disabled_node_takes_no_copy() -> None:
    w = world(cluster(node("n")))
    w.snapshot.disable_node(0)
    subject = pod("p")
    assert w.checker.copies_at(subject, w.plan(subject), 0) == 0


# --- the static verdict cache, across reverts that reuse an index ---------------------------------

SSD = node("ssd", labels={"disk": "ssd"})
HDD = node("hdd", labels={"disk": "hdd"})
WANTS_SSD = pod("p", node_selector={"disk": "ssd"})


def _first_read(checker: PredicateChecker, subject: Pod, idx: int, how: str) -> bool:
    plan = checker.volumes.plan(subject)
    if how == "vector":
        return checker.find_node(subject, plan, lo=idx) == idx
    room = checker.copies_at(subject, plan, idx)
    assert room is not None
    return room > 0


@pytest.mark.parametrize("how", ["vector", "scalar"], ids=["cached-by-feasible", "cached-by-copies-at"])
@pytest.mark.parametrize(("first", "second"), [
    pytest.param(SSD, HDD, id="matching-node-replaced-by-a-mismatch"),
    pytest.param(HDD, SSD, id="mismatch-replaced-by-a-matching-node"),
    pytest.param(SSD, SSD, id="same-labels-again"),
])
def test_static_verdict_follows_the_node_at_a_reused_index(first: Node, second: Node, how: str) -> None:
    w = world(cluster(node("live", labels={"disk": "ssd"})))
    snap, checker = w.snapshot, w.checker
    verdicts = []
    for template in (first, second):
        snap.fork()
        idx = snap.add_node(template)
        assert idx == 1, "the reverted index is reused"
        verdicts.append(_first_read(checker, WANTS_SSD, idx, how))
        room = checker.copies_at(WANTS_SSD, w.plan(WANTS_SSD), idx)
        assert room is not None and (room > 0) == verdicts[-1]
        snap.revert()
    assert verdicts == [n is SSD for n in (first, second)]


def test_static_verdict_of_nodes_added_after_the_cache_grew() -> None:
    """More nodes than the cached arrays hold: the snapshot grew after the first read."""
    w = world(cluster(node("live")))
    snap, checker = w.snapshot, w.checker
    plan = w.plan(WANTS_SSD)
    snap.fork()
    first = snap.add_node(SSD)
    assert checker.copies_at(WANTS_SSD, plan, first)
    added = [snap.add_node(node(f"t{i}", labels={"disk": "ssd" if i % 2 else "hdd"})) for i in range(80)]
    assert [bool(checker.copies_at(WANTS_SSD, plan, i)) for i in added] == [bool(i % 2) for i in range(80)]
    snap.revert()

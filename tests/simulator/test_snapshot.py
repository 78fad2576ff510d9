"""The forkable snapshot: every mutation inside a fork is undone by revert, kept by commit."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kube.model import Pod
from simulator.snapshot import ClusterSnapshot
from tests.factories import (
    GiB,
    cluster,
    node,
    pod,
    pod_affinity,
    pvc,
    storage_class,
    world,
)

DEVICE = "example.com/dev"
POOL = "capacity.topolvm.io/nvme"


def state(snap: ClusterSnapshot) -> dict[str, Any]:
    """Everything a simulation can observe, as plain values."""
    n = snap.count
    return {
        "count": n,
        "nodes": [x.name for x in snap.nodes],
        "roles": list(snap.roles),
        "index": dict(snap.index),
        "pods_on": [[p.ref for p in pods] for pods in snap.pods_on],
        "cpu": snap.view(snap.free_cpu).tolist(),
        "memory": snap.view(snap.free_memory).tolist(),
        "ephemeral": snap.view(snap.free_ephemeral).tolist(),
        "pods": snap.view(snap.free_pods).tolist(),
        "local": snap.view(snap.free_local).tolist(),
        "pool": snap.pool_free(POOL).tolist(),
        "enabled": snap.enabled_view().tolist(),
        "device": snap.extended_free(DEVICE).tolist(),
        "ports": {i: [p.ref for p in ps] for i, ps in snap.pods_with_ports.items() if ps},
        "anti": [(i, p.ref) for i, p in snap.anti_affinity_pods],
        "local_used": [(i, p.ref, snap.local_bytes_used(i, p)) for i in range(n) for p in snap.pods_on[i]],
    }


def base() -> ClusterSnapshot:
    snap = ClusterSnapshot([node("n1", storage_free="100Gi", annotations={POOL: str(50 * GiB)}),
                            node("n2", extended={DEVICE: "4"})])
    orphans = snap.load_pods([pod("a", node="n1"), pod("b", node="n2", extended={DEVICE: "1"}, host_ports=[80])])
    assert orphans == []
    return snap


def test_revert_undoes_add_node_add_pod_and_disable() -> None:
    snap = base()
    before = state(snap)
    snap.fork()
    idx = snap.add_node(node("t1", cpu="8", annotations={POOL: "garbage"}, warns=True),
                        [pod("ds", cpu="100m", node="t1")])
    snap.add_pod(pod("p", cpu="2", host_ports=[80]), 0, local_bytes=10 * GiB, pools=[(POOL, 20 * GiB)])
    snap.add_pod(pod("q", extended={DEVICE: "2"}), 1)
    snap.disable_node(1)
    assert snap.count == 3 and snap.roles[idx] == "template"
    assert snap.free_cpu[idx] == 7900 and snap.free_local[0] == 90 * GiB
    assert snap.pool_free(POOL).tolist() == [30 * GiB, -1, 0]  # n2 publishes nothing, t1 is malformed
    assert snap.extended_free(DEVICE)[1] == 1
    assert not snap.enabled[1]
    snap.revert()
    assert state(snap) == before


def test_nested_forks_revert_innermost_first() -> None:
    snap = base()
    outer = state(snap)
    snap.fork()
    snap.add_node(node("t1"))
    middle = state(snap)
    snap.fork()
    snap.add_pod(pod("p"), 2)
    snap.revert()
    assert state(snap) == middle
    snap.revert()
    assert state(snap) == outer


def test_commit_merges_into_the_enclosing_fork() -> None:
    snap = base()
    before = state(snap)
    snap.fork()
    snap.fork()
    snap.add_pod(pod("p", cpu="2"), 0)
    snap.commit()
    assert snap.free_cpu[0] == 1000  # kept after the inner commit
    snap.revert()
    assert state(snap) == before


def test_commit_of_the_outermost_fork_keeps_the_changes() -> None:
    snap = base()
    snap.fork()
    snap.add_pod(pod("p", cpu="2"), 0)
    snap.commit()
    assert snap.free_cpu[0] == 1000
    assert [p.name for p in snap.node_pods(0)] == ["a", "p"]


def test_disable_twice_is_undone_once() -> None:
    snap = base()
    snap.fork()
    snap.disable_node(0)
    snap.fork()
    snap.disable_node(0)  # already disabled: nothing to undo in the inner fork
    snap.revert()
    assert not snap.enabled[0]
    snap.revert()
    assert snap.enabled[0]


def test_disabled_node_pods_are_not_iterated() -> None:
    snap = base()
    snap.disable_node(0)
    assert [(i, p.name) for i, p in snap.iter_pods()] == [(1, "b")]


def test_load_pods_places_in_bulk_and_returns_orphans() -> None:
    snap = ClusterSnapshot([node("n1", cpu="4", memory="8Gi"), node("n2")])
    orphans = snap.load_pods([
        pod("a", cpu="1", memory="1Gi", node="n1"),
        pod("b", cpu="500m", memory="2Gi", node="n1", host_ports=[8080]),
        pod("c", node="n2", affinity=pod_affinity({"app": "x"}, anti=True)),
        pod("lost", node="gone"),
    ])
    assert [p.name for p in orphans] == ["lost"]
    assert snap.free_cpu[0] == 2500 and snap.free_memory[0] == 5 * GiB and snap.free_pods[0] == 108
    assert [p.name for p in snap.node_pods(0)] == ["a", "b"]
    assert [p.name for p in snap.pods_with_ports[0]] == ["b"]
    assert [(i, p.name) for i, p in snap.anti_affinity_pods] == [(1, "c")]
    assert snap.base_count == 2


def test_load_pods_counts_extended_resources_once() -> None:
    snap = ClusterSnapshot([node("n1", extended={DEVICE: "4"})])
    snap.load_pods([pod("a", node="n1", extended={DEVICE: "1"}), pod("b", node="n1", extended={DEVICE: "2"})])
    assert snap.extended_free(DEVICE).tolist() == [1]


def test_growing_past_initial_capacity_is_reverted() -> None:
    snap = ClusterSnapshot([node("n1")], capacity=1)
    before = state(snap)
    snap.fork()
    for i in range(40):
        snap.add_node(node(f"t{i}", cpu="2"), [pod(f"p{i}", node=f"t{i}")])
    assert snap.count == 41 and snap.view(snap.free_cpu).tolist() == [4000] + [1000] * 40
    snap.revert()
    assert state(snap) == before


def test_place_consumes_local_storage_and_revert_restores_it() -> None:
    w = world(cluster(storage_class(), pvc("a", "30Gi"), pvc("b", "50Gi"), node("s1", storage_free="100Gi")))
    snap, checker = w.snapshot, w.checker
    subject = pod("p", claims=["a", "b"])
    snap.fork()
    checker.place(subject, w.plan(subject), 0)
    assert snap.free_local[0] == 20 * GiB
    assert snap.local_bytes_used(0, subject) == 80 * GiB
    snap.revert()
    assert snap.free_local[0] == 100 * GiB
    assert snap.local_bytes_used(0, subject) == 0


def test_pool_arrays_are_built_on_first_use_and_follow_new_nodes() -> None:
    snap = base()
    assert "capacity.topolvm.io/hdd" not in snap.pools
    snap.fork()
    snap.add_node(node("t1", annotations={"capacity.topolvm.io/hdd": str(GiB)}))
    assert snap.pool_free("capacity.topolvm.io/hdd").tolist() == [-1, -1, GiB]
    for i in range(40):  # growing the arrays keeps the pools
        snap.add_node(node(f"g{i}", annotations={POOL: str(i)}))
    assert snap.pool_free(POOL).tolist()[-3:] == [37, 38, 39]
    snap.revert()
    assert snap.pool_free("capacity.topolvm.io/hdd").tolist() == [-1, -1]


def test_place_consumes_a_topolvm_pool_and_revert_restores_it() -> None:
    w = world(cluster(storage_class("lvm", "topolvm.io", parameters={"topolvm.io/device-class": "nvme"}),
                      storage_class(), pvc("a", "30Gi", "lvm"), pvc("b", "50Gi", "lvm"), pvc("r", "5Gi"),
                      node("s1", storage_free="100Gi", annotations={POOL: str(90 * GiB)})))
    snap, checker = w.snapshot, w.checker
    subject = pod("p", claims=["a", "b", "r"])
    snap.fork()
    checker.place(subject, w.plan(subject), 0)
    assert (snap.free_local[0], snap.pool_free(POOL)[0]) == (95 * GiB, 10 * GiB)
    snap.revert()
    assert (snap.free_local[0], snap.pool_free(POOL)[0]) == (100 * GiB, 90 * GiB)


# --- add_copies: equivalent pods in one step, as add_pod one by one ------------------------------


def _copies(count: int, prefix: str = "c", **kw: Any) -> list[Pod]:
    return [pod(f"{prefix}{i}", **kw) for i in range(count)]


@pytest.mark.parametrize(("pods", "local", "pools"), [
    pytest.param(_copies(3, cpu="500m", memory="1Gi"), 0, (), id="cpu-and-memory"),
    pytest.param(_copies(2, ephemeral="1Gi", extended={DEVICE: "1"}), 0, (), id="ephemeral-and-extended"),
    pytest.param(_copies(4, cpu="100m"), 10 * GiB, ((POOL, 5 * GiB),), id="local-bytes-and-a-pool"),
    pytest.param(_copies(2, host_ports=[8080], affinity=pod_affinity({"app": "x"}, anti=True)), 0, (),
                 id="host-ports-and-anti-affinity-are-indexed"),
    pytest.param(_copies(1), 0, (), id="one-copy"),
    pytest.param([], 0, (), id="no-copies-change-nothing"),
])
def test_add_copies_equals_add_pod_one_by_one_and_reverts(pods: list[Pod], local: int,
                                                           pools: tuple[tuple[str, int], ...]) -> None:
    one_by_one, together = base(), base()
    before = state(together)
    for subject in pods:
        one_by_one.add_pod(subject, 0, local_bytes=local, pools=pools)
    together.fork()
    together.add_copies(pods, 0, local, pools)
    assert state(together) == state(one_by_one)
    together.revert()
    assert state(together) == before


def test_add_copies_is_undone_with_the_pods_placed_after_it() -> None:
    snap = base()
    before = state(snap)
    snap.fork()
    snap.add_pod(pod("first"), 0)
    snap.add_copies(_copies(3, cpu="100m"), 0, 1 * GiB)
    snap.add_pod(pod("last"), 0)
    snap.fork()
    snap.add_copies(_copies(2, cpu="200m"), 1)
    snap.revert()
    assert [p.name for p in snap.pods_on[0]] == ["a", "first", "c0", "c1", "c2", "last"]
    assert snap.free_cpu[1] == 4000 - 1000
    snap.revert()
    assert state(snap) == before


# --- property: any sequence of operations inside a fork is undone by revert ----------------------

_node_op = st.tuples(st.just("node"), st.integers(1, 16), st.integers(1, 64), st.integers(1, 8),
                     st.one_of(st.none(), st.integers(0, 500)), st.integers(0, 3))
_pod_op = st.tuples(st.just("pod"), st.integers(0, 1000), st.integers(0, 4000), st.integers(0, 4),
                    st.integers(0, 200), st.integers(0, 2), st.booleans(), st.booleans())
_copies_op = st.tuples(st.just("copies"), st.integers(0, 1000), st.integers(0, 4), st.integers(0, 500),
                       st.integers(0, 60))
_other_op = st.tuples(st.sampled_from(["disable", "fork", "commit", "revert"]), st.integers(0, 1000))
OPS = st.lists(st.one_of(_node_op, _pod_op, _copies_op, _other_op), max_size=60)


@settings(max_examples=80, deadline=None, database=None)
@given(OPS)
def test_revert_restores_every_array_exactly(ops: list[tuple[Any, ...]]) -> None:
    snap = base()
    before = state(snap)
    snap.fork()
    depth = 0
    for serial, op in enumerate(ops):
        kind = op[0]
        if kind == "node":
            _, cpu, mem, pods, free, dev = op
            snap.add_node(node(f"t{serial}", str(cpu), f"{mem}Gi", pods,
                               storage_free=None if free is None else f"{free}Gi",
                               extended={DEVICE: str(dev)} if dev else None,
                               annotations={POOL: str(free * GiB)} if free is not None and free % 2 else None))
        elif kind == "pod":
            _, where, cpu_m, mem, local, dev, ports, anti = op
            subject = pod(f"p{serial}", f"{cpu_m}m", f"{mem}Gi", extended={DEVICE: str(dev)} if dev else None,
                          host_ports=[80] if ports else (),
                          affinity=pod_affinity({"app": "x"}, anti=True) if anti else None)
            snap.add_pod(subject, where % snap.count, local_bytes=local * GiB,
                         pools=[(POOL, local * GiB)] if local % 3 else ())
        elif kind == "copies":
            _, where, count, cpu_m, local = op
            snap.add_copies(_copies(count, f"s{serial}-", cpu=f"{cpu_m}m", host_ports=[80] if count % 2 else ()),
                            where % snap.count, local * GiB, [(POOL, local * GiB)] if local % 3 else ())
        elif kind == "disable":
            snap.disable_node(op[1] % snap.count)
        elif kind == "fork":
            snap.fork()
            depth += 1
        elif depth:
            (snap.commit if kind == "commit" else snap.revert)()
            depth -= 1
    for _ in range(depth):
        snap.revert()
    snap.revert()
    assert state(snap) == before

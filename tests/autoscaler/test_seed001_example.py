"""Seed 001's worked example (Figures 3.1 and 3.2), in both scale-down modes.

Four nodes of 4 CPU / 8G. Node 1 runs A (3000m/4G); node 2 runs B (2000m/1G) and
C (200m/1G); node 3 runs D (1500m/4G) and E (500m/2.5G); node 4 runs F (500m/2G),
which requires the label ``color=green`` that only node 4 has. Memory is in decimal
gigabytes so the figure's arithmetic holds exactly (node 3: 6.5G of 8G).

Per-node mode (upstream): at threshold 0.5 only node 4 is underutilized, and F has
nowhere to go; at 0.8 nodes 1 and 2 go, first-fit-decreasing placing B on node 3
and A and C on node 4 (Figure 3.2). Cluster-wide mode (seed chapter 4): at 0.5/0.5
every candidate check fails (7700m over the 12000m left is 0.64); at 0.8/0.8 every
node but node 4 may go, one per loop, the most expensive first.
"""

from __future__ import annotations

import pytest

from autoscaler.scaledown.types import ScaleDownPlan
from kube.model import ClusterObjects, NodeGroupSpec
from tests.autoscaler.scaledown_helpers import details, group, reasons, scale_down, scaled_cluster
from tests.factories import expr, node, node_affinity, plan, pod

N1, N2, N3, N4 = "node-1", "node-2", "node-3", "node-4"
GREEN = {"color": "green"}
CLUSTER_WIDE = "--scale-down-mode=cluster-wide"


def figure_3_1(*groups: NodeGroupSpec) -> ClusterObjects:
    """Cluster State 1; one group of all four nodes unless ``groups`` are given."""
    return scaled_cluster(
        node(N1, "4", "8G"),
        node(N2, "4", "8G"),
        node(N3, "4", "8G"),
        node(N4, "4", "8G", labels=GREEN),
        pod("a", "3000m", "4G", N1),
        pod("b", "2000m", "1G", N2),
        pod("c", "200m", "1G", N2),
        pod("d", "1500m", "4G", N3),
        pod("e", "500m", "2.5G", N3),
        pod("f", "500m", "2G", N4, affinity=node_affinity([expr("color", "In", "green")])),
        *(groups or (group("ng", N1, N2, N3, N4),)),
    )


def _threshold(value: float) -> str:
    return f"--scale-down-utilization-threshold={value}"


def _cluster_thresholds(value: float) -> tuple[str, str]:
    return f"--scale-down-cluster-cpu-threshold={value}", f"--scale-down-cluster-memory-threshold={value}"


def test_figure_utilization() -> None:
    """The figure's per-node numbers, as ``plan`` reports them."""
    nodes = {r.name: r.utilization for r in plan(figure_3_1()).nodes}
    assert {name: (round(u.cpu, 4), round(u.memory, 4)) for name, u in nodes.items()} == {
        N1: (0.75, 0.5),
        N2: (0.55, 0.25),
        N3: (0.5, 0.8125),
        N4: (0.125, 0.25),
    }


@pytest.mark.parametrize(
    ("flags", "unneeded", "unremovable"),
    [
        pytest.param(
            (_threshold(0.5),), [],
            {N1: "NotUnderutilized", N2: "NotUnderutilized", N3: "NotUnderutilized", N4: "NoPlaceToMovePods"},
            id="threshold-0.5-only-node-4-qualifies-and-f-cannot-move",
        ),
        pytest.param(
            (_threshold(0.8),), [N1, N2],
            {N3: "NotUnderutilized", N4: "NoPlaceToMovePods"},
            id="threshold-0.8-nodes-1-and-2-unneeded",
        ),
        pytest.param(
            (CLUSTER_WIDE, *_cluster_thresholds(0.5)), [],
            {N1: "NotUnderutilized", N2: "NotUnderutilized", N3: "NotUnderutilized", N4: "NotUnderutilized"},
            id="cluster-wide-0.5-every-candidate-check-fails",
        ),
        pytest.param(
            (CLUSTER_WIDE, *_cluster_thresholds(0.8)), [N1, N2, N3],
            {N4: "NoPlaceToMovePods"},
            id="cluster-wide-0.8-all-but-node-4",
        ),
    ],
)
def test_figure_3_1(flags: tuple[str, ...], unneeded: list[str], unremovable: dict[str, str]) -> None:
    decision = scale_down(figure_3_1(), *flags)
    assert decision.unneeded == unneeded
    assert reasons(decision) == unremovable


def test_per_node_details() -> None:
    why = details(scale_down(figure_3_1(), _threshold(0.5)))
    assert why == {
        N1: "cpu utilization 0.75 > 0.5",
        N2: "cpu utilization 0.55 > 0.5",
        N3: "memory utilization 0.81 > 0.5",
        N4: "no place to move pod default/f",
    }


def test_cluster_wide_candidate_check_detail() -> None:
    why = details(scale_down(figure_3_1(), CLUSTER_WIDE, *_cluster_thresholds(0.5)))
    # Requests 7700m / 14.5G over what is left without one node: 12000m / 24G.
    assert all("cpu 0.64, memory 0.60" in why[name] for name in (N1, N2, N3, N4))


def _destinations(decision: ScaleDownPlan) -> dict[str, dict[str, str]]:
    return {r.node: dict(r.destinations) for r in decision.to_delete}


def test_figure_3_2_destinations() -> None:
    """First-fit decreasing moves B to node 3 and A, C to node 4 (Cluster State 2)."""
    decision = scale_down(figure_3_1(), _threshold(0.8), "--max-drain-parallelism=2")
    assert decision.removed == [N1, N2]
    assert _destinations(decision) == {
        N1: {"default/a": N4},
        N2: {"default/b": N3, "default/c": N4},
    }


def test_per_node_default_drains_one_node_per_loop() -> None:
    decision = scale_down(figure_3_1(), _threshold(0.8))
    assert decision.unneeded == [N1, N2]
    assert decision.removed == [N1]


@pytest.mark.parametrize("drain_parallelism", ["1", "5"])
def test_cluster_wide_removes_exactly_one(drain_parallelism: str) -> None:
    decision = scale_down(figure_3_1(), CLUSTER_WIDE, *_cluster_thresholds(0.8),
                          f"--max-drain-parallelism={drain_parallelism}")
    assert decision.result == "ScaledDown"
    assert len(decision.removed) == 1
    assert set(decision.removed) <= set(decision.unneeded)


def _priced(expensive: str) -> ClusterObjects:
    return figure_3_1(*(group(f"g-{name}", name, price=2.0 if name == expensive else 1.0)
                        for name in (N1, N2, N3, N4)))


@pytest.mark.parametrize(
    ("expensive", "removed"),
    [
        pytest.param(N1, N1, id="node-1-most-expensive"),
        pytest.param(N2, N2, id="node-2-most-expensive"),
        pytest.param(N3, N3, id="node-3-most-expensive"),
        # Node 4 cannot go (F needs green); among equal prices the fewest pods to move wins.
        pytest.param(N4, N1, id="most-expensive-not-removable"),
    ],
)
def test_cluster_wide_removes_the_most_expensive_node(expensive: str, removed: str) -> None:
    decision = scale_down(_priced(expensive), CLUSTER_WIDE, *_cluster_thresholds(0.8))
    assert decision.unneeded == [N1, N2, N3]
    assert decision.removed == [removed]


def test_cluster_wide_node_judged_alone() -> None:
    """Each node is packed away independently: node 2's C may use node 1, which node 1 alone would free."""
    decision = scale_down(figure_3_1(), CLUSTER_WIDE, *_cluster_thresholds(0.8), "--max-drain-parallelism=5")
    (chosen,) = decision.to_delete
    assert chosen.node == N1
    assert chosen.destinations == {"default/a": N4}


def test_cluster_wide_daemonset_requests_leave_with_their_node() -> None:
    """Seed 4.5: the resulting state's requests lack the removed node's DaemonSet pods.

    n1 runs only a 2-core DaemonSet pod; n2 and n3 run 2 cores each. Without n1 the
    cluster requests 4 of 8 cores (0.5 < 0.6), in the candidate check and after packing.
    """
    objects = scaled_cluster(
        node("n1"), node("n2"), node("n3"),
        pod("ds-n1", "2", "1Gi", "n1", owner=("DaemonSet", "ds")),
        pod("web-2", "2", "1Gi", "n2"), pod("web-3", "2", "1Gi", "n3"),
        group("ng", "n1", "n2", "n3"),
    )
    decision = scale_down(objects, CLUSTER_WIDE, "--scale-down-cluster-cpu-threshold=0.6",
                          "--scale-down-cluster-memory-threshold=0.9")
    assert decision.unneeded == ["n1"]
    assert reasons(decision) == {"n2": "NotUnderutilized", "n3": "NotUnderutilized"}

"""Scale-down through ``run_once`` at steady state (what ``autoscaler plan`` answers).

One named case per unremovable reason of the plan contract that the planner emits,
the cases that make the same nodes removable, and the deletion budgets
(``--max-scale-down-parallelism``, ``--max-drain-parallelism``). Storage cases are in
``test_scaledown_storage.py``; unneeded-time and cooldown tracking in
``test_scaledown_memory.py``.

Most cases are one candidate ``w1`` next to ``big``, a 16-core node kept busy enough
(9 cores) to be needed itself, with room for whatever ``w1`` runs.
"""

from __future__ import annotations

import pytest

from kube.model import ClusterObjects, Node, NodeGroupSpec, Pod, PodDisruptionBudget
from kube.names import CA_TO_BE_DELETED_TAINT, SAFE_TO_EVICT, SCALE_DOWN_DISABLED
from tests.autoscaler.scaledown_helpers import (
    details,
    group,
    pdb,
    pod_with,
    reasons,
    scale_down,
    scaled_cluster,
)
from tests.factories import NOW, ClusterObject, node, pod, pv, pvc, storage_class, taint

BIG: tuple[ClusterObject, ...] = (node("big", "16", "64Gi"), pod("busy", "9", "1Gi", "big"))
WEB = {"app": "web"}


def with_w1(w1: Node, *objects: ClusterObject, groups: tuple[NodeGroupSpec, ...] | None = None,
            pdbs: tuple[PodDisruptionBudget, ...] = (), owners: bool = True) -> ClusterObjects:
    """``big`` and ``w1`` (one group, min 0 unless ``groups``) with ``objects``."""
    return scaled_cluster(*BIG, w1, *objects, *(groups if groups is not None else (group("ng", "big", "w1"),)),
                          pdbs=pdbs, owners=owners)


def on_w1(*pods: Pod, pdbs: tuple[PodDisruptionBudget, ...] = (), owners: bool = True) -> ClusterObjects:
    return with_w1(node("w1"), *pods, pdbs=pdbs, owners=owners)


def _local_pv_on_w1() -> tuple[ClusterObject, ...]:
    """A ``local`` PV pinned to w1 and bound to a claim that no pod uses right now."""
    return (
        storage_class("local-disk", "kubernetes.io/no-provisioner"),
        pvc("logs", "50Gi", "local-disk", volume="pv-logs"),
        pv("pv-logs", "50Gi", "local-disk", hosts=["w1"], claim=("default", "logs"), driver="local"),
    )


UNREADY_W1 = node("w1", ready=False)

REASON_CASES = [
    pytest.param(with_w1(node("w1", annotations={SCALE_DOWN_DISABLED: "true"})), (),
                 "ScaleDownDisabledAnnotation", "", id="scale-down-disabled-annotation"),
    pytest.param(with_w1(UNREADY_W1), ("--scale-down-unready-enabled=false",),
                 "ScaleDownUnreadyDisabled", "", id="unready-with-unready-scale-down-disabled"),
    pytest.param(with_w1(node("w1"), groups=(group("ng", "big"),)), (),
                 "NotAutoscaled", "no node group", id="node-in-no-group"),
    pytest.param(with_w1(UNREADY_W1), ("--scale-down-unready-time=-1s",),
                 "NotUnreadyLongEnough", "never", id="negative-unready-time-keeps-unready-nodes"),
    pytest.param(with_w1(node("w1"), groups=(group("ng", "big", "w1", min_size=2),)), (),
                 "NodeGroupMinSizeReached", "min size 2", id="group-at-min-size"),
    pytest.param(with_w1(node("w1")), ("--cores-total=17:1000",),
                 "MinimalResourceLimitExceeded", "cores", id="cluster-min-cores"),
    pytest.param(with_w1(node("w1")), ("--memory-total=65:1000",),
                 "MinimalResourceLimitExceeded", "memory", id="cluster-min-memory"),
    pytest.param(with_w1(node("w1", taints=[taint(CA_TO_BE_DELETED_TAINT, str(int(NOW)))])), (),
                 "CurrentlyBeingDeleted", "", id="to-be-deleted-taint"),
    pytest.param(on_w1(pod("web", "3", "1Gi", "w1")), (),
                 "NotUnderutilized", "cpu utilization 0.75 > 0.5", id="cpu-busy"),
    pytest.param(on_w1(pod("web", "1", "6Gi", "w1")), (),
                 "NotUnderutilized", "memory utilization 0.75 > 0.5", id="memory-busy"),
    pytest.param(with_w1(node("w1", storage_max="400Gi", storage_free="100Gi")), (),
                 "NotUnderutilized", "storage utilization 0.75 > 0.5", id="storage-busy"),
    pytest.param(with_w1(node("w1", labels={"pool": "a"}), pod("web", "1", "1Gi", "w1", node_selector={"pool": "a"})),
                 (), "NoPlaceToMovePods", "default/web", id="pod-fits-no-other-node"),
    pytest.param(on_w1(pod("naked", "1", "1Gi", "w1", owner=None)), (),
                 "BlockedByPod", "pod default/naked: NotReplicated", id="blocked-not-replicated"),
    pytest.param(on_w1(pod("web", "1", "1Gi", "w1"), owners=False), (),
                 "BlockedByPod", "pod default/web: ControllerNotFound", id="blocked-controller-not-found"),
    pytest.param(on_w1(pod("web", "1", "1Gi", "w1")), ("--min-replica-count=5",),
                 "BlockedByPod", "pod default/web: MinReplicasReached", id="blocked-min-replicas"),
    pytest.param(on_w1(pod("dns", "1", "1Gi", "w1", namespace="kube-system")), (),
                 "BlockedByPod", "pod kube-system/dns: UnmovableKubeSystemPod", id="blocked-kube-system-pod"),
    pytest.param(on_w1(pod_with("web", "1", "1Gi", "w1", annotations={SAFE_TO_EVICT: "false"})), (),
                 "BlockedByPod", "pod default/web: NotSafeToEvictAnnotation", id="blocked-not-safe-to-evict"),
    pytest.param(on_w1(pod_with("web", "1", "1Gi", "w1", volumes=[{"name": "scratch", "emptyDir": {}}])), (),
                 "BlockedByPod", "pod default/web: LocalStorageRequested", id="blocked-empty-dir"),
    pytest.param(on_w1(pod("web", "1", "1Gi", "w1", labels=WEB), pdbs=(pdb("web", WEB, 0),)), (),
                 "BlockedByPod", "pod default/web: NotEnoughPdb", id="blocked-pdb"),
    pytest.param(with_w1(node("w1"), *_local_pv_on_w1()), (),
                 "NodeHasLocalVolumes", "pv-logs", id="empty-node-with-bound-local-pv"),
]


@pytest.mark.parametrize(("objects", "flags", "reason", "detail"), REASON_CASES)
def test_unremovable_reason(objects: ClusterObjects, flags: tuple[str, ...], reason: str, detail: str) -> None:
    decision = scale_down(objects, *flags)
    assert reasons(decision).get("w1") == reason
    assert detail in details(decision)["w1"]
    assert "w1" not in decision.unneeded
    assert "w1" not in decision.removed


REMOVABLE_CASES = [
    pytest.param(with_w1(node("w1")), (), id="empty-node"),
    pytest.param(with_w1(UNREADY_W1), (), id="unready-node-by-default"),
    pytest.param(on_w1(pod("web", "1", "1Gi", "w1")), (), id="replicated-pod-moves"),
    pytest.param(on_w1(pod("ds", "1", "1Gi", "w1", owner=("DaemonSet", "ds"))), (), id="daemonset-pod-stays"),
    pytest.param(on_w1(pod_with("gone", "3", "1Gi", "w1", owner=None, deleted=NOW - 3600)), (),
                 id="long-terminating-pod-ignored"),
    pytest.param(on_w1(pod("web", "3", "1Gi", "w1")), ("--scale-down-utilization-threshold=0.8",),
                 id="cpu-below-raised-threshold"),
    pytest.param(with_w1(node("w1", storage_max="400Gi", storage_free="100Gi")),
                 ("--scale-down-storage-utilization-threshold=0.8",), id="storage-below-raised-threshold"),
    pytest.param(with_w1(node("w1", storage_max="400Gi", storage_free="200Gi")), (),
                 id="storage-at-threshold-is-underutilized"),
    pytest.param(on_w1(pod_with("naked", "1", "1Gi", "w1", owner=None, annotations={SAFE_TO_EVICT: "true"})), (),
                 id="safe-to-evict-overrides-not-replicated"),
    pytest.param(on_w1(pod("web", "1", "1Gi", "w1"), owners=False), ("--skip-nodes-with-custom-controller-pods=false",),
                 id="missing-controller-without-custom-controller-check"),
    pytest.param(on_w1(pod("dns", "1", "1Gi", "w1", namespace="kube-system")), ("--skip-nodes-with-system-pods=false",),
                 id="kube-system-pod-when-allowed"),
    pytest.param(on_w1(pod("dns", "1", "1Gi", "w1", namespace="kube-system", labels=WEB),
                       pdbs=(pdb("dns", WEB, 1, namespace="kube-system"),)), (), id="kube-system-pod-with-pdb"),
    pytest.param(on_w1(pod_with("web", "1", "1Gi", "w1", volumes=[{"name": "scratch", "emptyDir": {}}])),
                 ("--skip-nodes-with-local-storage=false",), id="empty-dir-when-allowed"),
    pytest.param(on_w1(pod_with("web", "1", "1Gi", "w1", volumes=[{"name": "tmp", "emptyDir": {"medium": "Memory"}}])),
                 (), id="memory-empty-dir-is-not-local-storage"),
    pytest.param(on_w1(pod("web", "1", "1Gi", "w1", labels=WEB), pdbs=(pdb("web", WEB, 1),)), (), id="pdb-allows-one"),
    pytest.param(with_w1(node("w1"), *_local_pv_on_w1()[:1],
                         pv("pv-free", "50Gi", "local-disk", hosts=["w1"], driver="local")), (),
                 id="available-local-pv-holds-no-data"),
    pytest.param(with_w1(node("w1")), ("--cores-total=16:1000", "--memory-total=64:1000"),
                 id="cluster-minimum-exactly-kept"),
]


@pytest.mark.parametrize(("objects", "flags"), REMOVABLE_CASES)
def test_removable(objects: ClusterObjects, flags: tuple[str, ...]) -> None:
    decision = scale_down(objects, *flags)
    assert "w1" not in reasons(decision)
    assert decision.unneeded == ["w1"]
    assert decision.removed == ["w1"]
    assert decision.result == "ScaledDown"


def test_scale_down_disabled_skips_the_whole_phase() -> None:
    decision = scale_down(with_w1(node("w1")), "--scale-down-enabled=false")
    assert decision.result == "Skipped"
    assert (decision.unneeded, decision.removed, decision.unremovable) == ([], [], [])


def test_nothing_to_remove() -> None:
    decision = scale_down(on_w1(pod("web", "3", "1Gi", "w1")))
    assert decision.result == "NoNodesRemoved"
    assert decision.removed == []


# --- limits spent across one pass --------------------------------------------------------------


def _two_spares(*groups: NodeGroupSpec) -> ClusterObjects:
    return scaled_cluster(*BIG, node("w1"), node("w2"), *(groups or (group("ng", "big", "w1", "w2"),)))


@pytest.mark.parametrize(
    ("objects", "flags", "blocked_reason"),
    [
        pytest.param(_two_spares(group("ng", "big", "w1", "w2", min_size=2)), (), "NodeGroupMinSizeReached",
                     id="min-size-after-first-removal"),
        pytest.param(_two_spares(), ("--cores-total=20:1000",), "MinimalResourceLimitExceeded",
                     id="min-cores-after-first-removal"),
        pytest.param(_two_spares(), ("--memory-total=72:1000",), "MinimalResourceLimitExceeded",
                     id="min-memory-after-first-removal"),
    ],
)
def test_limits_are_spent_across_the_pass(objects: ClusterObjects, flags: tuple[str, ...],
                                          blocked_reason: str) -> None:
    decision = scale_down(objects, *flags)
    assert decision.unneeded == ["w1"]
    assert reasons(decision) == {"big": "NotUnderutilized", "w2": blocked_reason}


def test_cores_total_literal_minimum() -> None:
    """Two 4-core nodes and ``--cores-total=8:1000``: neither may go."""
    objects = scaled_cluster(node("w1"), node("w2"), group("ng", "w1", "w2"))
    decision = scale_down(objects, "--cores-total=8:1000")
    assert decision.unneeded == []
    assert reasons(decision) == {"w1": "MinimalResourceLimitExceeded", "w2": "MinimalResourceLimitExceeded"}


def test_pdb_budget_is_spent_across_the_pass() -> None:
    """One disruption left: the first node's pod takes it, the second node is blocked."""
    objects = scaled_cluster(*BIG, node("w1"), node("w2"), pod("web-1", "1", "1Gi", "w1", labels=WEB),
                             pod("web-2", "1", "1Gi", "w2", labels=WEB), group("ng", "big", "w1", "w2"),
                             pdbs=(pdb("web", WEB, 1),))
    decision = scale_down(objects, "--max-drain-parallelism=5")
    assert decision.unneeded == ["w1"]
    assert reasons(decision)["w2"] == "BlockedByPod"
    assert "NotEnoughPdb" in details(decision)["w2"]


# --- deletion budgets ----------------------------------------------------------------------------


def _empties(count: int) -> ClusterObjects:
    spares = [f"e{i}" for i in range(1, count + 1)]
    return scaled_cluster(*BIG, *(node(n) for n in spares), group("ng", "big", *spares))


def _drainable(count: int) -> ClusterObjects:
    spares = [f"d{i}" for i in range(1, count + 1)]
    return scaled_cluster(*BIG, *(node(n) for n in spares), *(pod(f"web-{n}", "500m", "1Gi", n) for n in spares),
                          group("ng", "big", *spares))


def _mixed() -> ClusterObjects:
    """Two empty nodes and three that need draining."""
    return scaled_cluster(*BIG, node("d1"), node("d2"), node("d3"), node("e1"), node("e2"),
                          *(pod(f"web-{n}", "500m", "1Gi", n) for n in ("d1", "d2", "d3")),
                          group("ng", "big", "d1", "d2", "d3", "e1", "e2"))


@pytest.mark.parametrize(
    ("objects", "flags", "unneeded", "removed"),
    [
        pytest.param(_empties(5), (), 5, 5, id="empty-nodes-in-bulk"),
        pytest.param(_empties(5), ("--max-scale-down-parallelism=3",), 5, 3, id="empty-within-parallelism"),
        pytest.param(_drainable(3), (), 3, 1, id="one-drain-by-default"),
        pytest.param(_drainable(3), ("--max-drain-parallelism=2",), 3, 2, id="drain-parallelism-2"),
        pytest.param(_drainable(3), ("--max-drain-parallelism=5", "--max-scale-down-parallelism=2"), 3, 2,
                     id="drains-within-total-parallelism"),
        pytest.param(_mixed(), (), 5, 3, id="empty-in-bulk-plus-one-drain"),
        pytest.param(_mixed(), ("--max-scale-down-parallelism=2", "--max-drain-parallelism=3"), 5, 2,
                     id="empty-first-within-parallelism"),
        pytest.param(_mixed(), ("--max-scale-down-parallelism=0",), 5, 0, id="zero-parallelism"),
    ],
)
def test_deletion_budgets(objects: ClusterObjects, flags: tuple[str, ...], unneeded: int, removed: int) -> None:
    decision = scale_down(objects, *flags)
    assert len(decision.unneeded) == unneeded
    assert len(decision.removed) == removed
    assert reasons(decision) == {"big": "NotUnderutilized"}


def test_empty_nodes_go_before_drained_ones() -> None:
    decision = scale_down(_mixed(), "--max-scale-down-parallelism=3", "--max-drain-parallelism=3")
    assert decision.removed == ["d1", "e1", "e2"]
    assert {r.node: r.empty for r in decision.to_delete} == {"d1": False, "e1": True, "e2": True}


def test_drained_node_carries_its_pods_and_destinations() -> None:
    decision = scale_down(_drainable(1))
    (chosen,) = decision.to_delete
    assert [p.ref for p in chosen.drain.to_move] == ["default/web-d1"]
    assert chosen.destinations == {"default/web-d1": "big"}

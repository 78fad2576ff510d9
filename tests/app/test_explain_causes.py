"""``explain``: one cluster per blocking cause, each naming the right verdict, plugin and objects.

Each case builds a small cluster with the factories, runs the loop ``plan`` runs and
explains its pods and nodes; the storage causes must name the objects behind them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest

from app.explain.verdicts import NodeExplanation, PodExplanation, explain_nodes, explain_pods
from kube.model import ClusterObjects
from tests.autoscaler.test_scaledown_storage import candidate, destination, guard, storage_cluster, volume_pod
from tests.factories import (
    cluster,
    csi_capacity,
    csi_driver,
    node,
    node_group,
    options,
    plan,
    pod,
    pv,
    pvc,
    storage_class,
    taint,
    template,
)

NVME = {"ng": "nvme"}


def _nvme_group(max_size: int = 5, target: int | None = None, **template_kw: object) -> object:
    return node_group("nvme", 0, max_size, node_selector=NVME, target_size=target,
                      template=template(storage_max="1Ti", labels=NVME, **template_kw))  # type: ignore[arg-type]


def csi_short() -> ClusterObjects:
    zone = {"topology.kubernetes.io/zone": "z1"}
    return cluster(node("n1", labels={"ng": "a", **zone}), storage_class("fast", "csi.example.com"),
                   csi_driver("csi.example.com"), csi_capacity("cap-1", "fast", zone, "10Gi"),
                   pvc("data-0", "50Gi", storage_class="fast"), pod("p0", claims=["data-0"]),
                   node_group("a", 0, 5, node_selector={"ng": "a"}, template=template(labels={"ng": "a", **zone})))


def local_short() -> ClusterObjects:
    return cluster(node("n1", storage_free="100Gi", storage_max="1Ti", labels=NVME), storage_class(),
                   pvc("data-0", "2Ti"), pod("p0", claims=["data-0"]), _nvme_group())  # type: ignore[arg-type]


def pinned_to_vanished_node() -> ClusterObjects:
    return cluster(node("n1", storage_free="100Gi", storage_max="1Ti", labels=NVME), storage_class(),
                   pvc("data-0", volume="pv-0"), pv("pv-0", hosts=["gone-7"], claim=("default", "data-0")),
                   pod("p0", claims=["data-0"]), _nvme_group())  # type: ignore[arg-type]


def missing_storage_class() -> ClusterObjects:
    return cluster(node("n1", labels=NVME), pvc("data-0", storage_class="nope"), pod("p0", claims=["data-0"]),
                   _nvme_group())  # type: ignore[arg-type]


def group_at_max() -> ClusterObjects:
    return cluster(node("n1", cpu="1", labels=NVME), pod("p0", cpu="2"),
                   _nvme_group(max_size=1, target=1))  # type: ignore[arg-type]


def untolerated_taint() -> ClusterObjects:
    """The group has no node: its template is the cloud's, with the taint."""
    return cluster(node("n1", cpu="1"), pod("p0", cpu="2"),
                   _nvme_group(taints=[taint("dedicated", "db")]))  # type: ignore[arg-type]


def two_claims_one_pool() -> ClusterObjects:
    return cluster(node("n1", storage_free="1Ti", storage_max="2Ti", labels=NVME), storage_class(),
                   pvc("a-0", "600Gi"), pvc("b-0", "600Gi"), pod("p0", claims=["a-0", "b-0"]),
                   node_group("nvme", 0, 5, node_selector=NVME,
                              template=template(storage_max="2Ti", labels=NVME)))


def not_marked_unschedulable() -> ClusterObjects:
    return cluster(node("n1", cpu="1", labels=NVME), pod("p0", cpu="2", pending=False),
                   _nvme_group())  # type: ignore[arg-type]


def fits_existing() -> ClusterObjects:
    return cluster(node("n1", cpu="8", labels=NVME), pod("p0", cpu="2"), _nvme_group())  # type: ignore[arg-type]


def non_migratable_local_pv() -> ClusterObjects:
    return cluster(node("n1", cpu="8", labels=NVME), node("n2", cpu="8", labels=NVME),
                   pvc("logs-0", volume="local-0", storage_class="local"),
                   pv("local-0", storage_class="local", hosts=["n1"], claim=("default", "logs-0"), driver="local"),
                   node_group("nvme", 0, 5, node_selector=NVME))


def unpinned_claim_fits_nowhere() -> ClusterObjects:
    """A migratable 60Gi volume whose only other node has 50Gi free: the node keeps its pod."""
    return storage_cluster(candidate("w1"), *volume_pod("db", "w1", "60Gi"), *destination("w2", "50Gi"))


def guard_pod_ignored() -> ClusterObjects:
    return storage_cluster(candidate("w1"), *guard("w1"), *volume_pod("db", "w1", "60Gi"), *destination("w2", "100Gi"))


@dataclass(frozen=True)
class PodCase:
    build: Callable[[], ClusterObjects]
    verdict: str
    plugin: str = ""
    objects: tuple[str, ...] = ()
    note: str = ""
    flags: tuple[str, ...] = ()


POD_CASES = [
    pytest.param(PodCase(csi_short, "NoScaleUp", "VolumeBinding",
                         ("PersistentVolumeClaim/default/data-0", "StorageClass/fast",
                          "CSIStorageCapacity/kube-system/cap-1"), "40Gi (42949672960 bytes) short"),
                 id="csi-capacity-short"),
    pytest.param(PodCase(local_short, "NoScaleUp", "VolumeBinding",
                         ("PersistentVolumeClaim/default/data-0", "StorageClass/rok"), "needs 2Ti"),
                 id="local-capacity-short-everywhere"),
    pytest.param(PodCase(pinned_to_vanished_node, "NoScaleUp", "VolumeBinding",
                         ("PersistentVolume/pv-0", "Node/gone-7 (no longer exists)"), "pinned to gone-7"),
                 id="pv-pinned-to-vanished-node"),
    pytest.param(PodCase(missing_storage_class, "NoScaleUp", "VolumeBinding", ("StorageClass/nope",),
                         "StorageClass nope does not exist"), id="missing-storage-class"),
    pytest.param(PodCase(group_at_max, "NoScaleUp", "MaxSizeReached"), id="group-at-max"),
    pytest.param(PodCase(untolerated_taint, "NoScaleUp", "TaintToleration"), id="untolerated-taint"),
    pytest.param(PodCase(two_claims_one_pool, "TriggersScaleUp"), id="two-claims-one-pool-need-a-new-node"),
    pytest.param(PodCase(not_marked_unschedulable, "NotConsidered", note="not marked unschedulable"),
                 id="not-yet-marked-unschedulable"),
    pytest.param(PodCase(fits_existing, "FitsExistingNode"), id="fits-an-existing-node"),
]


def _pods(objects: ClusterObjects, *flags: str) -> list[PodExplanation]:
    return explain_pods(plan(objects, *flags), objects, options(*flags), [p for p in objects.pods if not p.node_name])


def _nodes(objects: ClusterObjects, *flags: str) -> dict[str, NodeExplanation]:
    found = explain_nodes(plan(objects, *flags), objects, options(*flags), [n.name for n in objects.nodes])
    return {e.node: e for e in found}


@pytest.mark.parametrize("case", POD_CASES)
def test_each_cause_names_its_verdict_plugin_and_objects(case: PodCase) -> None:
    (answer,) = _pods(case.build(), *case.flags)
    assert answer.verdict == case.verdict, answer
    if case.verdict == "NoScaleUp":
        (group,) = answer.node_groups
        assert not group.fits and group.plugin == case.plugin, group
        assert set(case.objects) <= set(group.objects), group.objects
        assert not case.note or any(case.note in n for n in group.notes), group.notes
    if case.verdict == "TriggersScaleUp":
        assert answer.node_group == "nvme"
    if case.verdict == "FitsExistingNode":
        assert answer.node == "n1"
    if case.verdict == "NotConsidered":
        assert case.note in answer.reason


def test_a_node_with_non_migratable_local_data_is_unremovable_and_says_why() -> None:
    answer = _nodes(non_migratable_local_pv())["n1"]
    assert (answer.verdict, answer.reason) == ("Unremovable", "NodeHasLocalVolumes")
    assert "local-0" in answer.detail


def test_a_pod_whose_unpinned_volume_fits_nowhere_blocks_its_node() -> None:
    answer = _nodes(unpinned_claim_fits_nowhere())["w1"]
    assert (answer.verdict, answer.reason) == ("Unremovable", "NoPlaceToMovePods")
    (move,) = answer.pods
    assert move.pod == "default/db" and move.destination is None and move.blocker is not None
    assert move.unpin_bytes == 60 * 2**30


def test_the_guard_pod_is_ignored_and_the_bytes_to_unpin_counted() -> None:
    answer = _nodes(guard_pod_ignored())["w1"]
    assert answer.verdict in ("Removable", "Unneeded"), answer
    assert [m.pod for m in answer.pods] == ["default/db"], "the guard is not moved"
    assert answer.pods[0].destination == "w2"
    assert answer.bytes_to_unpin == 60 * 2**30

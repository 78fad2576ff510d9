"""Storage-aware scale-down (storage-semantics section 3), and upstream's answers without it.

Candidate nodes run small pods whose claims are bound to PVs of the local provisioner
pinned to them; in scale-down simulation such a PV is unpinned and must be
provisioned again on the destination, within its free local capacity, cumulatively
over the pass. Guard pods and their zero-disruption PDBs make actuation wait and do not
block planning. A bound PV that cannot migrate keeps its node (``NodeHasLocalVolumes``).
With ``--storage-aware=false`` every one of these gives upstream CA's decision.

Destinations are kept needed by a 3-core pod (CPU utilization 0.75), so each case is
about the candidates only.
"""

from __future__ import annotations

import pytest

from autoscaler.scaledown.types import ScaleDownPlan
from kube.model import ClusterObjects, Node, PodDisruptionBudget
from tests.autoscaler.scaledown_helpers import GUARD_LABELS, details, group, pdb, reasons, scale_down, scaled_cluster
from tests.factories import LOCAL, ClusterObject, node, pod, pv, pvc, storage_class

NO_STORAGE_AWARENESS = "--storage-aware=false"
WEB = {"app": "web"}


def candidate(name: str, free: str = "340Gi") -> Node:
    """A node with 400Gi of local disk; ``free`` left (340Gi: one 60Gi volume on it)."""
    return node(name, storage_max="400Gi", storage_free=free)


def destination(name: str, free: str) -> tuple[ClusterObject, ...]:
    """A node kept needed by CPU, with ``free`` local bytes for volumes moved here."""
    return node(name, storage_max="400Gi", storage_free=free), pod(f"busy-{name}", "3", "1Gi", name)


def volume_pod(name: str, host: str, *sizes: str, labels: dict[str, str] | None = None) -> tuple[ClusterObject, ...]:
    """A pod on ``host`` with one claim per size, each bound to a Rok PV pinned to ``host``."""
    objects: list[ClusterObject] = []
    claims = []
    for i, size in enumerate(sizes):
        claim, volume = f"{name}-data-{i}", f"pv-{name}-{i}"
        claims.append(claim)
        objects += [pvc(claim, size, volume=volume),
                    pv(volume, size, hosts=[host], claim=("default", claim), driver=LOCAL)]
    return (pod(name, "500m", "1Gi", host, claims=claims, labels=labels), *objects)


def guard(host: str) -> tuple[ClusterObject, ...]:
    return (pod(f"guard-{host}", "10m", "16Mi", host, labels=dict(GUARD_LABELS)),)


def storage_cluster(*objects: ClusterObject, pdbs: tuple[PodDisruptionBudget, ...] = ()) -> ClusterObjects:
    """The objects plus the Rok class, all nodes in one group."""
    names = [o.name for o in objects if isinstance(o, Node)]
    return scaled_cluster(storage_class(), *objects, group("ng", *names), pdbs=pdbs)


# --- the cases, each run storage-aware and as upstream ---------------------------------------------

MIGRATABLE_FITS = storage_cluster(candidate("w1"), *volume_pod("db", "w1", "60Gi"), *destination("w2", "100Gi"))
MIGRATABLE_NO_ROOM = storage_cluster(candidate("w1"), *volume_pod("db", "w1", "60Gi"), *destination("w2", "50Gi"))
TWO_PODS_ONE_DESTINATION = storage_cluster(
    candidate("w1", "280Gi"), *volume_pod("db-a", "w1", "60Gi"), *volume_pod("db-b", "w1", "60Gi"),
    *destination("w2", "100Gi"))
TWO_PODS_TWO_DESTINATIONS = storage_cluster(
    candidate("w1", "280Gi"), *volume_pod("db-a", "w1", "60Gi"), *volume_pod("db-b", "w1", "60Gi"),
    *destination("w2", "100Gi"), *destination("w3", "100Gi"))
TWO_CLAIMS_SUMMED = storage_cluster(
    candidate("w1", "280Gi"), *volume_pod("db", "w1", "60Gi", "60Gi"), *destination("w2", "100Gi"),
    *destination("w3", "100Gi"))
GUARD_WITH_ITS_PDB = storage_cluster(
    candidate("w1"), *guard("w1"), *volume_pod("db", "w1", "60Gi"), *destination("w2", "100Gi"),
    pdbs=(pdb("guard-w1", GUARD_LABELS, 0),))
ORDINARY_POD_WITH_THAT_PDB = storage_cluster(
    candidate("w1"), *volume_pod("db", "w1", "60Gi", labels=WEB), *destination("w2", "100Gi"),
    pdbs=(pdb("web", WEB, 0),))
LOCAL_PV_KEPT = storage_cluster(
    candidate("w1", "350Gi"), *destination("w2", "100Gi"),
    storage_class("local-disk", "kubernetes.io/no-provisioner"),
    pvc("logs", "50Gi", "local-disk", volume="pv-logs"),
    pv("pv-logs", "50Gi", "local-disk", hosts=["w1"], claim=("default", "logs"), driver="local"))
OTHER_CSI_PV_KEPT = storage_cluster(
    candidate("w1", "350Gi"), *destination("w2", "100Gi"),
    storage_class("lvm", "topolvm.io"),
    pvc("logs", "50Gi", "lvm", volume="pv-logs"),
    pv("pv-logs", "50Gi", "lvm", hosts=["w1"], claim=("default", "logs"), driver="topolvm.io"))
ROK_PV_WITHOUT_POD = storage_cluster(
    candidate("w1"), *destination("w2", "100Gi"),
    pvc("orphan", "60Gi", volume="pv-orphan"),
    pv("pv-orphan", "60Gi", hosts=["w1"], claim=("default", "orphan"), driver=LOCAL))


@pytest.mark.parametrize(
    ("objects", "aware", "upstream"),
    [
        pytest.param(MIGRATABLE_FITS, None, "NoPlaceToMovePods", id="migratable-pv-fits-elsewhere"),
        pytest.param(MIGRATABLE_NO_ROOM, "NoPlaceToMovePods", "NoPlaceToMovePods", id="migratable-pv-no-room"),
        pytest.param(TWO_PODS_ONE_DESTINATION, "NoPlaceToMovePods", "NoPlaceToMovePods",
                     id="two-60Gi-pods-cannot-share-100Gi"),
        pytest.param(TWO_PODS_TWO_DESTINATIONS, None, "NoPlaceToMovePods", id="two-60Gi-pods-two-destinations"),
        pytest.param(TWO_CLAIMS_SUMMED, "NoPlaceToMovePods", "NoPlaceToMovePods",
                     id="one-pod-two-claims-summed"),
        pytest.param(GUARD_WITH_ITS_PDB, None, "BlockedByPod", id="guard-pdb-does-not-block"),
        pytest.param(ORDINARY_POD_WITH_THAT_PDB, "BlockedByPod", "BlockedByPod", id="same-pdb-on-ordinary-pod"),
        pytest.param(LOCAL_PV_KEPT, "NodeHasLocalVolumes", None, id="empty-node-with-bound-local-pv"),
        pytest.param(OTHER_CSI_PV_KEPT, "NodeHasLocalVolumes", None, id="empty-node-with-other-csi-pv"),
        pytest.param(ROK_PV_WITHOUT_POD, None, None, id="empty-node-with-unused-rok-pv"),
    ],
)
def test_w1(objects: ClusterObjects, aware: str | None, upstream: str | None) -> None:
    """``w1``'s fate storage-aware and with ``--storage-aware=false``; None means removed."""
    for flags, expected in (((), aware), ((NO_STORAGE_AWARENESS,), upstream)):
        decision = scale_down(objects, *flags)
        if expected is None:
            assert "w1" not in reasons(decision), flags
            assert "w1" in decision.unneeded, flags
            assert "w1" in decision.removed, flags
        else:
            assert reasons(decision).get("w1") == expected, flags
            assert "w1" not in decision.unneeded, flags


@pytest.mark.parametrize(
    ("objects", "flags", "detail"),
    [
        pytest.param(MIGRATABLE_NO_ROOM, (), "no place to move pod default/db", id="no-room"),
        pytest.param(MIGRATABLE_FITS, (NO_STORAGE_AWARENESS,), "no place to move pod default/db",
                     id="upstream-pinned-pv"),
        pytest.param(GUARD_WITH_ITS_PDB, (NO_STORAGE_AWARENESS,), "pod default/guard-w1: NotEnoughPdb",
                     id="upstream-guard-pdb"),
        pytest.param(ORDINARY_POD_WITH_THAT_PDB, (), "pod default/db: NotEnoughPdb", id="ordinary-pdb"),
        pytest.param(LOCAL_PV_KEPT, (), "pv-logs", id="local-pv-named"),
    ],
)
def test_w1_detail(objects: ClusterObjects, flags: tuple[str, ...], detail: str) -> None:
    assert detail in details(scale_down(objects, *flags))["w1"]


def _destinations(decision: ScaleDownPlan) -> dict[str, dict[str, str]]:
    return {r.node: dict(r.destinations) for r in decision.to_delete}


@pytest.mark.parametrize(
    ("objects", "expected"),
    [
        pytest.param(MIGRATABLE_FITS, {"w1": {"default/db": "w2"}}, id="one-volume"),
        pytest.param(TWO_PODS_TWO_DESTINATIONS, {"w1": {"default/db-a": "w2", "default/db-b": "w3"}},
                     id="second-volume-goes-where-space-is-left"),
    ],
)
def test_volume_destinations(objects: ClusterObjects, expected: dict[str, dict[str, str]]) -> None:
    assert _destinations(scale_down(objects)) == expected


def test_guard_is_not_moved_but_is_evicted() -> None:
    (chosen,) = scale_down(GUARD_WITH_ITS_PDB).to_delete
    assert [p.ref for p in chosen.drain.guards] == ["default/guard-w1"]
    assert [p.ref for p in chosen.drain.to_move] == ["default/db"]
    assert chosen.destinations == {"default/db": "w2"}


# --- storage moved in one pass adds up (storage-semantics 3.3) ---------------------------------------


@pytest.mark.parametrize(
    ("candidate_free",),
    [
        pytest.param("340Gi", id="candidates-with-free-disk"),
        pytest.param("0", id="candidates-with-full-disk-allowed-by-threshold"),
    ],
)
def test_cumulative_storage_across_the_pass(candidate_free: str) -> None:
    """w1 and w2 each hold a 60Gi volume; w3 has 100Gi free: only one of them can go.

    With free disk on the candidates, w1's volume first lands on w2; removing w2 too
    would strand it, so w2 must move it again, and w3 cannot take both.
    """
    objects = storage_cluster(candidate("w1", candidate_free), *volume_pod("db-1", "w1", "60Gi"),
                              candidate("w2", candidate_free), *volume_pod("db-2", "w2", "60Gi"),
                              *destination("w3", "100Gi"))
    decision = scale_down(objects, "--max-drain-parallelism=5", "--scale-down-storage-utilization-threshold=1")
    assert decision.unneeded == ["w1"]
    assert decision.removed == ["w1"]
    assert reasons(decision) == {"w2": "NoPlaceToMovePods", "w3": "NotUnderutilized"}


def test_pods_moved_onto_a_removed_node_move_again() -> None:
    """w1's volume lands on w2; when w2 goes as well, both volumes must fit elsewhere (w3: 200Gi)."""
    objects = storage_cluster(candidate("w1"), *volume_pod("db-1", "w1", "60Gi"),
                              candidate("w2"), *volume_pod("db-2", "w2", "60Gi"),
                              *destination("w3", "200Gi"))
    decision = scale_down(objects, "--max-drain-parallelism=5")
    assert decision.removed == ["w1", "w2"]
    assert _destinations(decision) == {"w1": {"default/db-1": "w3"}, "w2": {"default/db-2": "w3"}}


def test_cpu_moved_in_one_pass_adds_up() -> None:
    """Two 1-core pods on two nodes and 1.5 cores free elsewhere: only one node can go."""
    objects = scaled_cluster(node("w1"), node("w2"), node("w3", "4"), pod("a", "1", "1Gi", "w1"),
                             pod("b", "1", "1Gi", "w2"), pod("busy", "2500m", "1Gi", "w3"),
                             group("ng", "w1", "w2", "w3"))
    decision = scale_down(objects, "--max-drain-parallelism=5")
    assert decision.unneeded == ["w1"]
    assert reasons(decision) == {"w2": "NoPlaceToMovePods", "w3": "NotUnderutilized"}


def test_storage_not_underutilized_regardless_of_cpu() -> None:
    objects = storage_cluster(candidate("w1", "100Gi"), *destination("w2", "300Gi"))
    decision = scale_down(objects)
    assert reasons(decision)["w1"] == "NotUnderutilized"
    assert details(decision)["w1"] == "storage utilization 0.75 > 0.5"
    upstream = scale_down(objects, NO_STORAGE_AWARENESS)
    assert upstream.removed == ["w1"]


@pytest.mark.parametrize(
    ("flags", "unneeded", "kept"),
    [
        pytest.param((), "w2", "w1", id="guard-only-node-is-empty-and-goes-first"),
        pytest.param((NO_STORAGE_AWARENESS,), "w1", "w2", id="upstream-guard-is-an-ordinary-pod"),
    ],
)
def test_guard_only_node_counts_as_empty(flags: tuple[str, ...], unneeded: str, kept: str) -> None:
    """Empty nodes are tried first; the group's min size lets only the first one go."""
    objects = scaled_cluster(node("w1"), node("w2"), *destination("w3", "100Gi"),
                             pod("web", "500m", "1Gi", "w1"), *guard("w2"),
                             group("ng", "w1", "w2", "w3", min_size=2))
    decision = scale_down(objects, *flags)
    assert decision.unneeded == [unneeded]
    assert reasons(decision)[kept] == "NodeGroupMinSizeReached"

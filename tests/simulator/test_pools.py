"""Capacity pools in the predicate checker: TopoLVM device classes, Rok next to them, and
CSIStorageCapacity segments, on live nodes and on appended (template) nodes, through both
the per-node ``check`` and the vectorized ``find_node``."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from kube.model import ClusterObjects, Pod
from simulator.volumes import REASON_NOT_ENOUGH_SPACE
from tests.factories import (
    ZONE,
    ClusterObject,
    GiB,
    cluster,
    csi_capacity,
    csi_driver,
    node,
    pod,
    pvc,
    storage_class,
    world,
)
from tests.simulator.test_predicates import assert_paths_agree

CSI = "csi.example.com"
FAST = storage_class("fast", "topolvm.io", parameters={"topolvm.io/device-class": "nvme"})
FAST2 = storage_class("fast-xfs", "topolvm.io", parameters={"topolvm.io/device-class": "nvme"})
SLOW = storage_class("slow", "topolvm.io", parameters={"topolvm.io/device-class": "hdd"})
LVM = storage_class("lvm", "topolvm.io")
CLASSES: list[ClusterObject] = [FAST, FAST2, SLOW, LVM, storage_class(), storage_class("net", CSI), csi_driver(CSI)]


def lvm(name: str, zone: str = "a", rok: str | None = None, **device_classes: str) -> ClusterObject:
    return node(name, labels={ZONE: zone}, storage_free=rok, warns=True,
                annotations={f"capacity.topolvm.io/{k}": v for k, v in device_classes.items()})


def claims(*specs: tuple[str, str]) -> tuple[list[ClusterObject], Pod]:
    """Claims (class, size) and the pending pod using them."""
    objects: list[ClusterObject] = [pvc(f"c{i}", size, sc) for i, (sc, size) in enumerate(specs)]
    return objects, pod("p", claims=[f"c{i}" for i in range(len(specs))])


def case(nodes: list[ClusterObject], specs: list[tuple[str, str]], expect: Mapping[str, bool],
         *extra: ClusterObject, appended: Mapping[str, bool] | None = None,
         id: str) -> object:
    objects, subject = claims(*specs)
    return pytest.param(cluster(*CLASSES, *nodes, *objects, *extra), subject, expect, appended or expect, id=id)


NVME_HDD = [lvm("n", nvme=str(100 * GiB), hdd=str(1000 * GiB))]
SEGMENTS: list[ClusterObject] = [csi_capacity("net-a", "net", {ZONE: "a"}, "100Gi", "40Gi"),
                                  csi_capacity("net-b", "net", {ZONE: "b"}, "10Gi")]
ZONES = [lvm("a1", "a"), lvm("b1", "b"), lvm("c1", "c")]
PUBLISHED: list[ClusterObject] = [csi_driver("topolvm.io"),
                                   csi_capacity("fast-a", "fast", {ZONE: "a"}, "1000Gi", "20Gi")]

CASES = [
    # --- TopoLVM classes ------------------------------------------------------------------------
    case(NVME_HDD, [("fast", "60Gi"), ("fast-xfs", "50Gi")], {"n": False},
         id="topolvm-one-device-class-summed-across-classes"),
    case(NVME_HDD, [("fast", "60Gi"), ("fast-xfs", "40Gi")], {"n": True}, id="topolvm-exactly-fills-the-device-class"),
    case(NVME_HDD, [("fast", "90Gi"), ("slow", "900Gi")], {"n": True}, id="topolvm-device-classes-are-separate-pools"),
    case(NVME_HDD, [("slow", "1001Gi")], {"n": False}, id="topolvm-other-device-class-short"),
    case([lvm("none"), lvm("bad", nvme="100Gi"), lvm("neg", nvme="-1")], [("fast", "1")],
         {"none": False, "bad": False, "neg": False}, id="topolvm-missing-or-malformed-annotation-is-no-capacity"),
    case([lvm("d", **{"00default": str(10 * GiB)}, nvme=str(100 * GiB))], [("lvm", "10Gi")], {"d": True},
         id="topolvm-class-without-parameter-uses-00default"),
    case([lvm("d", **{"00default": str(10 * GiB)}, nvme=str(100 * GiB))], [("lvm", "6Gi"), ("lvm", "5Gi")],
         {"d": False}, id="topolvm-00default-summed"),
    # --- Rok and TopoLVM claims in one pod -----------------------------------------------------------
    case([lvm("m", rok="60Gi", nvme=str(60 * GiB))], [("rok", "50Gi"), ("fast", "50Gi")], {"m": True},
         id="mixed-rok-and-topolvm-each-in-its-pool"),
    case([lvm("m", rok="60Gi", nvme=str(60 * GiB))], [("rok", "50Gi"), ("rok", "20Gi"), ("fast", "10Gi")],
         {"m": False}, id="mixed-rok-short"),
    case([lvm("m", rok="60Gi", nvme=str(60 * GiB))], [("rok", "10Gi"), ("fast", "50Gi"), ("fast", "20Gi")],
         {"m": False}, id="mixed-topolvm-short"),
    # --- CSIStorageCapacity segments (per claim, as kube-scheduler) ------------------------------------
    case(ZONES, [("net", "40Gi"), ("net", "40Gi")], {"a1": True, "b1": False, "c1": False}, *SEGMENTS,
         id="csi-segment-per-zone-each-claim-on-its-own"),
    case(ZONES, [("net", "41Gi")], {"a1": False, "b1": False, "c1": False}, *SEGMENTS,
         id="csi-maximum-volume-size-below-capacity"),
    case(ZONES, [("net", "10Gi")], {"a1": True, "b1": True, "c1": False}, *SEGMENTS,
         id="csi-capacity-when-no-maximum-volume-size"),
    # --- TopoLVM publishing CSIStorageCapacity too ----------------------------------------------------
    case([lvm("a1", nvme=str(30 * GiB))], [("fast", "20Gi"), ("fast", "20Gi")], {"a1": False}, *PUBLISHED,
         id="published-and-annotated-summed-in-the-pool"),
    case([lvm("a1", nvme=str(30 * GiB))], [("fast", "25Gi")], {"a1": False}, *PUBLISHED,
         appended={"a1": True}, id="published-maximum-volume-size-on-live-nodes-only"),
    case([lvm("a1"), lvm("b1", "b")], [("fast", "20Gi"), ("fast", "20Gi")], {"a1": True, "b1": False}, *PUBLISHED,
         id="published-without-annotation-left-to-csi-segments"),
]


@pytest.mark.parametrize("appended_nodes", [False, True], ids=["live-nodes", "appended-nodes"])
@pytest.mark.parametrize(("objects", "subject", "expect", "appended"), CASES)
def test_pools(objects: ClusterObjects, subject: Pod, expect: Mapping[str, bool], appended: Mapping[str, bool],
               appended_nodes: bool) -> None:
    w = world(objects, appended=appended_nodes)
    plan = w.plan(subject)
    want = appended if appended_nodes else expect
    found = {name: w.checker.check(subject, plan, w.idx(name)) for name in want}
    assert {name: why is None for name, why in found.items()} == dict(want)
    assert all(why.reason == REASON_NOT_ENOUGH_SPACE for why in found.values() if why is not None)
    assert_paths_agree(w, subject)


def test_placing_consumes_one_device_class_only() -> None:
    """A pod placed in a simulation takes its device class's bytes; the other class is untouched."""
    first, first_pod = claims(("fast", "90Gi"))
    objects = cluster(*CLASSES, *NVME_HDD, *first, pvc("s", "900Gi", "slow"), pvc("f", "20Gi", "fast"))
    w = world(objects)
    w.checker.place(first_pod, w.plan(first_pod), 0)
    slow, fast = pod("q", claims=["s"]), pod("r", claims=["f"])
    assert w.checker.check(slow, w.plan(slow), 0) is None
    why = w.checker.check(fast, w.plan(fast), 0)
    assert why is not None and why.reason == REASON_NOT_ENOUGH_SPACE
    assert w.checker.find_node(fast, w.plan(fast)) is None

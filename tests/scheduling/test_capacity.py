"""The capacity seam: Rok's annotation, TopoLVM's per device class annotation and
CSIStorageCapacity segments, chosen per provisioner and summed per pool."""

from __future__ import annotations

from typing import Any

import pytest

from kube.convert import convert_node
from kube.model import Node, StorageClass
from simulator.capacity import CapacitySources
from tests.factories import NAMES, ZONE, csi_capacity, node, node_json, storage_class

GiB = 2**30
CSI = "csi.example.com"


def annotated(name: str, annotations: dict[str, str], labels: dict[str, str] | None = None, **kw: Any) -> Node:
    obj = node_json(name, labels=labels, **kw)
    obj["metadata"]["annotations"].update(annotations)
    return convert_node(obj, NAMES, [])


SOURCES = CapacitySources.default(
    NAMES.provisioner,
    capacities=[csi_capacity("a", "net", {ZONE: "a"}, "100Gi", "40Gi"), csi_capacity("b", "net", {ZONE: "b"}, "10Gi")],
    csi_provisioners=[CSI],
    device_classes={"fast": "nvme", "slow": "hdd"},
)
ROK = storage_class("rok")
FAST = storage_class("fast", "topolvm.io")
FAST2 = storage_class("fast-xfs", "topolvm.io")
SLOW = storage_class("slow", "topolvm.io")
NET = storage_class("net", CSI)
OTHER = storage_class("ebs", "ebs.csi.aws.com")
TOPO = {"capacity.topolvm.io/nvme": str(100 * GiB), "capacity.topolvm.io/hdd": str(1000 * GiB),
        "capacity.topolvm.io/00default": str(50 * GiB)}


@pytest.mark.parametrize(("subject", "claims", "fits"), [
    pytest.param(node("n", storage_free="100Gi"), [(ROK, 60 * GiB), (ROK, 60 * GiB)], False, id="rok-summed"),
    pytest.param(node("n", storage_free="120Gi"), [(ROK, 60 * GiB), (ROK, 60 * GiB)], True, id="rok-exact"),
    pytest.param(node("n"), [(ROK, 1)], False, id="rok-missing-annotation-is-zero"),
    pytest.param(annotated("n", TOPO), [(FAST, 60 * GiB), (FAST2, 50 * GiB)], True,
                 id="topolvm-unmapped-class-uses-default-device-class"),
    pytest.param(annotated("n", TOPO), [(FAST, 60 * GiB), (FAST, 50 * GiB)], False, id="topolvm-device-class-summed"),
    pytest.param(annotated("n", TOPO), [(FAST, 90 * GiB), (SLOW, 900 * GiB)], True,
                 id="topolvm-device-classes-are-separate-pools"),
    pytest.param(annotated("n", {"capacity.topolvm.io/nvme": "lots"}), [(FAST, 1)], False,
                 id="topolvm-malformed-annotation-is-zero"),
    pytest.param(annotated("n", TOPO, storage_free="10Gi"), [(FAST, 90 * GiB), (ROK, 10 * GiB)], True,
                 id="rok-and-topolvm-mixed-on-one-node"),
    pytest.param(node("n", labels={ZONE: "a"}), [(NET, 40 * GiB), (NET, 40 * GiB)], True, id="csi-segment-capacity"),
    pytest.param(node("n", labels={ZONE: "a"}), [(NET, 41 * GiB)], False, id="csi-maximum-volume-size"),
    pytest.param(node("n", labels={ZONE: "b"}), [(NET, 11 * GiB)], False, id="csi-other-segment"),
    pytest.param(node("n", labels={ZONE: "c"}), [(NET, 1)], False, id="csi-no-segment-no-capacity"),
    pytest.param(node("n"), [(OTHER, 10**15)], True, id="untracked-provisioner-not-checked"),
])
def test_fits(subject: Node, claims: list[tuple[StorageClass, int]], fits: bool) -> None:
    assert SOURCES.fits(subject, claims) is fits


def test_pools_and_totals() -> None:
    n = annotated("n", TOPO, storage_free="10Gi", storage_max="100Gi")
    rok, fast, net = SOURCES.source_for(ROK), SOURCES.source_for(FAST), SOURCES.source_for(NET)
    assert rok is not None and fast is not None and net is not None
    assert (rok.pool(ROK), fast.pool(FAST), fast.pool(SLOW), net.pool(NET)) == ("rok", "topolvm/nvme",
                                                                                "topolvm/hdd", "csi/net")
    assert rok.total_bytes(n, ROK) == 100 * GiB and rok.free_bytes(n, ROK) == 10 * GiB
    assert fast.free_bytes(n, FAST) == 100 * GiB and fast.total_bytes(n, FAST) is None
    assert SOURCES.source_for(OTHER) is None

"""The capacity seam: Rok's annotation, TopoLVM's per device class annotation and
CSIStorageCapacity segments, chosen per provisioner and summed per pool."""

from __future__ import annotations

from typing import Any

import pytest

from kube.convert import convert_node
from kube.convert.storage import convert_storage_class
from kube.model import Node, StorageClass
from simulator.capacity import CapacitySources, TopoLVMCapacity
from tests.factories import NAMES, ZONE, csi_capacity, node, node_json, storage_class, storage_class_json

GiB = 2**30
CSI = "csi.example.com"


def annotated(name: str, annotations: dict[str, str], labels: dict[str, str] | None = None, **kw: Any) -> Node:
    obj = node_json(name, labels=labels, **kw)
    obj["metadata"]["annotations"].update(annotations)
    return convert_node(obj, NAMES, [])


SOURCES = CapacitySources.default(
    NAMES.provisioner,
    capacities=[csi_capacity("a", "net", {ZONE: "a"}, "100Gi", "40Gi"), csi_capacity("b", "net", {ZONE: "b"}, "10Gi"),
                csi_capacity("lvm-a", "fast", {ZONE: "a"}, "1000Gi", "20Gi")],
)
PUBLISHED = (CSI,)


def topolvm_class(name: str, device_class: str | None) -> StorageClass:
    obj = storage_class_json(name, "topolvm.io")
    if device_class is not None:
        obj["parameters"] = {"topolvm.io/device-class": device_class, "csi.storage.k8s.io/fstype": "xfs"}
    return convert_storage_class(obj)


ROK = storage_class("rok")
FAST = topolvm_class("fast", "nvme")
FAST2 = topolvm_class("fast-xfs", "nvme")
SLOW = topolvm_class("slow", "hdd")
DEFAULT = topolvm_class("lvm", None)
NET = storage_class("net", CSI)
OTHER = storage_class("ebs", "ebs.csi.aws.com")
TOPO = {"capacity.topolvm.io/nvme": str(100 * GiB), "capacity.topolvm.io/hdd": str(1000 * GiB),
        "capacity.topolvm.io/00default": str(50 * GiB)}


@pytest.mark.parametrize(("subject", "claims", "published", "fits"), [
    pytest.param(node("n", storage_free="100Gi"), [(ROK, 60 * GiB), (ROK, 60 * GiB)], (), False, id="rok-summed"),
    pytest.param(node("n", storage_free="120Gi"), [(ROK, 60 * GiB), (ROK, 60 * GiB)], (), True, id="rok-exact"),
    pytest.param(node("n"), [(ROK, 1)], (), False, id="rok-missing-annotation-is-zero"),
    pytest.param(annotated("n", TOPO), [(FAST, 60 * GiB), (FAST2, 40 * GiB)], (), True,
                 id="topolvm-two-classes-one-device-class-exact"),
    pytest.param(annotated("n", TOPO), [(FAST, 60 * GiB), (FAST2, 50 * GiB)], (), False,
                 id="topolvm-device-class-summed-across-storage-classes"),
    pytest.param(annotated("n", TOPO), [(FAST, 90 * GiB), (SLOW, 900 * GiB)], (), True,
                 id="topolvm-device-classes-are-separate-pools"),
    pytest.param(annotated("n", TOPO), [(DEFAULT, 50 * GiB)], (), True, id="topolvm-no-parameter-uses-00default"),
    pytest.param(annotated("n", TOPO), [(DEFAULT, 51 * GiB)], (), False, id="topolvm-00default-summed"),
    pytest.param(annotated("n", {"capacity.topolvm.io/nvme": "lots"}), [(FAST, 1)], (), False,
                 id="topolvm-malformed-annotation-is-zero"),
    pytest.param(annotated("n", {"capacity.topolvm.io/nvme": "-5"}), [(FAST, 1)], (), False,
                 id="topolvm-negative-annotation-is-zero"),
    pytest.param(annotated("n", {}), [(FAST, 1)], (), False, id="topolvm-missing-annotation-is-zero"),
    pytest.param(annotated("n", TOPO, storage_free="10Gi"), [(FAST, 90 * GiB), (ROK, 10 * GiB)], (), True,
                 id="rok-and-topolvm-mixed-on-one-node"),
    pytest.param(annotated("n", TOPO, storage_free="10Gi"), [(FAST, 90 * GiB), (ROK, 11 * GiB)], (), False,
                 id="rok-and-topolvm-mixed-rok-short"),
    pytest.param(annotated("n", TOPO, labels={ZONE: "a"}), [(FAST, 20 * GiB), (FAST, 20 * GiB)], ("topolvm.io",), True,
                 id="topolvm-published-per-claim-and-summed"),
    pytest.param(annotated("n", TOPO, labels={ZONE: "a"}), [(FAST, 21 * GiB)], ("topolvm.io",), False,
                 id="topolvm-published-maximum-volume-size"),
    pytest.param(annotated("n", {"capacity.topolvm.io/nvme": str(30 * GiB)}, labels={ZONE: "a"}),
                 [(FAST, 20 * GiB), (FAST, 20 * GiB)], ("topolvm.io",), False, id="topolvm-published-pool-summed"),
    pytest.param(annotated("n", {}, labels={ZONE: "a"}), [(FAST, 20 * GiB), (FAST, 20 * GiB)], ("topolvm.io",), True,
                 id="topolvm-published-no-annotation-left-to-csi"),
    pytest.param(node("n", labels={ZONE: "a"}), [(NET, 40 * GiB), (NET, 40 * GiB)], PUBLISHED, True,
                 id="csi-segment-per-claim"),
    pytest.param(node("n", labels={ZONE: "a"}), [(NET, 41 * GiB)], PUBLISHED, False,
                 id="csi-maximum-volume-size-below-capacity"),
    pytest.param(node("n", labels={ZONE: "b"}), [(NET, 11 * GiB)], PUBLISHED, False, id="csi-other-segment"),
    pytest.param(node("n", labels={ZONE: "c"}), [(NET, 1)], PUBLISHED, False, id="csi-no-segment-no-capacity"),
    pytest.param(node("n", labels={ZONE: "c"}), [(NET, 1)], (), True, id="csi-driver-not-publishing-not-checked"),
    pytest.param(node("n"), [(OTHER, 10**15)], (), True, id="untracked-provisioner-not-checked"),
])
def test_fits(subject: Node, claims: list[tuple[StorageClass, int]], published: tuple[str, ...], fits: bool) -> None:
    assert SOURCES.fits(subject, claims, published) is fits


def test_pools_and_totals() -> None:
    n = annotated("n", TOPO, storage_free="10Gi", storage_max="100Gi")
    rok, fast = SOURCES.source_for(ROK), SOURCES.source_for(FAST)
    assert rok is not None and fast is not None
    assert (SOURCES.pool_of(ROK), SOURCES.pool_of(FAST), SOURCES.pool_of(SLOW), SOURCES.pool_of(DEFAULT)) == (
        "rok", "capacity.topolvm.io/nvme", "capacity.topolvm.io/hdd", "capacity.topolvm.io/00default")
    assert rok.total_bytes(n, "rok") == 100 * GiB and SOURCES.free_bytes(n, ROK) == 10 * GiB
    assert SOURCES.free_bytes(n, FAST) == 100 * GiB and fast.total_bytes(n, "capacity.topolvm.io/nvme") is None
    assert TopoLVMCapacity.device_class(SLOW) == "hdd"
    assert SOURCES.source_for(OTHER) is None and SOURCES.pool_of(NET) is None


def test_local_provisioner_wins_over_topolvm() -> None:
    """A cluster configured with TopoLVM as *the* local provisioner keeps the annotation pool."""
    sources = CapacitySources.default("topolvm.io")
    assert sources.pool_of(FAST) == "rok"

"""Scale-up with capacity pools: TopoLVM device classes next to Rok, through ``plan``.

The ``nvme`` group's live nodes publish ``capacity.topolvm.io/<device-class>``; a pending
pod's TopoLVM claims are summed per device class. A scale-up happens only when the
group's nodes lack the device class's capacity and a new node (its template: the largest
value among the group's ready nodes, a lower bound) would have it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import pytest

from app.cli import main
from autoscaler.context import build_context
from cloudproviders.snapshot import SnapshotProvider
from kube.load import load_snapshot
from kube.model import ClusterObjects
from tests.factories import (
    NAMES,
    NOW,
    ClusterObject,
    cluster,
    csi_capacity,
    csi_driver,
    node,
    node_group,
    options,
    plan,
    pod,
    pvc,
    storage_class,
    template,
)

NVME = {"ng": "nvme"}
GiB = 2**30
FAST = storage_class("fast", "topolvm.io", parameters={"topolvm.io/device-class": "nvme"})
SLOW = storage_class("slow", "topolvm.io", parameters={"topolvm.io/device-class": "hdd"})
LVM = storage_class("lvm", "topolvm.io")  # no parameter: TopoLVM's 00default


def lvm_node(name: str, cpu_busy: bool = False, **annotations: str) -> list[ClusterObject]:
    """A node of the nvme group publishing ``capacity.topolvm.io/<key>`` for each keyword."""
    out: list[ClusterObject] = [node(name, labels=NVME, storage_free="100Gi", storage_max="100Gi", warns=True,
                                     annotations={f"capacity.topolvm.io/{k}": v for k, v in annotations.items()})]
    if cpu_busy:
        out.append(pod(f"busy-{name}", "4", "1Gi", node=name))
    return out


def pending(claims: Mapping[str, str], size: str = "60Gi") -> list[ClusterObject]:
    """One pending pod with a claim of ``size`` per (claim name -> class)."""
    return [*(pvc(name, size, sc) for name, sc in claims.items()), pod("db-0", "100m", "100Mi", claims=list(claims))]


def nvme(**kw: object) -> ClusterObject:
    return node_group("nvme", 0, 5, node_selector=NVME, **kw)


TWO_FAST = {"a": "fast", "b": "fast"}
G200 = str(200 * GiB)


@pytest.mark.parametrize(("objects", "result", "increase"), [
    pytest.param(cluster(FAST, SLOW, *lvm_node("w1", nvme=G200), nvme(), *pending(TWO_FAST)),
                 "NotNeeded", 0, id="device-class-capacity-on-the-live-node"),
    pytest.param(cluster(FAST, SLOW, *lvm_node("w1", nvme=str(100 * GiB), hdd=str(10_000 * GiB)),
                         *lvm_node("w2", cpu_busy=True, nvme=G200), nvme(), *pending(TWO_FAST)),
                 "ScaledUp", 1, id="claims-summed-per-device-class-other-class-does-not-help"),
    pytest.param(cluster(FAST, SLOW, *lvm_node("w1", nvme=str(100 * GiB)), nvme(), *pending(TWO_FAST)),
                 "NoScaleUp", 0, id="template-is-the-freest-ready-node-a-lower-bound"),
    pytest.param(cluster(FAST, *lvm_node("w1", hdd=G200), *lvm_node("w2", cpu_busy=True, hdd=G200), nvme(),
                         *pending(TWO_FAST)),
                 "NoScaleUp", 0, id="group-never-published-the-device-class-has-zero"),
    pytest.param(cluster(FAST, *lvm_node("w1", nvme="lots"), *lvm_node("w2", cpu_busy=True, nvme="lots"), nvme(),
                         *pending(TWO_FAST)),
                 "NoScaleUp", 0, id="malformed-annotation-is-no-capacity"),
    pytest.param(cluster(FAST, nvme(template=template(labels=NVME)), *pending(TWO_FAST)),
                 "ScaledUp", 1, id="cloud-template-unknown-device-class-is-unbounded"),
    pytest.param(cluster(LVM, *lvm_node("w1", nvme=G200), *lvm_node("w2", cpu_busy=True, **{"00default": G200}),
                         nvme(), *pending({"a": "lvm", "b": "lvm"})),
                 "ScaledUp", 1, id="class-without-parameter-uses-00default"),
    pytest.param(cluster(FAST, storage_class(), *lvm_node("w1", nvme=G200), nvme(),
                         *pending({"a": "fast", "r": "rok"})),
                 "NotNeeded", 0, id="rok-and-topolvm-claims-in-one-pod-fit"),
    pytest.param(cluster(FAST, storage_class(), *lvm_node("w1", nvme=G200),
                         *lvm_node("w2", cpu_busy=True, nvme=G200), nvme(),
                         *pending({"a": "fast", "r1": "rok", "r2": "rok"})),
                 "NoScaleUp", 0, id="rok-and-topolvm-claims-in-one-pod-rok-short"),
    pytest.param(cluster(FAST, csi_driver("topolvm.io"), *lvm_node("w1", nvme=G200),
                         csi_capacity("w1-nvme", "fast", {"kubernetes.io/hostname": "w1"}, "200Gi", "50Gi"), nvme(),
                         *pending(TWO_FAST)),
                 "ScaledUp", 1, id="published-maximum-volume-size-refuses-the-live-node-template-uses-the-pool"),
])
def test_scale_up_with_topolvm_pools(objects: ClusterObjects, result: str, increase: int) -> None:
    decision = plan(objects)
    assert decision.scale_up.result.value == result
    assert {i.group: i.delta for i in decision.scale_up.increases} == ({"nvme": increase} if increase else {})


def test_template_keeps_device_classes() -> None:
    """The template carries each device class the cluster's classes use, from the group's ready nodes."""
    objects = cluster(FAST, SLOW, LVM, *lvm_node("w1", nvme=str(50 * GiB), hdd="9"),
                      *lvm_node("w2", nvme=G200), nvme(), pod("p", "100m"))
    provider = SnapshotProvider(objects.node_groups, objects.nodes)
    found = build_context(objects, provider, options(), NOW).templates["nvme"]
    assert found is not None
    assert found.node.annotations == {"capacity.topolvm.io/00default": "0", "capacity.topolvm.io/hdd": "9",
                                      "capacity.topolvm.io/nvme": G200}


EXAMPLE = Path(__file__).parent / "data" / "topolvm-scale-up.yaml"


def test_plan_example_scales_up_for_device_class(capsys: pytest.CaptureFixture[str]) -> None:
    """The YAML case: the group's nodes lack ``nvme`` room, a new node has it; ``hdd`` is no help."""
    assert len(load_snapshot([str(EXAMPLE)], NAMES).storage_classes) == 2
    code = main(["plan", str(EXAMPLE), "--now=2026-06-01T12:00:00Z"])
    out, err = capsys.readouterr()
    assert (code or 0, err) == (0, "")
    scale_up = json.loads(out)["scaleUp"]
    assert scale_up["result"] == "ScaledUp"
    assert scale_up["increases"] == [{"nodeGroup": "nvme", "delta": 1, "newSize": 3}]

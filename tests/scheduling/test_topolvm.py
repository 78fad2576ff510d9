"""TopoLVM classes through the extender, in the two ways a TopoLVM cluster is configured today:
TopoLVM as *the* local provisioner (its per device class annotation is the capacity annotation,
claims summed), and TopoLVM publishing CSIStorageCapacity (checked per segment)."""

from __future__ import annotations

from kube.convert import convert_node
from kube.model import Node
from kube.names import StorageNames
from simulator.volumes import REASON_NOT_ENOUGH_SPACE
from tests.factories import ZONE, cluster, csi_capacity, csi_driver, node, node_json, pod_json, pvc, storage_class
from tests.scheduling.wire import extender_args, extender_at

TOPOLVM = StorageNames(provisioner="topolvm.io", capacity_annotation="capacity.topolvm.io/ssd")
GiB = 2**30


def topolvm_node(name: str, ssd: str | None) -> Node:
    obj = node_json(name)
    if ssd is not None:
        obj["metadata"]["annotations"]["capacity.topolvm.io/ssd"] = ssd
    obj["metadata"]["annotations"]["capacity.topolvm.io/hdd"] = str(10_000 * GiB)
    return convert_node(obj, TOPOLVM, [])


def test_topolvm_device_class_annotation_summed() -> None:
    objects = cluster(topolvm_node("small", str(100 * GiB)), topolvm_node("big", str(200 * GiB)),
                      topolvm_node("none", None), storage_class("ssd", "topolvm.io"),
                      pvc("a", "60Gi", "ssd"), pvc("b", "60Gi", "ssd"))
    with extender_at(objects, names=TOPOLVM) as (client, _, _):
        result = client.post("/filter", extender_args(pod_json("p", claims=["a", "b"]), names=["small", "big", "none"]))
    assert result["NodeNames"] == ["big"]
    assert result["FailedNodes"] == {"small": REASON_NOT_ENOUGH_SPACE, "none": REASON_NOT_ENOUGH_SPACE}


def test_topolvm_with_csi_storage_capacity() -> None:
    objects = cluster(node("a1", labels={ZONE: "a"}), node("b1", labels={ZONE: "b"}),
                      storage_class("lvm", "topolvm.io"), csi_driver("topolvm.io"),
                      csi_capacity("topolvm-a", "lvm", {ZONE: "a"}, "50Gi"),
                      csi_capacity("topolvm-b", "lvm", {ZONE: "b"}, "500Gi"), pvc("a", "100Gi", "lvm"))
    with extender_at(objects) as (client, _, _):
        result = client.post("/filter", extender_args(pod_json("p", claims=["a"]), names=["a1", "b1"]))
    assert result["NodeNames"] == ["b1"]
    assert result["FailedNodes"] == {"a1": REASON_NOT_ENOUGH_SPACE}

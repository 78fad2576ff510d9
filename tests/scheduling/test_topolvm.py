"""TopoLVM classes through the extender: TopoLVM as *the* local provisioner (its per device
class annotation is the capacity annotation, claims summed); TopoLVM next to Rok, one pool
per device class (``capacity.topolvm.io/<device-class>``, the class's ``topolvm.io/device-class``
parameter), reservations held per pool; and TopoLVM publishing CSIStorageCapacity (checked
per segment, plus the summed pool where the node publishes it)."""

from __future__ import annotations

from kube.convert import convert_node
from kube.model import Node
from kube.names import StorageNames
from simulator.volumes import REASON_NOT_ENOUGH_SPACE
from tests.factories import (
    ZONE,
    cluster,
    csi_capacity,
    csi_driver,
    node,
    node_json,
    pod,
    pod_json,
    pv,
    pvc,
    storage_class,
)
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


FAST = storage_class("fast", "topolvm.io", parameters={"topolvm.io/device-class": "nvme"})
SLOW = storage_class("slow", "topolvm.io", parameters={"topolvm.io/device-class": "hdd"})


def pooled(name: str, rok: str, nvme: int, hdd: int) -> Node:
    return node(name, storage_free=rok, annotations={"capacity.topolvm.io/nvme": str(nvme * GiB),
                                                     "capacity.topolvm.io/hdd": str(hdd * GiB)})


def test_rok_and_topolvm_claims_of_one_pod_each_in_its_pool() -> None:
    objects = cluster(pooled("both", "50Gi", 100, 0), pooled("rok-short", "10Gi", 100, 0),
                      pooled("nvme-short", "50Gi", 30, 1000), storage_class(), FAST, SLOW,
                      pvc("r", "40Gi"), pvc("f1", "30Gi", "fast"), pvc("f2", "30Gi", "fast"))
    with extender_at(objects) as (client, _, _):
        result = client.post("/filter", extender_args(pod_json("p", claims=["r", "f1", "f2"]),
                                                      names=["both", "rok-short", "nvme-short"]))
    assert result["NodeNames"] == ["both"]
    assert result["FailedNodes"] == {"rok-short": REASON_NOT_ENOUGH_SPACE, "nvme-short": REASON_NOT_ENOUGH_SPACE}


def test_reservation_holds_the_device_class_only() -> None:
    """Two pods racing for a device class's last bytes: the second waits; another class is free."""
    objects = cluster(pooled("last", "0", 100, 100), FAST, SLOW, pvc("a", "60Gi", "fast"), pvc("b", "60Gi", "fast"),
                      pvc("c", "60Gi", "slow"), *[pod(p, claims=[p]) for p in "abc"])
    with extender_at(objects) as (client, extender, view):
        first = client.post("/filter", extender_args(pod_json("a", claims=["a"]), names=["last"]))
        second = client.post("/filter", extender_args(pod_json("b", claims=["b"]), names=["last"]))
        other = client.post("/filter", extender_args(pod_json("c", claims=["c"]), names=["last"]))
        held = extender.book.get("uid-default-a")
        assert held is not None and held.pools == (("capacity.topolvm.io/nvme", 60 * GiB),)
        # TopoLVM provisioned a's volume (pinned to the node): the reservation ends.
        objects.claims[("default", "a")] = pvc("a", "60Gi", "fast", volume="pv-a")
        objects.volumes["pv-a"] = pv("pv-a", "60Gi", "fast", driver="topolvm.io", hosts=["last"],
                                     claim=("default", "a"))
        view.set(objects, nodes_changed=False)
        client.post("/filter", extender_args(pod_json("b", claims=["b"]), names=["last"]))
        assert extender.book.get("uid-default-a") is None
    assert (first["NodeNames"], second["NodeNames"], other["NodeNames"]) == (["last"], [], ["last"])
    assert second["FailedNodes"] == {"last": REASON_NOT_ENOUGH_SPACE}


def test_prioritize_scores_the_tightest_device_class_fit() -> None:
    """Claims of a TopoLVM device class: the node their bytes fill most scores 10, the loosest 0."""
    objects = cluster(pooled("tight", "0", 70, 0), pooled("mid", "0", 200, 0), pooled("loose", "0", 900, 0),
                      pooled("short", "0", 50, 0), FAST, SLOW, pvc("f1", "30Gi", "fast"), pvc("f2", "30Gi", "fast"))
    names = ["tight", "mid", "loose", "short"]
    with extender_at(objects) as (client, _, _):
        scores = client.post("/prioritize", extender_args(pod_json("p", claims=["f1", "f2"]), names=names))
    by_host = {s["Host"]: s["Score"] for s in scores}
    assert by_host["tight"] == 10
    assert by_host["loose"] == 0
    assert 0 < by_host["mid"] < 10
    assert by_host["short"] == 0, "a node that cannot hold the claims is neutral"


def test_a_reservation_past_a_published_value_is_no_capacity_not_unpublished() -> None:
    """Held bytes beyond a node's published free bytes leave zero, not the "not published" mark
    (which would hand the decision to CSIStorageCapacity objects that may still show room)."""
    def lvm(free_gib: int) -> Node:
        return node("n1", labels={ZONE: "a"}, annotations={"capacity.topolvm.io/nvme": str(free_gib * GiB)})

    objects = cluster(lvm(100), FAST, csi_driver("topolvm.io"), csi_capacity("nvme-a", "fast", {ZONE: "a"}, "1Ti"),
                      pvc("a", "80Gi", "fast"), pvc("b", "10Gi", "fast"), *[pod(p, claims=[p]) for p in "ab"])
    with extender_at(objects) as (client, _, view):
        first = client.post("/filter", extender_args(pod_json("a", claims=["a"]), names=["n1"]))
        # Something else used 40Gi meanwhile: 60Gi published, 80Gi still held for pod a.
        objects.nodes = [lvm(60)]
        view.set(objects, nodes_changed=True)
        second = client.post("/filter", extender_args(pod_json("b", claims=["b"]), names=["n1"]))
    assert first["NodeNames"] == ["n1"]
    assert second["NodeNames"] == [] and second["FailedNodes"] == {"n1": REASON_NOT_ENOUGH_SPACE}

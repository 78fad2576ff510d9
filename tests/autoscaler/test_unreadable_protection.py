"""An object the live view could not read never makes a node removable (storage-semantics 3.8)."""

from __future__ import annotations

import pytest

from autoscaler.scaledown.unreadable import unreadable_protection
from kube.model import ClusterObjects, Unreadable
from tests.autoscaler.scaledown_helpers import group, reasons, scaled_cluster
from tests.factories import node, plan, pod, pv

BAD_PV = "PersistentVolume/bad-pv"


def _objects(*unreadable: Unreadable) -> ClusterObjects:
    objects = scaled_cluster(
        node("w1", labels={"zone": "a"}), node("w2", labels={"zone": "a"}), node("w3", labels={"zone": "b"}),
        node("busy", "8"), group("g", "w1", "w2", "w3", "busy"), pod("load", "5", "1Gi", "busy"),
        pv("data-pv", "10Gi", "rok", hosts=["w3"], claim=("default", "data")))
    objects.unreadable.extend(unreadable)
    return objects


def _pv(values: frozenset[str] | None) -> Unreadable:
    return Unreadable("PersistentVolume", BAD_PV, "spec.capacity: bad", affinity_values=values)


CASES = [
    pytest.param(_pv(frozenset({"w1"})), {"w1": [BAD_PV]}, (), id="pv-pinned-by-hostname"),
    pytest.param(_pv(frozenset({"a"})), {"w1": [BAD_PV], "w2": [BAD_PV]}, (), id="pv-zone-wide-keeps-the-zone"),
    pytest.param(_pv(frozenset()), {}, (), id="pv-without-affinity-pins-nothing"),
    pytest.param(_pv(None), {}, (BAD_PV,), id="unreadable-affinity-holds-everything"),
    pytest.param(Unreadable("PersistentVolumeClaim", "PersistentVolumeClaim/default/data", "m",
                            claim=("default", "data")),
                 {"w3": ["PersistentVolumeClaim/default/data"]}, (), id="claim-keeps-its-pvs-node"),
    pytest.param(Unreadable("Pod", "Pod/default/p", "m", node_name="w2"), {"w2": ["Pod/default/p"]}, (),
                 id="pod-keeps-its-node"),
]


@pytest.mark.parametrize(("item", "nodes", "hold"), CASES)
def test_protection(item: Unreadable, nodes: dict[str, list[str]], hold: tuple[str, ...]) -> None:
    shield = unreadable_protection(_objects(item))
    assert {n: [r.removesuffix(" (could not be read)") for r in refs] for n, refs in shield.nodes.items()} == nodes
    assert shield.hold == hold


def test_the_planner_keeps_the_nodes_and_names_the_object() -> None:
    down = plan(_objects(_pv(frozenset({"w1"})))).scale_down
    assert reasons(down)["w1"] == "NodeHasLocalVolumes"
    detail = next(u.detail for u in down.unremovable if u.node == "w1")
    assert detail.endswith(f"{BAD_PV} (could not be read)")
    assert "w2" in down.unneeded, "a node the object cannot pin is not held"


def test_an_unresolved_object_holds_scale_down() -> None:
    down = plan(_objects(_pv(None))).scale_down
    assert down.result == "Skipped"
    assert down.skipped_because.endswith(BAD_PV)
    assert down.to_delete == []

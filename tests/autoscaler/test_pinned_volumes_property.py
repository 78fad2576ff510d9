"""Property: no plan ever removes a node that holds a pinned, non-migratable local volume.

Random small clusters (one node group, a few nodes in one or two zones, pods bound to
them, pending pods) get bound PVs of node-local drivers (in-tree ``local``, TopoLVM,
OpenEBS LVM) whose required node affinity uses the hostname or the driver's own node
key, or a zone. Whatever ``plan`` decides, a node that a PV's affinity selects alone is
neither removed nor unneeded (storage-semantics 3.6): its data would be lost.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from kube.convert import convert_pv, convert_pvc
from kube.names import HOSTNAME_LABEL
from tests.autoscaler.scaledown_helpers import group, scaled_cluster
from tests.factories import ZONE, Json, expr, node, plan, pod, pv_json, pvc_json

TOPOLVM_KEY = "topology.topolvm.io/node"
OPENEBS_KEY = "openebs.io/nodename"
KEYS = (HOSTNAME_LABEL, TOPOLVM_KEY, OPENEBS_KEY, ZONE)
DRIVERS = ("local", "topolvm.io", "local.csi.openebs.io")


@dataclass(frozen=True)
class Volume:
    node: int
    key: str
    driver: str
    used: bool


@dataclass(frozen=True)
class Shape:
    zones: tuple[str, ...]
    loads: tuple[int, ...]  # millicores of a pod on each node (0: none)
    volumes: tuple[Volume, ...]
    pending: int
    threshold: str


@st.composite
def shapes(draw: st.DrawFn) -> Shape:
    count = draw(st.integers(1, 5))
    zones = tuple(draw(st.sampled_from("ab")) for _ in range(count))
    loads = tuple(draw(st.sampled_from((0, 0, 500, 1500, 3000))) for _ in range(count))
    volumes = tuple(
        Volume(draw(st.integers(0, count - 1)), draw(st.sampled_from(KEYS)), draw(st.sampled_from(DRIVERS)),
               draw(st.booleans()))
        for _ in range(draw(st.integers(0, 4)))
    )
    return Shape(zones, loads, volumes, draw(st.integers(0, 2)), draw(st.sampled_from(("0.5", "1"))))


def _labels(name: str, zone: str) -> dict[str, str]:
    return {ZONE: zone, TOPOLVM_KEY: name, OPENEBS_KEY: name}


def _build(shape: Shape) -> tuple[list[object], dict[str, set[str]]]:
    names = [f"n{i}" for i in range(len(shape.zones))]
    labels = {n: {HOSTNAME_LABEL: n, **_labels(n, z)} for n, z in zip(names, shape.zones, strict=True)}
    objects: list[object] = [node(n, labels=_labels(n, z)) for n, z in zip(names, shape.zones, strict=True)]
    objects.append(group("g", *names, max_size=10))
    for n, load in zip(names, shape.loads, strict=True):
        if load:
            objects.append(pod(f"app-{n}", f"{load}m", "1Gi", n))
    pinned: dict[str, set[str]] = {}
    for i, vol in enumerate(shape.volumes):
        target = names[vol.node]
        value = labels[target][vol.key]
        affinity: Json = {"nodeSelectorTerms": [{"matchExpressions": [expr(vol.key, "In", value)]}]}
        objects.append(convert_pv(pv_json(f"pv{i}", "10Gi", "local-disk", affinity=affinity,
                                          claim=("default", f"data{i}"), driver=vol.driver)))
        objects.append(convert_pvc(pvc_json(f"data{i}", "10Gi", "local-disk", volume=f"pv{i}")))
        if vol.used:
            objects.append(pod(f"db{i}", "100m", "100Mi", target, claims=[f"data{i}"]))
        selected = {n for n in names if labels[n][vol.key] == value}
        if len(selected) == 1:
            pinned.setdefault(target, set()).add(f"pv{i}")
    for i in range(shape.pending):
        objects.append(pod(f"pending{i}", "500m", "1Gi"))
    return objects, pinned


@settings(max_examples=120, deadline=None)
@given(shapes())
def test_no_plan_removes_a_node_with_a_pinned_local_volume(shape: Shape) -> None:
    objects, pinned = _build(shape)
    decision = plan(scaled_cluster(*objects), f"--scale-down-utilization-threshold={shape.threshold}")  # type: ignore[arg-type]
    down = decision.scale_down
    for name in pinned:
        assert name not in down.removed, (name, pinned[name])
        assert name not in down.unneeded, (name, pinned[name])

"""Differential: for random pods and nodes, the extender's filter (over HTTP) and the
autoscaler's predicate checker agree on every node, reasons included. The clusters mix
Rok, TopoLVM (two device classes, annotations missing or malformed on some nodes, its
CSIDriver publishing CSIStorageCapacity on odd seeds) and a CSIStorageCapacity driver."""

from __future__ import annotations

import random
from typing import Any

import pytest

from kube.model import ClusterObjects
from tests.factories import (
    ZONE,
    cluster,
    csi_capacity,
    csi_driver,
    node,
    pod,
    pod_json,
    pv,
    pvc,
    storage_class,
    world,
)
from tests.scheduling.wire import extender_args, extender_at

CSI = "csi.example.com"
ZONES = ("a", "b", "c")
TOPOLVM_VALUES = (None, "0", "garbage", str(30 * 2**30), str(100 * 2**30), str(400 * 2**30))


def random_cluster(rng: random.Random, pods: int, topolvm_publishes: bool = False,
                   ) -> tuple[ClusterObjects, list[dict[str, Any]]]:
    objects: list[Any] = [
        storage_class("rok"), storage_class("rok-a", allowed_topologies={ZONE: ["a"]}),
        storage_class("imm", binding="Immediate"), storage_class("net", CSI), csi_driver(CSI),
        storage_class("static", "kubernetes.io/no-provisioner"),
        storage_class("lvm", "topolvm.io"), storage_class("lvm-fast", "topolvm.io",
                                                          parameters={"topolvm.io/device-class": "nvme"}),
    ]
    if topolvm_publishes:
        objects.append(csi_driver("topolvm.io"))
    nodes = []
    for i in range(12):
        free = rng.choice([None, "0", "10Gi", "50Gi", "100Gi", "120Gi", "500Gi", "1Ti"])
        annotations = {}
        for device_class in ("00default", "nvme"):
            value = rng.choice(TOPOLVM_VALUES)
            if value is not None:
                annotations[f"capacity.topolvm.io/{device_class}"] = value
        nodes.append(node(f"n{i}", labels={ZONE: rng.choice(ZONES)}, storage_free=free, annotations=annotations,
                          warns=True))
    objects += nodes
    objects += [csi_capacity(f"cap-{z}", "net", {ZONE: z}, rng.choice(["20Gi", "200Gi"]),
                             rng.choice([None, "50Gi"])) for z in ZONES[:2]]
    objects += [csi_capacity(f"lvm-{z}", "lvm-fast", {ZONE: z}, rng.choice(["50Gi", "500Gi"]),
                             rng.choice([None, "60Gi"])) for z in ZONES[1:]]
    for i in range(4):  # Available local PVs for the no-provisioner class
        objects.append(pv(f"static-{i}", rng.choice(["10Gi", "100Gi"]), "static", driver="local",
                          hosts=[rng.choice(nodes).name]))
    for i in range(2):  # and for a TopoLVM class: a claim binds one or is provisioned in the pool
        objects.append(pv(f"lvm-avail-{i}", rng.choice(["10Gi", "100Gi"]), "lvm-fast", driver="topolvm.io",
                          hosts=[rng.choice(nodes).name]))
    raw_pods = []
    for p in range(pods):
        claims = []
        for c in range(rng.randint(0, 3)):
            name = f"p{p}-c{c}"
            kind = rng.choice(["rok", "rok", "rok-a", "imm", "net", "static", "pinned", "unpinned",
                               "lvm", "lvm-fast", "lvm-fast"])
            size = rng.choice(["5Gi", "40Gi", "60Gi", "100Gi", "300Gi"])
            if kind == "pinned":
                objects += [pvc(name, size, volume=f"pv-{name}"),
                            pv(f"pv-{name}", size, hosts=[rng.choice(nodes).name], claim=("default", name))]
            elif kind == "unpinned":
                objects += [pvc(name, size, volume=f"pv-{name}"), pv(f"pv-{name}", size, claim=("default", name))]
            else:
                objects.append(pvc(name, size, kind))
            claims.append(name)
        raw_pods.append(pod_json(f"p{p}", cpu=None, memory=None, claims=claims))
    return cluster(*objects), raw_pods


@pytest.mark.parametrize("seed", [pytest.param(s, id=f"seed-{s}") for s in range(25)])
def test_extender_agrees_with_predicate_checker(seed: int) -> None:
    rng = random.Random(seed)
    objects, raw_pods = random_cluster(rng, pods=12, topolvm_publishes=seed % 2 == 1)
    names = [n.name for n in objects.nodes]
    simulated = world(objects)
    with extender_at(objects) as (client, _, _):
        for raw in raw_pods:
            subject = pod(raw["metadata"]["name"], cpu=None, memory=None,
                          claims=[v["persistentVolumeClaim"]["claimName"] for v in raw["spec"].get("volumes", [])])
            plan = simulated.plan(subject)
            expected = {name: simulated.checker.check(subject, plan, simulated.idx(name)) for name in names}
            # Each pod is judged alone: clear what the last one held (the pods are not racing here).
            result = client.post("/filter", extender_args(raw, names=names))
            client.post("/filter", extender_args(pod_json(raw["metadata"]["name"]), names=names))
            assert set(result["NodeNames"]) == {n for n, why in expected.items() if why is None}, raw
            assert result["FailedNodes"] == {n: why.reason for n, why in expected.items() if why is not None}, raw

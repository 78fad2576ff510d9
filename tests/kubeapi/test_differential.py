"""The live view equals the file view: the same objects through the watch caches and through ``plan``'s loader."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from kube.load import load_snapshot
from kube.model import ClusterObjects
from kube.names import StorageNames
from kubeapi import KubeClusterAPI
from tests.factories import node_json, pod_json
from tests.fakeapi import FakeAPIServer
from tests.kubeapi.conftest import eventually

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.yaml"))


def _documents(path: Path) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
        if doc:
            out.extend(doc.get("items") or [] if str(doc.get("kind", "")).endswith("List") else [doc])
    return out


def _comparable(objects: ClusterObjects) -> dict[str, object]:
    return {
        "nodes": sorted(objects.nodes, key=lambda n: n.name),
        "pods": sorted(objects.pods, key=lambda p: (p.namespace, p.name)),
        "claims": objects.claims, "volumes": objects.volumes, "storage_classes": objects.storage_classes,
        "pdbs": sorted(objects.pdbs, key=lambda b: (b.namespace, b.name)),
        "csi": (objects.csi_capacities, objects.csi_drivers, objects.csi_nodes),
        "controllers": objects.controllers, "namespaces": objects.namespaces,
        "priority_config": objects.priority_config, "warnings": sorted(objects.warnings),
    }


@pytest.mark.parametrize("objects", [
    *(pytest.param(_documents(p), id=p.stem) for p in EXAMPLES),
    pytest.param([node_json("n0", storage_free="100Gi", storage_max="1Ti",
                            taints=[{"key": "k", "effect": "NoSchedule"}]),
                  pod_json("p", node="n0", pending=False, claims=["data"], labels={"app": "a"}),
                  {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default", "labels": {"t": "x"}}},
                  {"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "cluster-autoscaler-priority-expander", "namespace": "kube-system"},
                   "data": {"priorities": "10:\n  - .*\n"}},
                  {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": "rok.arrikto.com"},
                   "spec": {"storageCapacity": True}},
                  {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": "n0"},
                   "spec": {"drivers": [{"name": "rok.arrikto.com", "nodeID": "n0"}]}}],
                 id="namespaces-priority-csi"),
])
def test_live_view_equals_the_file_view(api: FakeAPIServer, cluster: KubeClusterAPI, tmp_path: Path,
                                        objects: list[dict[str, Any]]) -> None:
    for obj in objects:
        if obj.get("kind") != "NodeGroup":  # the snapshot's own kind; live groups come from the cloud
            api.state.put(obj)
    stored = api.state.objects()
    dump = tmp_path / "dump.json"
    dump.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": stored}), encoding="utf-8")
    expected = _comparable(load_snapshot([str(dump)], StorageNames()))
    version = api.state.rv

    # Bookmarks bring every cache to the server's resourceVersion once all events are in.
    eventually(lambda: all(int(i.resource_version or 0) >= version for i in cluster.caches.informers.values()),
               what="caches caught up")
    assert _comparable(cluster.list_objects()) == expected

"""Issue 11, item 2: the typed decoding of JSON ``List`` files equals the ordinary dict path.

``kube.typedload.try_load`` either declines (``None``: the ordinary path reads the file)
or returns exactly what ``kube.load.load_objects`` converts. These tests hold that over
every shipped snapshot, a generated bench snapshot, every field of the bad-input base
snapshot broken in several ways, and list shapes; and that an error is the ordinary
path's one line, word for word.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from kube.convert import InputError
from kube.load import load_objects, load_snapshot
from kube.model import ClusterObjects
from kube.names import StorageNames
from kube.typedload import try_load
from tests.app.badinput import base

NAMES = StorageNames()
ROOT = Path(__file__).resolve().parents[2]
SNAPSHOTS = sorted([*(ROOT / "examples").glob("*.yaml"),
                    *(ROOT / "examples" / "cases").glob("*.snapshot.yaml")])
#: Values put in place of each field of the base snapshot: wrong types, bad numbers, empties.
BAD_VALUES: list[Any] = [None, 5, -1, 2**70, 1.5, True, "x", "", "-1", [1], [], {}, {"x": 1}]


def _plain(paths: Sequence[str]) -> ClusterObjects | str:
    try:
        return load_objects(paths, NAMES)
    except InputError as exc:
        return str(exc)


def _loaded(paths: Sequence[str]) -> ClusterObjects | str:
    try:
        return load_snapshot(paths, NAMES)
    except InputError as exc:
        return str(exc)


def assert_same(paths: Sequence[str], *, typed: bool | None = None) -> ClusterObjects | None:
    """The typed path declines or equals the dict path; ``load_snapshot`` answers as the dict path."""
    plain = _plain(paths)
    result = try_load(paths, NAMES)
    if isinstance(plain, str):
        assert result is None, plain
    elif result is not None:
        assert result == plain
    if typed is not None:
        assert (result is not None) == typed
    loaded, reference = _loaded(paths), _plain(paths)
    if isinstance(reference, ClusterObjects) and isinstance(loaded, ClusterObjects):
        reference.nodes.sort(key=lambda n: n.name)
        assert loaded == reference
    elif isinstance(reference, str):
        assert loaded == reference
    return result


def _as_json_list(objects: list[Any], path: Path, kind: str = "List") -> str:
    path.write_text(json.dumps({"apiVersion": "v1", "kind": kind, "items": objects}, default=str),
                    encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("snapshot", [pytest.param(p, id=p.name) for p in SNAPSHOTS])
def test_shipped_snapshots_as_json_lists(snapshot: Path, tmp_path: Path) -> None:
    objects = [o for o in yaml.safe_load_all(snapshot.read_text(encoding="utf-8")) if o is not None]
    # A failing case (bad-input-*) must fall back; every other case must take the typed path.
    expect_typed = isinstance(_plain([str(snapshot)]), ClusterObjects)
    assert_same([_as_json_list(objects, tmp_path / "s.json")], typed=expect_typed)


def test_generated_bench_snapshot(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    subprocess.run([sys.executable, str(ROOT / "tools" / "gen-bench-snapshot"), "200", "30",
                    "100", str(out), "--seed", "1"], check=True, timeout=60, capture_output=True)
    result = assert_same([str(out)], typed=True)
    assert result is not None and len(result.pods) > 6000 and result.volumes and result.claims


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, item in value.items():
            out.extend(_paths(item, (*prefix, key)))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            out.extend(_paths(item, (*prefix, i)))
    return out


def extra() -> list[Any]:
    """Objects with the fields the base snapshot leaves out (all read by the typed decoders)."""
    return [
        {"apiVersion": "v1", "kind": "Node",
         "metadata": {"name": "w9", "labels": {"rok.arrikto.com/max-instance-capacity": "lots"},
                      "annotations": {"rok.arrikto.com/capacity": "12GiB", "capacity.topolvm.io/ssd": "x",
                                      "cluster-autoscaler.kubernetes.io/scale-down-disabled": "true"},
                      "creationTimestamp": "2026-05-01T00:00:00Z", "deletionTimestamp": "2026-05-02T00:00:00Z"},
         "spec": {"providerID": "aws:///us-east-1a/i-9", "unschedulable": True,
                  "taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}]},
         "status": {"capacity": {"cpu": "8", "memory": "32Gi", "pods": "110", "nvidia.com/gpu": "1"},
                    "allocatable": {"cpu": "7500m", "memory": "30Gi", "pods": "110"},
                    "conditions": [{"type": "MemoryPressure", "status": "False"},
                                   {"type": "Ready", "status": "True",
                                    "lastTransitionTime": "2026-05-01T00:01:00Z"}]}},
        {"apiVersion": "v1", "kind": "PersistentVolume",
         "metadata": {"name": "pv-local", "labels": {"topology.kubernetes.io/zone": "a__b"},
                      "creationTimestamp": "2026-05-01T00:00:00Z"},
         "spec": {"capacity": {"storage": "5Gi"}, "local": {"path": "/mnt"}, "persistentVolumeReclaimPolicy": "Delete",
                  "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                      {"key": "kubernetes.io/hostname", "operator": "In", "values": ["w1"]}]}]}}},
         "status": {"phase": "Available"}},
        {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv-host"},
         "spec": {"capacity": {"storage": "1Gi"}, "hostPath": {"path": "/data"}, "accessModes": ["ReadWriteOncePod"]}},
        {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
         "metadata": {"name": "eph", "namespace": "default",
                      "annotations": {"volume.kubernetes.io/selected-node": "w1"},
                      "ownerReferences": [{"kind": "Pod", "name": "p", "uid": "u9", "controller": True}]},
         "spec": {"storageClassName": "rok",
                  "resources": {"requests": {"storage": "1Gi"}, "limits": {"storage": "2Gi"}}}},
        {"apiVersion": "v1", "kind": "Pod",
         "metadata": {"name": "multi", "namespace": "default", "uid": "u8", "labels": {"app": "m", "v": "1"},
                      "annotations": {"cluster-autoscaler.kubernetes.io/safe-to-evict": "true",
                                      "cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes": "a,b"},
                      "creationTimestamp": "2026-05-01T00:00:00Z", "deletionTimestamp": "2026-05-02T00:00:00Z",
                      "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": "u1",
                                           "controller": True}]},
         "spec": {"nodeName": "w1", "priority": 5, "terminationGracePeriodSeconds": 0, "restartPolicy": "Never",
                  "overhead": {"cpu": "10m"},
                  "containers": [{"name": "a", "image": "i", "resources": {"requests": {"cpu": "1"},
                                                                           "limits": {"memory": "1Gi"}},
                                  "ports": [{"containerPort": 80, "hostPort": 8080}]},
                                 {"name": "b", "resources": {"requests": {"cpu": "100m", "memory": "1Mi"}}}],
                  "initContainers": [{"name": "s", "restartPolicy": "Always", "ports": [{"containerPort": 9}],
                                      "resources": {"requests": {"cpu": "50m"}}},
                                     {"name": "i", "resources": {"requests": {"memory": "2Gi"}}}],
                  "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable":
                                                 "DoNotSchedule", "labelSelector": {"matchLabels": {"app": "m"}},
                                                 "matchLabelKeys": ["v"]}],
                  "nodeSelector": {"disk": "ssd"},
                  "volumes": [{"name": "e", "ephemeral": {"volumeClaimTemplate": {}}},
                              {"name": "t", "emptyDir": {"sizeLimit": "1Gi"}}, {"name": "h", "hostPath": {}}]},
         "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"},
                                                      {"type": "PodScheduled", "status": "False",
                                                       "reason": "Unschedulable"}]}},
    ]


def objects_under_test() -> list[Any]:
    return [*base(), *extra()]


def test_extra_objects_take_the_typed_path(tmp_path: Path) -> None:
    result = assert_same([_as_json_list(objects_under_test(), tmp_path / "s.json")], typed=True)
    assert result is not None and len(result.volumes) == 3 and len(result.claims) == 2
    assert len(result.warnings) == 3, result.warnings  # the node's three storage values that are no numbers


def _mutations() -> list[Any]:
    cases = []
    for index, obj in enumerate(objects_under_test()):
        if obj["kind"] not in ("Pod", "Node", "PersistentVolume", "PersistentVolumeClaim"):
            continue
        for path in _paths(obj):
            cases.append(pytest.param(index, path, id=f"{obj['kind']}-{'.'.join(map(str, path))}"))
    return cases


@pytest.mark.parametrize(("index", "path"), _mutations())
def test_every_field_broken_gives_the_same_answer(index: int, path: tuple[Any, ...], tmp_path: Path) -> None:
    """Each field of the big kinds replaced by each bad value, and removed: same objects or same error."""
    for value in [*BAD_VALUES, "delete"]:
        objects = objects_under_test()
        parent: Any = objects[index]
        for step in path[:-1]:
            parent = parent[step]
        if value == "delete":
            if not isinstance(parent, dict):
                continue
            del parent[path[-1]]
        else:
            parent[path[-1]] = copy.deepcopy(value)
        assert_same([_as_json_list(objects, tmp_path / "s.json")])


@pytest.mark.parametrize(("document", "typed"), [
    pytest.param({"kind": "List", "items": base()}, True, id="list"),
    pytest.param({"kind": "List", "items": None}, True, id="items-null"),
    pytest.param({"kind": "List", "items": [*base(), None]}, False, id="null-item"),
    pytest.param({"kind": "List", "items": [*base(), 5]}, False, id="number-item"),
    pytest.param({"kind": "List", "items": [{"kind": "List", "items": []}]}, False, id="list-in-list"),
    pytest.param({"kind": "List", "items": [{"metadata": {"name": "x"}}]}, False, id="item-without-kind"),
    pytest.param({"kind": "List", "items": {"a": 1}}, False, id="items-map"),
    pytest.param({"kind": "PodList", "items": [{k: v for k, v in base()[2].items() if k != "kind"}]}, True,
                 id="pod-list-items-without-kind"),
    pytest.param({"kind": "NodeList", "items": [{k: v for k, v in base()[0].items() if k != "kind"}]}, True,
                 id="node-list"),
    pytest.param({"kind": "List", "items": [base()[2], base()[2]]}, False, id="duplicate-pod"),
    pytest.param({"kind": "List", "items": [base()[4], base()[4]]}, False, id="duplicate-claim"),
    pytest.param({"kind": "List", "items": [{**base()[2], "metadata": None}]}, False, id="pod-metadata-null"),
    pytest.param({"kind": "List", "items": [{**base()[2], "spec": None, "status": None}]}, True,
                 id="pod-spec-null"),
    pytest.param([*base()], False, id="array"),
    pytest.param(base()[2], False, id="one-object"),
])
def test_list_shapes(document: Any, typed: bool, tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    assert_same([str(path)], typed=typed)


def test_duplicate_keys_keep_the_last_as_the_dict_path(tmp_path: Path) -> None:
    pod = json.dumps(base()[2])
    text = '{"kind": "List", "items": [' + pod[:-1] + ', "spec": {"containers": []}, "metadata": ' \
        + json.dumps(base()[2]["metadata"] | {"name": "other"}) + "}]}"
    path = tmp_path / "s.json"
    path.write_text(text, encoding="utf-8")
    result = assert_same([str(path)], typed=True)
    assert result is not None and result.pods[0].name == "other"


def test_several_files_and_yaml_fall_back_together(tmp_path: Path) -> None:
    first = _as_json_list(base()[:3], tmp_path / "a.json")
    second = _as_json_list(base()[3:], tmp_path / "b.json")
    assert_same([first, second], typed=True)
    again = _as_json_list(base()[2:3], tmp_path / "c.json")
    assert_same([first, again], typed=False)  # the pod twice, across files: the dict path names both files
    yaml_file = tmp_path / "d.yaml"
    yaml_file.write_text(yaml.safe_dump_all(base()[3:]), encoding="utf-8")
    assert_same([first, str(yaml_file)], typed=False)

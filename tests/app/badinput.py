"""A small valid snapshot of every kind ``plan`` reads, and ways to break it (shared by the bad-input tests)."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml

Json = dict[str, Any]
NOW_FLAG = "--now=2026-06-01T12:00:00Z"
T0 = "2026-05-01T00:00:00Z"
CAPACITY = {"cpu": "8", "memory": "32Gi", "pods": "110"}

Run = Callable[[Sequence[str]], tuple[int, str, str]]


def base() -> list[Json]:
    """Every kind, valid: a node of group ``general``, a pod with a claim, its owner, storage, budget."""
    return copy.deepcopy([
        {"apiVersion": "v1", "kind": "Node",
         "metadata": {"name": "w1", "labels": {"ng": "general"}, "annotations": {}, "creationTimestamp": T0},
         "spec": {"providerID": "sim:///general/w1", "taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}]},
         "status": {"capacity": dict(CAPACITY), "allocatable": dict(CAPACITY),
                    "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": T0}]}},
        {"apiVersion": "autoscaler.storage.dev/v1alpha1", "kind": "NodeGroup", "metadata": {"name": "general"},
         "spec": {"minSize": 1, "maxSize": 4, "nodeSelector": {"ng": "general"}, "pricePerHour": 0.5,
                  "template": {"metadata": {"labels": {"ng": "general"}},
                               "status": {"capacity": dict(CAPACITY), "allocatable": dict(CAPACITY)}}}},
        {"apiVersion": "v1", "kind": "Pod",
         "metadata": {"name": "p1", "namespace": "default", "labels": {"app": "web"}, "creationTimestamp": T0,
                      "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web",
                                           "uid": "u1", "controller": True}]},
         "spec": {"nodeName": "w1", "priority": 0,
                  "containers": [{"name": "c", "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                                  "ports": [{"containerPort": 80}]}],
                  "tolerations": [{"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"}],
                  "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]},
         "status": {"phase": "Running"}},
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web", "namespace": "default",
                                                                   "uid": "u1"},
         "spec": {"replicas": 1}},
        {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data", "namespace": "default"},
         "spec": {"storageClassName": "rok", "accessModes": ["ReadWriteOnce"],
                  "resources": {"requests": {"storage": "10Gi"}}, "volumeName": "pv1"},
         "status": {"phase": "Bound"}},
        {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv1"},
         "spec": {"storageClassName": "rok", "capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"],
                  "claimRef": {"namespace": "default", "name": "data"}, "csi": {"driver": "rok"}},
         "status": {"phase": "Bound"}},
        {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "rok"},
         "provisioner": "rok", "volumeBindingMode": "WaitForFirstConsumer"},
        {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web", "namespace": "default"},
         "spec": {"selector": {"matchLabels": {"app": "web"}}}, "status": {"disruptionsAllowed": 1}},
        {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": "rok"},
         "spec": {"storageCapacity": False}},
        {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": "w1"},
         "spec": {"drivers": [{"name": "rok"}]}},
        {"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment", "metadata": {"name": "csi-1"},
         "spec": {"attacher": "ebs.csi.aws.com", "nodeName": "w1", "source": {"persistentVolumeName": "pv1"}},
         "status": {"attached": True}},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default", "labels": {"team": "a"}}},
    ])


def find(objects: list[Json], kind: str) -> Json:
    return next(o for o in objects if o["kind"] == kind)


_STEP = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def set_path(obj: Any, path: str, value: Any) -> None:
    """``set_path(pod, "spec.containers[0].ports[0].hostPort", 70000)``."""
    steps: list[str | int] = [int(i) if i else k for k, i in _STEP.findall(path)]
    for step in steps[:-1]:
        if isinstance(step, str) and isinstance(obj, dict) and step not in obj:
            obj[step] = {}
        obj = obj[step]
    obj[steps[-1]] = value


def broken(kind: str, path: str, value: Any) -> str:
    """The base snapshot with one field of the first object of ``kind`` set to ``value``, as YAML."""
    objects = base()
    set_path(find(objects, kind), path, value)
    return dump(objects)


def dump(objects: Sequence[Any]) -> str:
    return yaml.safe_dump_all(objects, sort_keys=False)


def write(tmp_path: Path, text: str | bytes, name: str = "snapshot.yaml") -> str:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return str(path)


def assert_one_line_error(result: tuple[int, str, str], *parts: str) -> str:
    """Exit 2, nothing on stdout, one stderr line holding each of ``parts`` in order."""
    code, out, err = result
    assert code == 2, err
    assert out == ""
    assert err.endswith("\n") and err.count("\n") == 1, err
    assert err.startswith("autoscaler "), err
    position = 0
    for part in parts:
        found = err.find(part, position)
        assert found >= 0, f"{part!r} not in {err!r}"
        position = found + len(part)
    assert "Error)" not in err and "unreadable object" not in err, err
    return err

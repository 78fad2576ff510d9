"""Every kind the snapshot reads: where it is listed and watched, and how one object becomes the model.

Conversion goes through ``kube.convert.Converter`` (the same code ``plan`` uses on
files) one object at a time: the converter appends to its ``ClusterObjects`` and the
extractor here takes the object straight back out, so nothing accumulates.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec

from kube.convert import Converter
from kube.convert.memo import Memos
from kube.model import ClusterObjects
from kube.names import PRIORITY_CONFIGMAP
from kube.typedpods import PodDecoder
from kube.typedvolumes import VolumeDecoder

__all__ = ["CONTROLLER_CACHES", "KINDS", "Key", "Kind", "TypedDecoder", "convert_one", "typed_decoder"]

Json = dict[str, Any]
#: (namespace, name); namespace "" for cluster-scoped objects.
Key = tuple[str, str]


def _pop_list(attr: str) -> Callable[[ClusterObjects], object]:
    def take(objects: ClusterObjects) -> object:
        return getattr(objects, attr).pop()
    return take


def _pop_dict(attr: str) -> Callable[[ClusterObjects], object]:
    def take(objects: ClusterObjects) -> object:
        return getattr(objects, attr).popitem()[1]
    return take


def _take_namespace(objects: ClusterObjects) -> object:
    return objects.namespaces.popitem()[1]


def _take_priority(objects: ClusterObjects) -> object:
    config, objects.priority_config = objects.priority_config, None
    return config


@dataclass(frozen=True, slots=True)
class Kind:
    """One watched resource."""

    #: The cache's name for it (``pods``, ``storageclasses``, ...).
    name: str
    kind: str
    #: Collection path (``{namespace}`` is filled for the priority ConfigMap).
    path: str
    take: Callable[[ClusterObjects], object]
    field_selector: str = ""
    #: A missing resource (404 on LIST: an older cluster) is an empty cache, not an error.
    optional: bool = False
    #: Groups the cache by this value of each model object (pods: by node name).
    index: Callable[[Any], str] | None = None


_CONTROLLERS = (
    ("replicasets", "ReplicaSet", "/apis/apps/v1/replicasets"),
    ("statefulsets", "StatefulSet", "/apis/apps/v1/statefulsets"),
    ("deployments", "Deployment", "/apis/apps/v1/deployments"),
    ("daemonsets", "DaemonSet", "/apis/apps/v1/daemonsets"),
    ("jobs", "Job", "/apis/batch/v1/jobs"),
    ("replicationcontrollers", "ReplicationController", "/api/v1/replicationcontrollers"),
)
#: The caches whose objects are controllers (``ClusterObjects.controllers``).
CONTROLLER_CACHES = tuple(name for name, _, _ in _CONTROLLERS)

KINDS: tuple[Kind, ...] = (
    Kind("nodes", "Node", "/api/v1/nodes", _pop_list("nodes")),
    Kind("pods", "Pod", "/api/v1/pods", _pop_list("pods"), index=lambda pod: str(pod.node_name)),
    Kind("persistentvolumeclaims", "PersistentVolumeClaim", "/api/v1/persistentvolumeclaims", _pop_dict("claims")),
    Kind("persistentvolumes", "PersistentVolume", "/api/v1/persistentvolumes", _pop_dict("volumes")),
    Kind("storageclasses", "StorageClass", "/apis/storage.k8s.io/v1/storageclasses", _pop_dict("storage_classes")),
    Kind("csinodes", "CSINode", "/apis/storage.k8s.io/v1/csinodes", _pop_dict("csi_nodes")),
    Kind("csidrivers", "CSIDriver", "/apis/storage.k8s.io/v1/csidrivers", _pop_dict("csi_drivers")),
    Kind("csistoragecapacities", "CSIStorageCapacity", "/apis/storage.k8s.io/v1/csistoragecapacities",
         _pop_list("csi_capacities"), optional=True),
    # The actuator's wait for a drained node's volumes to detach (``autoscaler/actuation/detach.py``).
    Kind("volumeattachments", "VolumeAttachment", "/apis/storage.k8s.io/v1/volumeattachments",
         _pop_list("volume_attachments")),
    Kind("poddisruptionbudgets", "PodDisruptionBudget", "/apis/policy/v1/poddisruptionbudgets", _pop_list("pdbs")),
    Kind("namespaces", "Namespace", "/api/v1/namespaces", _take_namespace),
    *(Kind(name, kind, path, _pop_dict("controllers")) for name, kind, path in _CONTROLLERS),
    Kind("priorityconfig", "ConfigMap", "/api/v1/namespaces/{namespace}/configmaps", _take_priority,
         field_selector=f"metadata.name={PRIORITY_CONFIGMAP}"),
)


def convert_one(converter: Converter, kind: Kind, obj: Json, source: str) -> tuple[object, list[str]]:
    """The model object of ``obj`` and the warnings its conversion raised.

    Raises ``kube.convert.InputError`` (naming the object and field) on bad input.
    """
    obj["kind"] = kind.kind  # LIST items carry no kind
    converter.add(obj, source, unique=False)  # watch events are new versions of the same objects
    warnings = converter.objects.warnings
    taken = kind.take(converter.objects)
    if warnings:
        converter.objects.warnings = []
    return taken, warnings


#: JSON bytes -> (model object, namespace as written); raises when the dict path must read them.
TypedDecoder = Callable[[msgspec.Raw], tuple[object, str]]


def typed_decoder(kind: str, memos: Memos) -> TypedDecoder | None:
    """The typed decoder ``plan`` uses for this kind's objects (``kube.typedpods``, ``kube.typedvolumes``).

    Pods, claims and volumes are most of a cluster's objects; decoded straight into the
    model they skip the dict tree. None for the other kinds (the dict path reads them).
    """
    if kind == "Pod":
        return PodDecoder(memos).decode_keyed
    if kind == "PersistentVolumeClaim":
        return VolumeDecoder(memos).claim
    if kind == "PersistentVolume":
        return VolumeDecoder(memos).volume
    return None


def key_of(obj: Json) -> Key:
    meta = obj.get("metadata") or {}
    return (str(meta.get("namespace") or ""), str(meta.get("name") or ""))

"""Storage objects: claims, volumes, classes and the CSI objects."""

from __future__ import annotations

from collections.abc import Mapping

from kube.convert.errors import Json
from kube.convert.fields import as_bool, as_list, as_map, as_str, describe, name_of, required_str, string_map
from kube.convert.fields import qty as _qty
from kube.convert.resources import resource_list
from kube.convert.selectors import label_selector, node_selector
from kube.model import (
    BindingMode,
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    NodeSelector,
    NodeSelectorTerm,
    PersistentVolume,
    PersistentVolumeClaim,
    Requirement,
    StorageClass,
    VolumeAttachment,
)

__all__ = ["ACCESS_MODES", "RECLAIM_POLICIES", "SELECTED_NODE_ANNOTATION", "ZONE_LABELS", "access_modes",
           "convert_csi_capacity", "convert_csi_driver", "convert_csi_node", "convert_pv", "convert_pvc",
           "convert_storage_class", "convert_volume_attachment", "zone_labels"]

#: Set by kube-scheduler's volume binder on a WaitForFirstConsumer claim when it picks a
#: node (``AnnSelectedNode`` in k8s.io/component-helpers/storage/volume/pv_helpers.go, written
#: by pkg/scheduler/framework/plugins/volumebinding/binder.go); the provisioner reads it.
SELECTED_NODE_ANNOTATION = "volume.kubernetes.io/selected-node"

ACCESS_MODES = ("ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod")
RECLAIM_POLICIES = ("Retain", "Delete", "Recycle")


def _access_modes(spec: Json, notes: list[tuple[str, str]] | None) -> tuple[str, ...]:
    return access_modes(spec.get("accessModes"), notes)


def access_modes(raw: object, notes: list[tuple[str, str]] | None = None) -> tuple[str, ...]:
    """``spec.accessModes``, strings; a mode beyond the four known is kept (a newer API's) with a note.

    Kept, it changes nothing here: the decisions read ``ReadWriteOncePod`` only.
    """
    out = []
    for i, mode in enumerate(as_list(raw, "spec.accessModes")):
        mode = as_str(mode, f"spec.accessModes[{i}]")
        if mode not in ACCESS_MODES and notes is not None:
            notes.append((f"spec.accessModes[{i}]", f"unknown access mode {describe(mode)} (one of "
                                                    f"{', '.join(ACCESS_MODES)} here): read as none of them"))
        out.append(mode)
    return tuple(out)


def _class_name(spec: Json) -> str | None:
    cls = spec.get("storageClassName")
    return None if cls is None else as_str(cls, "spec.storageClassName")


def convert_pvc(obj: Json, notes: list[tuple[str, str]] | None = None) -> PersistentVolumeClaim:
    meta = as_map(obj.get("metadata"), "metadata")
    spec = as_map(obj.get("spec"), "spec")
    resources = as_map(spec.get("resources"), "spec.resources")
    storage = as_map(resources.get("requests"), "spec.resources.requests").get("storage")
    limits = resources.get("limits")
    if limits is not None:
        resource_list(limits, "spec.resources.limits")
    return PersistentVolumeClaim(
        namespace=as_str(meta.get("namespace"), "metadata.namespace") or "default",
        name=name_of(meta),
        storage_class=_class_name(spec),
        request=_qty(storage, "spec.resources.requests.storage") if storage is not None else 0,
        volume_name=as_str(spec.get("volumeName"), "spec.volumeName"),
        phase=as_str(as_map(obj.get("status"), "status").get("phase"), "status.phase") or "Pending",
        access_modes=_access_modes(spec, notes),
        controller_uid=next((str(ref.get("uid") or "") for ref in meta.get("ownerReferences") or ()
                             if ref.get("controller")), None),
        selected_node=as_str(as_map(meta.get("annotations"), "metadata.annotations").get(SELECTED_NODE_ANNOTATION),
                             f"metadata.annotations.{SELECTED_NODE_ANNOTATION}"),
    )


def convert_pv(obj: Json, notes: list[tuple[str, str]] | None = None) -> PersistentVolume:
    meta = as_map(obj.get("metadata"), "metadata")
    spec = as_map(obj.get("spec"), "spec")
    storage = as_map(spec.get("capacity"), "spec.capacity").get("storage")
    ref = spec.get("claimRef")
    policy = as_str(spec.get("persistentVolumeReclaimPolicy"), "spec.persistentVolumeReclaimPolicy", "Retain")
    if policy not in RECLAIM_POLICIES and notes is not None:
        notes.append(("spec.persistentVolumeReclaimPolicy", f"unknown policy {describe(policy)} (Retain, Delete "
                                                            "or Recycle here): not read by the decisions"))
    if "csi" in spec:
        csi = as_map(spec.get("csi"), "spec.csi")
        as_str(csi.get("volumeHandle"), "spec.csi.volumeHandle")
        driver = as_str(csi.get("driver"), "spec.csi.driver")
    elif "local" in spec:
        driver = "local"
    elif "hostPath" in spec:
        driver = "hostPath"
    else:
        driver = ""
    affinity = as_map(spec.get("nodeAffinity"), "spec.nodeAffinity").get("required")
    claim = None
    if ref is not None:
        ref = as_map(ref, "spec.claimRef")
        claim = (as_str(ref.get("namespace"), "spec.claimRef.namespace") or "default",
                 as_str(ref.get("name"), "spec.claimRef.name"))
    return PersistentVolume(
        name=name_of(meta),
        storage_class=_class_name(spec),
        capacity=_qty(storage, "spec.capacity.storage") if storage is not None else 0,
        node_affinity=node_selector(affinity, "spec.nodeAffinity.required", notes),
        claim=claim,
        phase=as_str(as_map(obj.get("status"), "status").get("phase"), "status.phase") or "Available",
        access_modes=_access_modes(spec, notes),
        driver=driver,
        zones=zone_labels(meta.get("labels") or {}),
    )


#: The labels kube-scheduler's VolumeZone plugin reads on a PV, in its order.
ZONE_LABELS = (
    "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region",
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
)


def zone_labels(labels: Mapping[str, object]) -> tuple[tuple[str, frozenset[str]], ...]:
    """Zone/region labels as value sets (``a__b`` is a or b); malformed ones are skipped, as upstream."""
    out = []
    for key in ZONE_LABELS:
        value = labels.get(key)
        if value is None:
            continue
        zones = [z.strip() for z in str(value).split("__")]
        if all(zones):
            out.append((key, frozenset(zones)))
    return tuple(out)


def convert_storage_class(obj: Json, notes: list[tuple[str, str]] | None = None) -> StorageClass:
    meta = as_map(obj.get("metadata"), "metadata")
    name = name_of(meta)
    mode = as_str(obj.get("volumeBindingMode"), "volumeBindingMode") or "Immediate"
    try:
        binding = BindingMode(mode)
    except ValueError:
        # kube-scheduler's VolumeBinding delays binding only for WaitForFirstConsumer.
        binding = BindingMode.IMMEDIATE
        if notes is not None:
            notes.append(("volumeBindingMode", f"unknown mode {describe(mode)} (Immediate or WaitForFirstConsumer "
                                               "here): read as Immediate, as kube-scheduler"))
    topologies = as_list(obj.get("allowedTopologies"), "allowedTopologies")
    allowed = None
    if topologies:
        terms = []
        for i, term in enumerate(topologies):
            f = f"allowedTopologies[{i}]"
            exprs = as_list(as_map(term, f).get("matchLabelExpressions"), f"{f}.matchLabelExpressions")
            reqs = []
            for j, e in enumerate(exprs):
                g = f"{f}.matchLabelExpressions[{j}]"
                e = as_map(e, g)
                key = required_str(e.get("key"), f"{g}.key")
                values = tuple(as_str(v, f"{g}.values[{k}]")
                               for k, v in enumerate(as_list(e.get("values"), f"{g}.values")))
                reqs.append(Requirement(key, "In", values))
            terms.append(NodeSelectorTerm(tuple(reqs)))
        allowed = NodeSelector(tuple(terms))
    parameters = string_map(obj.get("parameters"), "parameters")
    return StorageClass(name, as_str(obj.get("provisioner"), "provisioner"), binding, allowed, parameters)


def convert_csi_capacity(obj: Json) -> CSIStorageCapacity:
    meta = as_map(obj.get("metadata"), "metadata")
    cap = obj.get("capacity")
    max_size = obj.get("maximumVolumeSize")
    return CSIStorageCapacity(
        namespace=as_str(meta.get("namespace"), "metadata.namespace"),
        name=name_of(meta),
        storage_class=as_str(obj.get("storageClassName"), "storageClassName"),
        node_topology=label_selector(obj.get("nodeTopology"), "nodeTopology"),
        capacity=_qty(cap, "capacity") if cap is not None else None,
        maximum_volume_size=_qty(max_size, "maximumVolumeSize") if max_size is not None else None,
    )


def convert_csi_driver(obj: Json) -> CSIDriver:
    name = name_of(as_map(obj.get("metadata"), "metadata"))
    spec = as_map(obj.get("spec"), "spec")
    return CSIDriver(name, as_bool(spec.get("storageCapacity"), "spec.storageCapacity"),
                     as_bool(spec.get("attachRequired"), "spec.attachRequired", default=True))


def convert_csi_node(obj: Json) -> CSINode:
    name = name_of(as_map(obj.get("metadata"), "metadata"))
    drivers = []
    for i, d in enumerate(as_list(as_map(obj.get("spec"), "spec").get("drivers"), "spec.drivers")):
        drivers.append(required_str(as_map(d, f"spec.drivers[{i}]").get("name"), f"spec.drivers[{i}].name"))
    return CSINode(name, tuple(drivers))


def convert_volume_attachment(obj: Json) -> VolumeAttachment:
    """``storage.k8s.io/v1`` VolumeAttachment: the node is required (the API server requires it too)."""
    name = name_of(as_map(obj.get("metadata"), "metadata"))
    spec = as_map(obj.get("spec"), "spec")
    source = as_map(spec.get("source"), "spec.source")
    volume = source.get("persistentVolumeName")
    status = as_map(obj.get("status"), "status")
    return VolumeAttachment(
        name=name,
        node=required_str(spec.get("nodeName"), "spec.nodeName"),
        attacher=as_str(spec.get("attacher"), "spec.attacher"),
        volume=None if volume is None else as_str(volume, "spec.source.persistentVolumeName"),
        attached=as_bool(status.get("attached"), "status.attached"),
    )

"""Storage objects: claims, volumes, classes and the CSI objects."""

from __future__ import annotations

from kube.convert.errors import FieldError, Json
from kube.convert.fields import qty as _qty
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
)

__all__ = ["convert_csi_capacity", "convert_csi_driver", "convert_csi_node", "convert_pv", "convert_pvc",
           "convert_storage_class"]


def _access_modes(spec: Json) -> tuple[str, ...]:
    return tuple(str(m) for m in spec.get("accessModes") or ())


def convert_pvc(obj: Json) -> PersistentVolumeClaim:
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    requests = (spec.get("resources") or {}).get("requests") or {}
    storage = requests.get("storage")
    cls = spec.get("storageClassName")
    return PersistentVolumeClaim(
        namespace=str(meta.get("namespace") or "default"),
        name=str(meta.get("name") or ""),
        storage_class=None if cls is None else str(cls),
        request=_qty(storage, "spec.resources.requests.storage") if storage is not None else 0,
        volume_name=str(spec.get("volumeName") or ""),
        phase=str((obj.get("status") or {}).get("phase") or "Pending"),
        access_modes=_access_modes(spec),
        controller_uid=next((str(ref.get("uid") or "") for ref in meta.get("ownerReferences") or ()
                             if ref.get("controller")), None),
    )


def convert_pv(obj: Json) -> PersistentVolume:
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    storage = (spec.get("capacity") or {}).get("storage")
    ref = spec.get("claimRef")
    if "csi" in spec:
        driver = str((spec.get("csi") or {}).get("driver") or "")
    elif "local" in spec:
        driver = "local"
    elif "hostPath" in spec:
        driver = "hostPath"
    else:
        driver = ""
    affinity = (spec.get("nodeAffinity") or {}).get("required")
    cls = spec.get("storageClassName")
    return PersistentVolume(
        name=str(meta.get("name") or ""),
        storage_class=None if cls is None else str(cls),
        capacity=_qty(storage, "spec.capacity.storage") if storage is not None else 0,
        node_affinity=node_selector(affinity, "spec.nodeAffinity.required"),
        claim=(str(ref.get("namespace") or "default"), str(ref.get("name") or "")) if ref else None,
        phase=str((obj.get("status") or {}).get("phase") or "Available"),
        access_modes=_access_modes(spec),
        driver=driver,
        zones=_zone_labels(meta.get("labels") or {}),
    )


#: The labels kube-scheduler's VolumeZone plugin reads on a PV, in its order.
ZONE_LABELS = (
    "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region",
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
)


def _zone_labels(labels: dict[str, object]) -> tuple[tuple[str, frozenset[str]], ...]:
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


def convert_storage_class(obj: Json) -> StorageClass:
    meta = obj.get("metadata") or {}
    mode = obj.get("volumeBindingMode") or "Immediate"
    try:
        binding = BindingMode(mode)
    except ValueError:
        raise FieldError("volumeBindingMode", f"unknown mode {mode!r}") from None
    topologies = obj.get("allowedTopologies")
    allowed = None
    if topologies:
        terms = []
        for term in topologies:
            reqs = tuple(
                Requirement(str(e.get("key")), "In", tuple(str(v) for v in e.get("values") or ()))
                for e in term.get("matchLabelExpressions") or ()
            )
            terms.append(NodeSelectorTerm(reqs))
        allowed = NodeSelector(tuple(terms))
    return StorageClass(str(meta.get("name") or ""), str(obj.get("provisioner") or ""), binding, allowed)


def convert_csi_capacity(obj: Json) -> CSIStorageCapacity:
    meta = obj.get("metadata") or {}
    cap = obj.get("capacity")
    max_size = obj.get("maximumVolumeSize")
    return CSIStorageCapacity(
        namespace=str(meta.get("namespace") or ""),
        name=str(meta.get("name") or ""),
        storage_class=str(obj.get("storageClassName") or ""),
        node_topology=label_selector(obj.get("nodeTopology"), "nodeTopology"),
        capacity=_qty(cap, "capacity") if cap is not None else None,
        maximum_volume_size=_qty(max_size, "maximumVolumeSize") if max_size is not None else None,
    )




def convert_csi_driver(obj: Json) -> CSIDriver:
    name = str((obj.get("metadata") or {}).get("name") or "")
    capacity = bool((obj.get("spec") or {}).get("storageCapacity"))
    return CSIDriver(name, capacity)


def convert_csi_node(obj: Json) -> CSINode:
    name = str((obj.get("metadata") or {}).get("name") or "")
    drivers = tuple(str(d.get("name")) for d in (obj.get("spec") or {}).get("drivers") or ())
    return CSINode(name, drivers)

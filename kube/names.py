"""Names of the storage extension, all configurable so other local-storage systems fit.

Defaults are Rok's (``docs/storage-semantics.md``, "Terms"); TopoLVM fits with
``provisioner="topolvm.io"`` and ``capacity_annotation="capacity.topolvm.io/<class>"``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = [
    "CA_DELETION_CANDIDATE_TAINT",
    "CA_TO_BE_DELETED_TAINT",
    "DISRUPTION_COST",
    "HOSTNAME_LABEL",
    "POD_DELETION_COST",
    "SAFE_TO_EVICT",
    "SAFE_TO_EVICT_LOCAL_VOLUMES",
    "SCALE_DOWN_DISABLED",
    "TOPOLVM_CAPACITY_PREFIX",
    "StorageNames",
    "annotation_int",
]

HOSTNAME_LABEL = "kubernetes.io/hostname"
CA_TO_BE_DELETED_TAINT = "ToBeDeletedByClusterAutoscaler"
CA_DELETION_CANDIDATE_TAINT = "DeletionCandidateOfClusterAutoscaler"
SCALE_DOWN_DISABLED = "cluster-autoscaler.kubernetes.io/scale-down-disabled"
SAFE_TO_EVICT = "cluster-autoscaler.kubernetes.io/safe-to-evict"
#: Kubernetes' ReplicaSet scale-in preference: pods with a lower cost go first (int32, default 0).
POD_DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"
#: This project's node annotation, after CA's ``scale-down-disabled``: seconds of disruption an
#: operator adds to (or, negative, takes from) the node's computed removal cost.
DISRUPTION_COST = "autoscaler.storage.dev/disruption-cost"


def annotation_int(annotations: Mapping[str, str], key: str) -> int:
    """An integer annotation, or 0 when absent or not an int32 (the API server takes any string;
    the ReplicaSet controller reads an unparsable deletion cost as 0 too)."""
    text = annotations.get(key)
    if text is None:
        return 0
    stripped = text.strip()
    digits = stripped.removeprefix("-").removeprefix("+")
    if not digits.isascii() or not digits.isdigit() or len(digits) > 10:
        return 0
    value = int(stripped)
    return value if -(2**31) <= value < 2**31 else 0
SAFE_TO_EVICT_LOCAL_VOLUMES = "cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes"
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
PRIORITY_CONFIGMAP = "cluster-autoscaler-priority-expander"
#: TopoLVM's node annotations of free bytes, one per device class (``capacity.topolvm.io/<class>``).
TOPOLVM_CAPACITY_PREFIX = "capacity.topolvm.io/"


@dataclass(frozen=True, slots=True)
class StorageNames:
    #: StorageClass provisioner whose volumes are node-local and migratable.
    provisioner: str = "rok.arrikto.com"
    #: Node annotation: free bytes for new local volumes, written by the storage driver.
    capacity_annotation: str = "rok.arrikto.com/capacity"
    #: Node label: total local bytes of the node (same for every node of a group).
    max_capacity_label: str = "rok.arrikto.com/max-instance-capacity"
    #: Label selector of the guard pods (``key=value[,key=value]``).
    guard_pod_selector: str = "app=rok-csi-guard"

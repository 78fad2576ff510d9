"""Names of the storage extension, all configurable so other local-storage systems fit.

Defaults are Rok's (``../shared/docs/storage-semantics.md``, "Terms"); TopoLVM fits with
``provisioner="topolvm.io"`` and ``capacity_annotation="capacity.topolvm.io/<class>"``.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CA_DELETION_CANDIDATE_TAINT", "CA_TO_BE_DELETED_TAINT", "HOSTNAME_LABEL", "SAFE_TO_EVICT",
           "SAFE_TO_EVICT_LOCAL_VOLUMES", "SCALE_DOWN_DISABLED", "TOPOLVM_CAPACITY_PREFIX", "StorageNames"]

HOSTNAME_LABEL = "kubernetes.io/hostname"
CA_TO_BE_DELETED_TAINT = "ToBeDeletedByClusterAutoscaler"
CA_DELETION_CANDIDATE_TAINT = "DeletionCandidateOfClusterAutoscaler"
SCALE_DOWN_DISABLED = "cluster-autoscaler.kubernetes.io/scale-down-disabled"
SAFE_TO_EVICT = "cluster-autoscaler.kubernetes.io/safe-to-evict"
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

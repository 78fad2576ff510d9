"""The labels a scale set's nodes will register with, predicted as upstream CA predicts them.

``generic_labels``: architecture, OS, instance type, region, zone (stable and deprecated
beta keys) and the Azure Disk CSI driver's zone key, as upstream's ``buildGenericLabels``.
``aks_labels``: the AKS system labels upstream predicts from the scale set
(``processVMSSTemplate`` with ``enableLabelPredictionsOnTemplate``): the agent pool from
the ``aks-managed-poolName`` (or legacy ``poolName``) tag, the storage profile and tier
from the OS disk, and the accelerator of NVIDIA GPU sizes. Upstream:
``cluster-autoscaler/cloudprovider/azure/azure_template.go``, ``azure_instance_gpu_sku.go``.

Zones: a zonal scale set's zone is ``<region>-<zone>`` (``westeurope-1``); for several
zones upstream picks one at random on every build, we take the first the scale set
lists, so a plan is reproducible. A scale set without zones gets ``"0"`` as its zone
and ``""`` as its Azure Disk zone, as the CSI driver reports for non-zonal disks.
"""

from __future__ import annotations

from cloudproviders.azure.vmss import VmssFacts

__all__ = ["AZURE_DISK_ZONE", "aks_labels", "generic_labels", "is_nvidia_size"]

AZURE_DISK_ZONE = "topology.disk.csi.azure.com/zone"
AKS = "kubernetes.azure.com/"
POOL_NAME_TAG = "aks-managed-poolName"
LEGACY_POOL_NAME_TAG = "poolName"

#: Sizes with NVIDIA drivers on AKS (upstream ``NvidiaEnabledSKUs``), lower case.
NVIDIA_SIZES = frozenset({
    "standard_nc6", "standard_nc12", "standard_nc24", "standard_nc24r",
    "standard_nv6", "standard_nv12", "standard_nv12s_v3", "standard_nv24", "standard_nv24s_v3", "standard_nv24r",
    "standard_nv48s_v3",
    "standard_nd6s", "standard_nd12s", "standard_nd24s", "standard_nd24rs",
    "standard_nc6s_v2", "standard_nc12s_v2", "standard_nc24s_v2", "standard_nc24rs_v2",
    "standard_nc6s_v3", "standard_nc12s_v3", "standard_nc24s_v3", "standard_nc24rs_v3", "standard_nd40s_v3",
    "standard_nd40rs_v2",
    "standard_nc4as_t4_v3", "standard_nc8as_t4_v3", "standard_nc16as_t4_v3", "standard_nc64as_t4_v3",
    "standard_nd96asr_v4", "standard_nd112asr_a100_v4", "standard_nd120asr_a100_v4",
    "standard_nd96amsr_a100_v4", "standard_nd112amsr_a100_v4", "standard_nd120amsr_a100_v4",
    "standard_nc24ads_a100_v4", "standard_nc48ads_a100_v4", "standard_nc96ads_a100_v4",
})


def is_nvidia_size(size: str) -> bool:
    return size.lower().removesuffix("_promo") in NVIDIA_SIZES


def _zone(facts: VmssFacts) -> tuple[str, str]:
    """(zone label value, Azure Disk zone value)."""
    if not facts.zones:
        return "0", ""
    zone = f"{facts.location.lower()}-{facts.zones[0]}"
    return zone, zone


def generic_labels(facts: VmssFacts, arch: str, node_name: str) -> dict[str, str]:
    region = facts.location.lower()
    zone, disk_zone = _zone(facts)
    return {
        "beta.kubernetes.io/arch": arch, "kubernetes.io/arch": arch,
        "beta.kubernetes.io/os": facts.os, "kubernetes.io/os": facts.os,
        "beta.kubernetes.io/instance-type": facts.sku_name, "node.kubernetes.io/instance-type": facts.sku_name,
        "failure-domain.beta.kubernetes.io/region": region, "topology.kubernetes.io/region": region,
        "failure-domain.beta.kubernetes.io/zone": zone, "topology.kubernetes.io/zone": zone,
        AZURE_DISK_ZONE: disk_zone,
        "kubernetes.io/hostname": node_name,
    }


def _pool_labels(facts: VmssFacts) -> dict[str, str]:
    pool = facts.tags.get(POOL_NAME_TAG) or facts.tags.get(LEGACY_POOL_NAME_TAG)
    return {"agentpool": pool, AKS + "agentpool": pool} if pool else {}


def _storage_labels(facts: VmssFacts) -> dict[str, str]:
    disk = facts.os_disk
    if disk is None:
        return {}
    profile = "ephemeral" if disk.ephemeral else "managed"
    labels = {"storageprofile": profile, AKS + "storageprofile": profile}
    if disk.storage_account_type:
        labels |= {"storagetier": disk.storage_account_type, AKS + "storagetier": disk.storage_account_type}
    return labels


def aks_labels(facts: VmssFacts) -> dict[str, str]:
    labels = _pool_labels(facts) | _storage_labels(facts)
    if is_nvidia_size(facts.sku_name):
        labels |= {AKS + "accelerator": "nvidia", "accelerator": "nvidia"}
    return labels

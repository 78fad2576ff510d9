"""What a VM size has: vCPUs, memory, GPUs, temp (resource) disk and local NVMe disks.

First from the Resource SKUs API (``resourceSkus.list``, capabilities ``vCPUs``,
``MemoryGB``, ``GPUs``, ``MaxResourceVolumeMB``, ``NvmeDiskSizeInMiB``), else from the
small table below of common sizes (Microsoft's published VM size specifications),
so that scale-from-zero works when the SKU list is unavailable or lacks the size.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from azure.mgmt.compute import models

__all__ = ["SKU_TABLE", "SkuInfo", "sku_from_resource_sku"]

_GIB = 2**30
_MIB = 2**20
#: One NVMe disk of the Lsv2/Lsv3/Lasv3 sizes: 1.92 TB (decimal).
_L_NVME = 1_920_000_000_000


@dataclass(frozen=True, slots=True)
class SkuInfo:
    name: str
    vcpus: int
    memory_bytes: int
    gpus: int = 0
    #: The temporary resource disk (``/mnt``), not used for local volumes.
    temp_disk_bytes: int = 0
    #: Local NVMe disks in all: what a local-volume driver can use.
    nvme_bytes: int = 0


def _table(*rows: tuple[str, int, int, int, int]) -> Mapping[str, SkuInfo]:
    return {name.lower(): SkuInfo(name, cpus, mem * _GIB, 0, temp * _GIB, nvme)
            for name, cpus, mem, temp, nvme in rows}


#: name, vCPUs, memory GiB, temp disk GiB, NVMe bytes.
SKU_TABLE: Mapping[str, SkuInfo] = _table(
    ("Standard_D2s_v5", 2, 8, 0, 0),
    ("Standard_D4s_v5", 4, 16, 0, 0),
    ("Standard_D8s_v5", 8, 32, 0, 0),
    ("Standard_D16s_v5", 16, 64, 0, 0),
    ("Standard_D4ds_v5", 4, 16, 150, 0),
    ("Standard_D8ds_v5", 8, 32, 300, 0),
    ("Standard_D4s_v3", 4, 16, 32, 0),
    ("Standard_D8s_v3", 8, 32, 64, 0),
    ("Standard_E4s_v5", 4, 32, 0, 0),
    ("Standard_E8s_v5", 8, 64, 0, 0),
    ("Standard_E16s_v5", 16, 128, 0, 0),
    ("Standard_L8s_v2", 8, 64, 80, 1 * _L_NVME),
    ("Standard_L16s_v2", 16, 128, 160, 2 * _L_NVME),
    ("Standard_L8s_v3", 8, 64, 80, 1 * _L_NVME),
    ("Standard_L16s_v3", 16, 128, 160, 2 * _L_NVME),
    ("Standard_L32s_v3", 32, 256, 320, 4 * _L_NVME),
    ("Standard_L8as_v3", 8, 64, 80, 1 * _L_NVME),
    ("Standard_L16as_v3", 16, 128, 160, 2 * _L_NVME),
)


def _capability(capabilities: Iterable[models.ResourceSkuCapabilities], name: str) -> float:
    for capability in capabilities:
        if capability.name == name and capability.value:
            try:
                return float(capability.value)
            except ValueError:
                return 0.0
    return 0.0


def sku_from_resource_sku(sku: models.ResourceSku) -> SkuInfo | None:
    """A virtualMachines resource SKU as ``SkuInfo``; None when it lacks vCPUs or memory."""
    capabilities = sku.capabilities or []
    vcpus = int(_capability(capabilities, "vCPUs"))
    memory = int(_capability(capabilities, "MemoryGB") * _GIB)
    if not sku.name or vcpus <= 0 or memory <= 0:
        return None
    return SkuInfo(name=sku.name, vcpus=vcpus, memory_bytes=memory, gpus=int(_capability(capabilities, "GPUs")),
                   temp_disk_bytes=int(_capability(capabilities, "MaxResourceVolumeMB")) * _MIB,
                   nvme_bytes=int(_capability(capabilities, "NvmeDiskSizeInMiB")) * _MIB)

"""What a VM size has: vCPUs, memory, GPUs, CPU architecture and local NVMe disks.

Two sources, as upstream CA's ``cloudprovider/azure/azure_instance.go``:

* the Resource SKUs API (``resourceSkus.list``; capabilities ``vCPUs``, ``MemoryGB``,
  ``GPUs``, ``CpuArchitectureType``, plus ``NvmeDiskSizeInMiB`` for local volumes).
  As upstream (skewer), a SKU without ``vCPUs``, ``MemoryGB`` or ``CpuArchitectureType``
  does not count, and memory is whole GB times 1024 MiB;
* else the static table ``instance_types.csv`` (every size upstream knows, generated from
  upstream's ``azure_instance_types.go`` by ``scripts/azure_instance_types.py``). A size
  with a ``_Promo`` suffix falls back to the size without it, in both sources.

The table has no disks: the NVMe total of the Lsv2/Lsv3/Lasv3 sizes (one 1.92 TB disk
per 8 vCPUs, Microsoft's published specifications) is added here, so scale-from-zero
sees local storage without the SKU API too.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources

from azure.mgmt.compute import models

__all__ = ["SkuInfo", "sku_from_resource_sku", "static_sku", "static_table", "without_promo"]

_MIB = 2**20
#: One NVMe disk of the Lsv2/Lsv3/Lasv3 sizes: 1.92 TB (decimal).
_L_NVME = 1_920_000_000_000
_L_SERIES = re.compile(r"^standard_l(\d+)a?s_v[23]$")
_PROMO = re.compile(r"_promo", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class SkuInfo:
    name: str
    vcpus: int
    memory_bytes: int
    gpus: int = 0
    #: ``amd64`` or ``arm64``, as the node's ``kubernetes.io/arch`` label.
    arch: str = "amd64"
    #: Local NVMe disks in all: what a local-volume driver can use.
    nvme_bytes: int = 0


def without_promo(size: str) -> str:
    """``Standard_D2s_v3_Promo`` -> ``Standard_D2s_v3`` (upstream removes ``_promo`` in any case)."""
    return _PROMO.sub("", size)


def _table_nvme(name: str) -> int:
    match = _L_SERIES.match(name.lower())
    return int(match.group(1)) // 8 * _L_NVME if match else 0


@cache
def static_table() -> Mapping[str, SkuInfo]:
    """The shipped size table, keyed by lower-case size name."""
    text = resources.files("cloudproviders.azure").joinpath("instance_types.csv").read_text(encoding="utf-8")
    table: dict[str, SkuInfo] = {}
    for row in csv.DictReader(io.StringIO(text)):
        name = row["name"]
        table[name.lower()] = SkuInfo(name=name, vcpus=int(row["vcpus"]), memory_bytes=int(row["memory_mib"]) * _MIB,
                                      gpus=int(row["gpus"]), arch=row["arch"], nvme_bytes=_table_nvme(name))
    return table


def static_sku(size: str) -> SkuInfo | None:
    """The size from the shipped table, case-insensitively, or its non-promo twin."""
    table = static_table()
    return table.get(size.lower()) or table.get(without_promo(size).lower())


def _capability(capabilities: Iterable[models.ResourceSkuCapabilities], name: str) -> str | None:
    for capability in capabilities:
        if capability.name == name and capability.value is not None:
            return capability.value
    return None


def _number(text: str | None) -> float | None:
    try:
        return float(text) if text is not None else None
    except ValueError:
        return None


def sku_from_resource_sku(sku: models.ResourceSku) -> SkuInfo | None:
    """A virtualMachines resource SKU as ``SkuInfo``; None when upstream would not use it."""
    capabilities = sku.capabilities or []
    vcpus = _number(_capability(capabilities, "vCPUs"))
    memory_gb = _number(_capability(capabilities, "MemoryGB"))
    arch = _capability(capabilities, "CpuArchitectureType")
    if not sku.name or vcpus is None or memory_gb is None or arch is None:
        return None
    return SkuInfo(name=sku.name, vcpus=int(vcpus), memory_bytes=int(memory_gb) * 1024 * _MIB,
                   gpus=int(_number(_capability(capabilities, "GPUs")) or 0),
                   arch="arm64" if arch.lower() == "arm64" else "amd64",
                   nvme_bytes=int(_number(_capability(capabilities, "NvmeDiskSizeInMiB")) or 0) * _MIB)

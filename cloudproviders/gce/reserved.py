"""What the OS and the kubelet keep back from a GCE node, as upstream CA estimates it.

Upstream: ``cluster-autoscaler/cloudprovider/gce/reserved.go`` (``GceReserved``): the
kernel's memory reserve (subtracted from memory *capacity*), the OS partition of the
boot disk (subtracted from ephemeral-storage capacity), the filesystem overhead of local
SSDs that back ephemeral storage, and the kubelet's hard eviction thresholds
(subtracted from *allocatable*). Pure arithmetic on the numbers upstream measured; the
template builder (``template.py``) calls it.
"""

from __future__ import annotations

import contextlib
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum

from kube.quantity import QuantityError, parse_quantity

__all__ = [
    "DEFAULT_EVICTION",
    "Arch",
    "Distribution",
    "EvictionHard",
    "OsInfo",
    "kernel_reserved",
    "local_ssd_overhead",
    "os_reserved_ephemeral",
    "parse_eviction_hard",
]

_KIB = 1024
_MIB = 1024 * _KIB
_GIB = 1024 * _MIB


class Distribution(Enum):
    """``os_distribution`` of ``AUTOSCALER_ENV_VARS`` (upstream ``OperatingSystemDistribution``)."""

    COS = "cos"
    UBUNTU = "ubuntu"
    WINDOWS_LTSC = "windows_ltsc"
    WINDOWS_SAC = "windows_sac"


class Arch(Enum):
    AMD64 = "amd64"
    ARM64 = "arm64"


@dataclass(frozen=True, slots=True)
class OsInfo:
    """Upstream's ``MigOsInfo``: what the reserve estimates depend on."""

    os: str  # "linux" or "windows"
    distribution: Distribution = Distribution.COS
    arch: Arch = Arch.AMD64


def _go_round(value: float) -> int:
    """Go's ``math.Round`` (half away from zero), for the positive values used here."""
    return math.floor(value + 0.5)


def kernel_reserved(info: OsInfo, physical_memory: int) -> int:
    """Bytes of memory the kernel keeps (upstream ``CalculateKernelReserved``); 0 off Linux."""
    if info.os != "linux":
        return 0
    reserved = physical_memory // 64 + 16 * _MIB
    if physical_memory > 3 * _GIB:
        reserved += 64 * _MIB  # software IO TLB, when memory needs 64-bit addressing
    if physical_memory <= 8 * _GIB:
        reserved += 8 * _MIB  # low-memory offset
    # A statistical correction upstream measured on COS and Ubuntu images.
    correction = int(min(0.00175 * float(physical_memory), float(248 * _MIB)))
    if info.distribution is Distribution.COS:
        reserved += correction
        if info.arch is Arch.ARM64:
            reserved = _go_round(float(reserved) * 0.9971)
    elif info.distribution is Distribution.UBUNTU:
        reserved += correction + 4 * _MIB
    return reserved


def os_reserved_ephemeral(info: OsInfo, disk_size: int) -> int:
    """Bytes of the boot disk the OS partition takes (upstream ``CalculateOSReservedEphemeralStorage``)."""
    buffer = int(min(float(100 * _MIB), math.ceil(0.001 * float(disk_size))))  # over-provisioning
    if info.distribution is Distribution.COS:
        storage = math.ceil(0.015635 * float(disk_size)) + math.ceil(4.148 * _GIB) + buffer
        return storage + (65536 * _KIB if info.arch is Arch.ARM64 else 0)
    if info.distribution is Distribution.UBUNTU:
        return math.ceil(0.03083 * float(disk_size)) + math.ceil(0.171 * _GIB) + buffer
    return math.ceil(0.1133 * _GIB) + math.ceil(0.010 * _GIB)  # Windows LTSC and SAC


#: KiB lost to the filesystem when N local SSDs back ephemeral storage, as upstream measured on GKE.
_LOCAL_SSD_OVERHEAD_KIB: Mapping[Distribution, Mapping[int, int]] = {
    Distribution.COS: {1: 7289472, 2: 13725224, 3: 20031312, 4: 26332924, 5: 32634536, 6: 38946604,
                       7: 45254008, 8: 51556096, 16: 52837800, 24: 78686620},
    Distribution.UBUNTU: {1: 7219840, 2: 13651496, 3: 19953488, 4: 26255100, 5: 32556712, 6: 38860588,
                          7: 45163896, 8: 51465984, 16: 52747688, 24: 78601704},
}


def local_ssd_overhead(disk_count: int, distribution: Distribution) -> int:
    """Bytes of N local SSDs not usable as ephemeral storage; counts between measurements round up.

    Upstream ``EphemeralStorageOnLocalSSDFilesystemOverheadInBytes``; 0 for images it never measured.
    """
    measured = disk_count if disk_count <= 8 else 16 if disk_count <= 16 else 24
    table = _LOCAL_SSD_OVERHEAD_KIB.get(distribution)
    return table.get(measured, 0) * _KIB if table is not None else 0


@dataclass(frozen=True, slots=True)
class EvictionHard:
    """The kubelet's hard eviction thresholds that allocatable leaves free."""

    memory_bytes: int = 100 * _MIB
    ephemeral_ratio: float = 0.1

    def ephemeral_bytes(self, disk_size: int) -> int:
        return int(self.ephemeral_ratio * float(disk_size)) if disk_size > 0 else 0


DEFAULT_EVICTION = EvictionHard()
_PERCENT = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?%$")


def parse_eviction_hard(values: Mapping[str, str] | None) -> EvictionHard:
    """``evictionHard`` (``memory.available``, ``nodefs.available``); a bad value keeps the default.

    Upstream ``ParseEvictionHardOrGetDefault``: memory is a quantity, storage a percentage
    between 0 and 100.
    """
    if values is None:
        return DEFAULT_EVICTION
    memory = DEFAULT_EVICTION.memory_bytes
    if "memory.available" in values:
        with contextlib.suppress(QuantityError):
            memory = parse_quantity(values["memory.available"])
    ratio = DEFAULT_EVICTION.ephemeral_ratio
    text = values.get("nodefs.available", "")
    if _PERCENT.match(text):
        value = float(text[:-1]) / 100
        if 0.0 <= value <= 1.0:
            ratio = value
    return EvictionHard(memory, ratio)

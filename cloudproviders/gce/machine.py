"""The vCPUs and memory of a machine type: from ``machineTypes.get``, or from a custom type's name.

Upstream: ``cluster-autoscaler/cloudprovider/gce/machine_types.go``. Custom machine types
(``custom-CPUS-MEMMB``, ``FAMILY-custom-CPUS-MEMMB[-ext]``; e2's ``custom-micro``,
``-small`` and ``-medium`` have 2 vCPUs) are never looked up: their name says it all.
"""

from __future__ import annotations

from dataclasses import dataclass

from google.cloud import compute_v1

from cloudproviders.interface import CloudError

__all__ = ["MachineShape", "custom_machine", "from_api", "is_custom", "machine_family"]

_MIB = 2**20


@dataclass(frozen=True, slots=True)
class MachineShape:
    name: str
    cpus: int
    memory_bytes: int
    #: Local SSD partitions bundled with ``-lssd`` types (``bundledLocalSsds.partitionCount``).
    bundled_local_ssds: int = 0


def is_custom(name: str) -> bool:
    parts = name.split("-")
    return len(parts) >= 2 and (parts[0] == "custom" or parts[1] == "custom")


def machine_family(name: str) -> str:
    """``n2`` of ``n2-standard-8``; ``custom``, ``f1`` and ``g1`` types are ``n1``."""
    parts = name.split("-")
    if len(parts) < 2:
        raise CloudError(f"machine type {name!r}: cannot tell its family")
    return "n1" if parts[0] in ("custom", "f1", "g1") else parts[0]


def _int(text: str, name: str, what: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise CloudError(f"custom machine type {name!r}: {what} {text!r} is not a number") from None


def custom_machine(name: str) -> MachineShape:
    """A custom type's shape from its name; ``CloudError`` names what is missing."""
    parts = name.split("-")
    if not is_custom(name) or parts.index("custom") + 2 >= len(parts):
        raise CloudError(f"machine type {name!r} is not FAMILY-custom-CPUS-MEMORYMB")
    at = parts.index("custom")
    cpu_part, memory_part = parts[at + 1], parts[at + 2]
    if machine_family(name) == "e2" and cpu_part in ("micro", "small", "medium"):
        cpus = 2
    else:
        cpus = _int(cpu_part, name, "CPU count")
    return MachineShape(name, cpus, _int(memory_part, name, "memory (MB)") * _MIB)


def from_api(name: str, machine: compute_v1.MachineType) -> MachineShape:
    bundled = machine.bundled_local_ssds.partition_count if "bundled_local_ssds" in machine else 0
    return MachineShape(name, machine.guest_cpus, machine.memory_mb * _MIB, bundled)

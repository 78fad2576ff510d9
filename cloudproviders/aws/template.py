"""A group's template node from what AWS says, for scale-up from zero (no I/O here).

Built as CA's AWS provider builds it (``cloudprovider/aws/aws_manager.go``,
``buildNodeFromTemplate``), one step per source, later ones winning:

1. the instance type (``DescribeInstanceTypes``, ``aws_util.go`` ``transformInstanceType``):
   vCPUs, memory, every GPU as ``nvidia.com/gpu``, 110 pods, and the architecture
   (``arm64``; everything else, ``i386`` and ``x86_64`` included, is ``amd64``);
2. a mixed policy's attribute-based requirements (``launch.py``): their minimum vCPUs,
   memory and NVIDIA GPUs;
3. the ASG's tags (``tags.py``): ``.../resources/<name>``, ``.../label/<key>`` and
   ``eks:<key>``, ``.../taint/<key>``;
4. the EKS managed node group (``eks.py``): its labels win, its taints are added, its
   resource tags win.

Generic labels: ``kubernetes.io/os=linux``, arch, instance type, the region (the first
zone less its last letter, as CA derives it), ``topology.kubernetes.io/zone`` and the EBS CSI
driver's ``topology.ebs.csi.aws.com/zone`` (both the group's first zone, so a pod bound to a
zonal EBS volume fits a template of its zone and no other), and the hostname; no legacy
``failure-domain.beta`` labels, as CA's AWS templates carry none. Allocatable equals
capacity, as in CA.

Storage (this project's addition): an instance type with NVMe instance store gets the
max-capacity label, in bytes, from ``InstanceStorageInfo.TotalSizeInGB`` (AWS's GB are
10^9 bytes), so storage-aware scale-up from zero works; a ``.../label/<max-capacity-label>``
tag overrides it (a byte count, or a quantity such as ``1700Gi``), e.g. for disks that
lose space to formatting or RAID; ``0`` declares that the group has no local storage
(its template then holds no local volume, instead of being assumed unbounded as a group
the cloud knows nothing about). ``Node.max_local_bytes`` follows the label. The launch
source's root volume is the ephemeral storage.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from typing import Any

from cloudproviders.aws.eks import ManagedNodegroup
from cloudproviders.aws.tags import (
    TEMPLATE_TAG_PREFIX,
    TagResources,
    group_options,
    labels_from_tags,
    resources_from_tags,
    taints_from_tags,
)
from kube.model import Node, Resources
from kube.names import HOSTNAME_LABEL, StorageNames
from kube.quantity import QuantityError, parse_quantity

__all__ = ["EBS_CSI_ZONE_LABEL", "TEMPLATE_TAG_PREFIX", "InstanceTypeInfo", "build_template", "group_options",
           "instance_type_capacity", "requirements_capacity", "static_instance_type"]

log = logging.getLogger(__name__)

#: The zone key of the EBS CSI driver's topology (CA ``labelAwsCSITopologyZone``).
EBS_CSI_ZONE_LABEL = "topology.ebs.csi.aws.com/zone"
#: CA ``interpretEc2SupportedArchitecure``: only ``arm64`` is not ``amd64``.
_ARM = "arm64"
#: CA counts every GPU of an instance type as ``nvidia.com/gpu`` (``getGpuCount``, ``gpu.ResourceNvidiaGPU``).
_GPU = "nvidia.com/gpu"
#: CA's AWS template: 110 pods per node.
_PODS = 110


@dataclass(frozen=True, slots=True)
class InstanceTypeInfo:
    """The parts of an EC2 ``InstanceTypeInfo`` a template needs."""

    name: str
    vcpus: int
    memory_bytes: int
    architecture: str
    #: Extended GPU resources, e.g. (("nvidia.com/gpu", 1),).
    gpus: tuple[tuple[str, int], ...] = ()
    #: Total NVMe instance-store bytes; 0 without one.
    local_nvme_bytes: int = 0

    @classmethod
    def from_api(cls, raw: Mapping[str, Any]) -> InstanceTypeInfo:
        """From one ``DescribeInstanceTypes`` entry."""
        archs = (raw.get("ProcessorInfo") or {}).get("SupportedArchitectures") or ["x86_64"]
        gpu_count = sum(int(gpu.get("Count") or 0) for gpu in (raw.get("GpuInfo") or {}).get("Gpus", []) or [])
        storage = raw.get("InstanceStorageInfo") or {}
        nvme = storage.get("NvmeSupport", "unsupported") in ("required", "supported")
        local = int(storage.get("TotalSizeInGB", 0)) * 10**9 if nvme else 0
        return cls(
            name=str(raw["InstanceType"]),
            vcpus=int((raw.get("VCpuInfo") or {}).get("DefaultVCpus") or 0),
            memory_bytes=int((raw.get("MemoryInfo") or {}).get("SizeInMiB") or 0) * 2**20,
            architecture=_ARM if str(archs[0]) == _ARM else "amd64",
            gpus=((_GPU, gpu_count),) if gpu_count else (),
            local_nvme_bytes=local,
        )


@cache
def _static_types() -> Mapping[str, list[Any]]:
    document = json.loads(files("cloudproviders.aws").joinpath("instance_types.json").read_text(encoding="utf-8"))
    types: Mapping[str, list[Any]] = document["types"]
    return types


def static_instance_type(name: str) -> InstanceTypeInfo | None:
    """The shipped static list's entry for ``name`` (a dated DescribeInstanceTypes snapshot), if any."""
    entry = _static_types().get(name)
    if entry is None:
        return None
    vcpus, memory_mib, architectures, gpus, store_gb, nvme = entry
    return InstanceTypeInfo.from_api({
        "InstanceType": name, "VCpuInfo": {"DefaultVCpus": vcpus}, "MemoryInfo": {"SizeInMiB": memory_mib},
        "ProcessorInfo": {"SupportedArchitectures": architectures}, "GpuInfo": {"Gpus": [{"Count": gpus}]},
        "InstanceStorageInfo": {"TotalSizeInGB": store_gb, "NvmeSupport": nvme},
    })


def build_template(group: str, instance_type: InstanceTypeInfo, *, zone: str, tags: Mapping[str, str],
                   names: StorageNames, root_volume_bytes: int | None = None,
                   requirements: Mapping[str, Any] | None = None, eks: ManagedNodegroup | None = None) -> Node:
    """The node a new instance of ``group`` would register as (see the module docstring)."""
    name = f"{group}-template"
    resources = instance_type_capacity(instance_type, root_volume_bytes)
    if requirements is not None:
        resources.update(requirements_capacity(requirements))
    resources.update(resources_from_tags(tags, group))
    labels = generic_labels(instance_type, zone, name)
    labels.update(labels_from_tags(tags))
    taints = taints_from_tags(tags)
    if eks is not None:
        labels.update(eks.labels)
        taints.extend(eks.taints)
        resources.update(resources_from_tags(eks.tags, group))
    if instance_type.local_nvme_bytes > 0:
        labels.setdefault(names.max_capacity_label, str(instance_type.local_nvme_bytes))
    max_local = _max_local_bytes(group, labels, instance_type, names)
    if max_local is None:
        labels.pop(names.max_capacity_label, None)
    else:
        labels[names.max_capacity_label] = str(max_local)
    capacity = _to_resources(resources)
    return Node(name=name, labels=labels, allocatable=capacity, capacity=capacity, taints=tuple(taints),
                ready=True, max_local_bytes=max_local)


def generic_labels(instance_type: InstanceTypeInfo, zone: str, node_name: str) -> dict[str, str]:
    """CA ``buildGenericLabels``; the region is the zone less its last character, as CA derives it."""
    return {
        "kubernetes.io/arch": instance_type.architecture,
        "kubernetes.io/os": "linux",
        "node.kubernetes.io/instance-type": instance_type.name,
        "topology.kubernetes.io/region": zone[:-1],
        "topology.kubernetes.io/zone": zone,
        EBS_CSI_ZONE_LABEL: zone,
        HOSTNAME_LABEL: node_name,
    }


def instance_type_capacity(instance_type: InstanceTypeInfo, root_volume_bytes: int | None) -> TagResources:
    """Capacity by resource name (cpu in millicores) from the instance type and the root volume."""
    out: TagResources = {"cpu": instance_type.vcpus * 1000, "memory": instance_type.memory_bytes, "pods": _PODS}
    if root_volume_bytes:
        out["ephemeral-storage"] = root_volume_bytes
    out.update(instance_type.gpus)
    return out


def requirements_capacity(requirements: Mapping[str, Any]) -> TagResources:
    """The minimums of attribute-based requirements (CA ``updateCapacityWithRequirementsOverrides``)."""
    out: TagResources = {}
    vcpus = (requirements.get("VCpuCount") or {}).get("Min")
    if vcpus is not None:
        out["cpu"] = int(vcpus) * 1000
    memory = (requirements.get("MemoryMiB") or {}).get("Min")
    if memory is not None:
        out["memory"] = int(memory) * 2**20
    nvidia = "nvidia" in [str(m).lower() for m in requirements.get("AcceleratorManufacturers") or []]
    gpu = "gpu" in [str(t).lower() for t in requirements.get("AcceleratorTypes") or []]
    count = (requirements.get("AcceleratorCount") or {}).get("Min")
    if nvidia and gpu and count is not None:
        out[_GPU] = int(count)
    return out


_BASIC = frozenset({"cpu", "memory", "ephemeral-storage", "pods"})


def _to_resources(resources: Mapping[str, int]) -> Resources:
    extended = tuple(sorted((k, v) for k, v in resources.items() if k not in _BASIC and v))
    return Resources(cpu=resources.get("cpu", 0), memory=resources.get("memory", 0),
                     ephemeral_storage=resources.get("ephemeral-storage", 0), pods=resources.get("pods", 0),
                     extended=extended)


def _max_local_bytes(group: str, labels: Mapping[str, str], instance_type: InstanceTypeInfo,
                     names: StorageNames) -> int | None:
    value = labels.get(names.max_capacity_label)
    if value is None:
        return None
    try:
        parsed = parse_quantity(value)
        if parsed < 0:
            raise ValueError(value)
    except (QuantityError, ValueError):
        log.warning("ignoring a bad max-capacity template tag",
                    extra={"node_group": group, "label": names.max_capacity_label, "value": value})
        return instance_type.local_nvme_bytes or None
    return parsed

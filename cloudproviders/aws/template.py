"""A group's template node from what AWS says, for scale-up from zero (no I/O here).

Built as CA's AWS provider builds it (``cloudprovider/aws/aws_manager.go``,
``buildNodeFromTemplate``): capacity from ``DescribeInstanceTypes`` (vCPU, memory, GPUs),
110 pods, allocatable equal to capacity, the generic labels (os, arch, instance type,
region, zone, hostname), then the group's node-template tags, which win:

* ``k8s.io/cluster-autoscaler/node-template/label/<key>`` = value
* ``k8s.io/cluster-autoscaler/node-template/taint/<key>`` = ``value:Effect``
* ``k8s.io/cluster-autoscaler/node-template/resources/<resource>`` = quantity
* ``k8s.io/cluster-autoscaler/node-template/autoscaling-options/<option>`` (``group_options``)

Storage (this project's addition): an instance type with NVMe instance store gets the
max-capacity label, in bytes, from ``InstanceStorageInfo.TotalSizeInGB`` (AWS's GB are
10^9 bytes), so storage-aware scale-up from zero works; a ``.../label/<max-capacity-label>``
tag overrides it (a byte count, or a quantity such as ``1700Gi``), e.g. for disks that
lose space to formatting or RAID; ``0`` declares that the group has no local storage
(its template then holds no local volume, instead of being assumed unbounded as a group
the cloud knows nothing about). ``Node.max_local_bytes`` follows the label.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cloudproviders.interface import GroupOptions
from cloudproviders.options import OPTION_FIELDS, TAINT_EFFECTS
from kube.autoscaling_options import parse_option_value
from kube.model import Node, Resources, Taint
from kube.names import HOSTNAME_LABEL, StorageNames
from kube.quantity import QuantityError, parse_cpu_millis, parse_quantity

__all__ = ["TEMPLATE_TAG_PREFIX", "InstanceTypeInfo", "build_template", "group_options"]

log = logging.getLogger(__name__)

TEMPLATE_TAG_PREFIX = "k8s.io/cluster-autoscaler/node-template/"
_LABEL = TEMPLATE_TAG_PREFIX + "label/"
_TAINT = TEMPLATE_TAG_PREFIX + "taint/"
_RESOURCE = TEMPLATE_TAG_PREFIX + "resources/"
_OPTION = TEMPLATE_TAG_PREFIX + "autoscaling-options/"
_ARCH = {"x86_64": "amd64", "x86_64_mac": "amd64", "arm64": "arm64", "arm64_mac": "arm64", "i386": "386"}
_GPU_RESOURCE = {"NVIDIA": "nvidia.com/gpu", "AMD": "amd.com/gpu"}
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
        archs = raw.get("ProcessorInfo", {}).get("SupportedArchitectures") or ["x86_64"]
        gpus: dict[str, int] = {}
        for gpu in (raw.get("GpuInfo") or {}).get("Gpus", []) or []:
            resource = _GPU_RESOURCE.get(str(gpu.get("Manufacturer", "")).upper(), "nvidia.com/gpu")
            gpus[resource] = gpus.get(resource, 0) + int(gpu.get("Count", 0))
        storage = raw.get("InstanceStorageInfo") or {}
        nvme = storage.get("NvmeSupport", "unsupported") in ("required", "supported")
        local = int(storage.get("TotalSizeInGB", 0)) * 10**9 if nvme else 0
        return cls(
            name=str(raw["InstanceType"]),
            vcpus=int(raw.get("VCpuInfo", {}).get("DefaultVCpus", 0)),
            memory_bytes=int(raw.get("MemoryInfo", {}).get("SizeInMiB", 0)) * 2**20,
            architecture=_ARCH.get(str(archs[0]), "amd64"),
            gpus=tuple(sorted(gpus.items())),
            local_nvme_bytes=local,
        )


def build_template(group: str, instance_type: InstanceTypeInfo, *, region: str, zone: str,
                   tags: Mapping[str, str], names: StorageNames, root_volume_bytes: int | None = None) -> Node:
    """The node a new instance of ``group`` would register as (see the module docstring)."""
    name = f"{group}-template"
    labels: dict[str, str] = {
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": instance_type.architecture,
        "node.kubernetes.io/instance-type": instance_type.name,
        "topology.kubernetes.io/region": region,
        "topology.kubernetes.io/zone": zone,
        HOSTNAME_LABEL: name,
    }
    if instance_type.local_nvme_bytes > 0:
        labels[names.max_capacity_label] = str(instance_type.local_nvme_bytes)
    for key, value in sorted(tags.items()):
        if key.startswith(_LABEL) and key != _LABEL:
            labels[key.removeprefix(_LABEL)] = value
    max_local = _max_local_bytes(group, labels, instance_type, names)
    if max_local is None:
        labels.pop(names.max_capacity_label, None)
    else:
        labels[names.max_capacity_label] = str(max_local)
    resources = _resources(group, instance_type, tags, root_volume_bytes)
    return Node(
        name=name, labels=labels, allocatable=resources, capacity=resources, taints=_taints(group, tags),
        ready=True, max_local_bytes=max_local,
    )


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


def _resources(group: str, instance_type: InstanceTypeInfo, tags: Mapping[str, str],
               root_volume_bytes: int | None) -> Resources:
    cpu, memory, pods = instance_type.vcpus * 1000, instance_type.memory_bytes, _PODS
    ephemeral = root_volume_bytes or 0
    extended = dict(instance_type.gpus)
    for key, value in sorted(tags.items()):
        if not key.startswith(_RESOURCE) or key == _RESOURCE:
            continue
        resource = key.removeprefix(_RESOURCE)
        try:
            if resource == "cpu":
                cpu = parse_cpu_millis(value)
            elif resource == "memory":
                memory = parse_quantity(value)
            elif resource == "ephemeral-storage":
                ephemeral = parse_quantity(value)
            elif resource == "pods":
                pods = parse_quantity(value)
            else:
                extended[resource] = parse_quantity(value)
        except (QuantityError, ValueError):
            log.warning("ignoring a bad resource template tag", extra={"node_group": group, "tag": key, "value": value})
    return Resources(cpu=cpu, memory=memory, ephemeral_storage=ephemeral, pods=pods,
                     extended=tuple(sorted(extended.items())))


def _taints(group: str, tags: Mapping[str, str]) -> tuple[Taint, ...]:
    taints = []
    for key, value in sorted(tags.items()):
        if not key.startswith(_TAINT) or key == _TAINT:
            continue
        taint_value, sep, effect = value.rpartition(":")
        if not sep or effect not in TAINT_EFFECTS:
            log.warning("ignoring a taint template tag that is not value:Effect",
                        extra={"node_group": group, "tag": key, "value": value})
            continue
        taints.append(Taint(key.removeprefix(_TAINT), taint_value, effect))
    return tuple(taints)


def group_options(group: str, tags: Mapping[str, str]) -> GroupOptions:
    """Per-group overrides from ``.../autoscaling-options/<option>`` tags; bad values are logged and ignored."""
    values: dict[str, float | bool] = {}
    for key, value in tags.items():
        if not key.startswith(_OPTION):
            continue
        option = key.removeprefix(_OPTION)
        # CA's option keys (``config/const.go``); here matched as written (case-sensitive) and a bad
        # tag is logged and ignored, not an error as in options.parse_group_options.
        field_name = OPTION_FIELDS.get(option)
        if field_name is None:
            log.warning("ignoring an unknown autoscaling-options tag", extra={"node_group": group, "tag": key})
            continue
        try:
            values[field_name] = parse_option_value(field_name, value)
        except ValueError:
            log.warning("ignoring a bad autoscaling-options tag", extra={"node_group": group, "tag": key,
                                                                          "value": value})
    return GroupOptions.of(values)

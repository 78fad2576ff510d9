"""The template node of a scale set, from its VM size and CA's node-template tags.

Follows upstream CA's ``cloudprovider/azure/azure_template.go``: capacity from the VM
size (``SkuInfo``), generic labels (arch, os, instance type, region, zone), then the
scale set's tags:

* ``k8s.io_cluster-autoscaler_node-template_label_<key>`` = value,
* ``k8s.io_cluster-autoscaler_node-template_taint_<key>`` = ``value:Effect``,
* ``k8s.io_cluster-autoscaler_node-template_resources_<resource>`` = quantity,
* ``k8s.io_cluster-autoscaler_node-template_autoscaling-options_<option>`` = value,

where a ``<key>`` spells ``/`` as ``_`` and ``_`` as ``~2`` (tag names cannot hold ``/``).

Local storage: the size's local NVMe disks in all become ``Node.max_local_bytes`` and
the max-capacity label; the tag
``k8s.io_cluster-autoscaler_node-template_label_rok.arrikto.com_max-instance-capacity``
(with the configured label name) overrides it. The temp (resource) disk is not local
volume storage and does not count.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from azure.mgmt.compute import models

from cloudproviders.azure.skus import SkuInfo
from cloudproviders.interface import CloudError, GroupOptions
from cloudproviders.options import TAINT_EFFECTS, parse_group_options
from kube.model import Node, Resources, Taint
from kube.names import StorageNames
from kube.quantity import QuantityError, parse_cpu_millis, parse_quantity

__all__ = ["GroupTemplate", "build_template", "decode_tag_key"]

LABEL_TAG = "k8s.io_cluster-autoscaler_node-template_label_"
TAINT_TAG = "k8s.io_cluster-autoscaler_node-template_taint_"
RESOURCES_TAG = "k8s.io_cluster-autoscaler_node-template_resources_"
OPTIONS_TAG = "k8s.io_cluster-autoscaler_node-template_autoscaling-options_"
_GIB = 2**30
_DEFAULT_PODS = 110


@dataclass(frozen=True, slots=True)
class GroupTemplate:
    node: Node
    options: GroupOptions
    vm_size: str


def decode_tag_key(key: str) -> str:
    """``rok.arrikto.com_max-instance-capacity`` -> ``rok.arrikto.com/max-instance-capacity`` (``~2`` is ``_``)."""
    return key.replace("_", "/").replace("~2", "_")


def _prefixed(tags: Mapping[str, str], prefix: str) -> dict[str, str]:
    return {decode_tag_key(key[len(prefix):]): value for key, value in tags.items()
            if key.startswith(prefix) and len(key) > len(prefix)}


def _taints(tags: Mapping[str, str], where: str) -> tuple[Taint, ...]:
    taints = []
    for key, text in sorted(_prefixed(tags, TAINT_TAG).items()):
        value, _, effect = text.rpartition(":")
        if effect not in TAINT_EFFECTS:
            raise CloudError(f"{where}: tag {TAINT_TAG}{key}={text!r}: expected value:Effect, Effect one of "
                             f"{', '.join(TAINT_EFFECTS)}")
        taints.append(Taint(key, value, effect))
    return tuple(taints)


def _resources(sku: SkuInfo, os_disk_bytes: int, tags: Mapping[str, str], where: str) -> Resources:
    cpu, memory, ephemeral, pods = sku.vcpus * 1000, sku.memory_bytes, os_disk_bytes, _DEFAULT_PODS
    extended = {"nvidia.com/gpu": sku.gpus} if sku.gpus else {}
    for name, text in _prefixed(tags, RESOURCES_TAG).items():
        try:
            if name == "cpu":
                cpu = parse_cpu_millis(text)
            elif name == "memory":
                memory = parse_quantity(text)
            elif name == "ephemeral-storage":
                ephemeral = parse_quantity(text)
            elif name == "pods":
                pods = parse_quantity(text)
            else:
                extended[name] = parse_quantity(text)
        except QuantityError as exc:
            raise CloudError(f"{where}: tag {RESOURCES_TAG}{name}: {exc}") from None
    return Resources(cpu=cpu, memory=memory, ephemeral_storage=ephemeral, pods=pods,
                     extended=tuple(sorted((k, v) for k, v in extended.items() if v)))


def _arch(size: str) -> str:
    """Ampere (Arm) sizes carry a ``p`` after the family letter and core count (``Standard_D4ps_v5``)."""
    parts = size.lower().split("_")
    return "arm64" if len(parts) > 1 and "p" in parts[1][1:] else "amd64"


def _os_disk_bytes(scale_set: models.VirtualMachineScaleSet) -> int:
    profile = scale_set.properties.virtual_machine_profile if scale_set.properties else None
    storage = profile.storage_profile if profile else None
    disk = storage.os_disk if storage else None
    return (disk.disk_size_gb or 0) * _GIB if disk else 0


def build_template(scale_set: models.VirtualMachineScaleSet, sku: SkuInfo, storage: StorageNames) -> GroupTemplate:
    """The scale set's template node; ``CloudError`` names the scale set and the tag that is wrong."""
    name = scale_set.name or "vmss"
    where = f"VMSS {name}"
    tags = dict(scale_set.tags or {})
    capacity = _resources(sku, _os_disk_bytes(scale_set), tags, where)
    location = scale_set.location or ""
    zones = list(scale_set.zones or [])
    node_name = f"{name}-template"
    labels = {
        "kubernetes.io/arch": _arch(sku.name),
        "kubernetes.io/os": "linux",
        "node.kubernetes.io/instance-type": sku.name,
        "topology.kubernetes.io/region": location,
        "kubernetes.io/hostname": node_name,
    }
    if len(zones) == 1:
        labels["topology.kubernetes.io/zone"] = f"{location}-{zones[0]}"
    labels.update(_prefixed(tags, LABEL_TAG))
    max_local: int | None = None
    override = labels.get(storage.max_capacity_label)
    if override is not None:
        try:
            max_local = int(override)
        except ValueError:
            raise CloudError(f"{where}: tag {LABEL_TAG}...{storage.max_capacity_label.split('/')[-1]}={override!r} "
                             "is not bytes (a decimal integer)") from None
    elif sku.nvme_bytes > 0:
        max_local = sku.nvme_bytes
        labels[storage.max_capacity_label] = str(sku.nvme_bytes)
    node = Node(name=node_name, labels=labels, allocatable=capacity, capacity=capacity, taints=_taints(tags, where),
                max_local_bytes=max_local)
    return GroupTemplate(node=node, options=parse_group_options(_prefixed(tags, OPTIONS_TAG), where), vm_size=sku.name)

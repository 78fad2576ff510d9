"""The template node of a MIG, from what GCE says: instance template + machine type.

Follows upstream CA's ``cloudprovider/gce/templates.go``: capacity from the machine type
(``machineTypes.get``: ``guestCpus``, ``memoryMb``), GPUs from ``guestAccelerators``,
labels/taints/kube-reserved from the template's ``kube-env`` metadata
(``AUTOSCALER_ENV_VARS: node_labels=...;node_taints=...;kube_reserved=...``, else
``NODE_LABELS``/``NODE_TAINTS``), plus the generic labels (arch, os, instance type,
region, zone). Not modelled: CA's kernel/OS memory reservation estimates.

Local storage: each ``SCRATCH`` disk of the template (and each bundled local SSD
partition of ``-lssd`` machine types) is a local SSD of ``diskSizeGb`` GiB, 375 GiB by
default. Their total becomes ``Node.max_local_bytes`` and the max-capacity label, unless
``node_labels`` already carries that label: then the label wins (the kubelet will
register the node with it, so the template must agree).

Per-group autoscaling options (CA ``NodeGroupAutoscalingOptions``) have no upstream GCE
form; here they come from ``AUTOSCALER_ENV_VARS`` key ``autoscaling_options``
(``autoscaling_options=scaledownutilizationthreshold=0.6,scaledownunneededtime=5m``),
with the option names of CA's AWS/Azure tags.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import yaml
from google.cloud import compute_v1

from cloudproviders.interface import CloudError, GroupOptions
from cloudproviders.options import TAINT_EFFECTS, parse_group_options
from kube.model import Node, Resources, Taint
from kube.names import StorageNames
from kube.quantity import QuantityError, parse_cpu_millis, parse_quantity

__all__ = ["LOCAL_SSD_BYTES", "GroupTemplate", "build_template"]

#: One GCE local SSD partition: 375 GiB.
LOCAL_SSD_BYTES = 375 * 2**30
_GIB = 2**30
_MIB = 2**20
_DEFAULT_PODS = 110


@dataclass(frozen=True, slots=True)
class GroupTemplate:
    node: Node
    options: GroupOptions
    machine_type: str
    local_ssd_count: int


def _pairs(text: str, where: str, what: str) -> dict[str, str]:
    result: dict[str, str] = {}
    for item in (p.strip() for p in text.split(",")):
        if not item:
            continue
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise CloudError(f"{where}: {what}: {item!r} is not key=value")
        result[key] = value
    return result


def _kube_env(template: compute_v1.InstanceTemplate, where: str) -> dict[str, str]:
    items = template.properties.metadata.items if template.properties.metadata else []
    text = next((item.value for item in items if item.key == "kube-env"), None)
    if text is None:
        return {}
    try:
        loaded = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise CloudError(f"{where}: metadata kube-env is not YAML: {exc}") from None
    if not isinstance(loaded, dict):
        raise CloudError(f"{where}: metadata kube-env is not a KEY: value map")
    return {str(k): str(v) for k, v in loaded.items()}


def _autoscaler_vars(kube_env: Mapping[str, str], where: str) -> dict[str, str]:
    result: dict[str, str] = {}
    for part in kube_env.get("AUTOSCALER_ENV_VARS", "").split(";"):
        key, sep, value = part.strip().partition("=")
        if sep:
            result[key.strip()] = value.strip()
        elif key.strip():
            raise CloudError(f"{where}: kube-env AUTOSCALER_ENV_VARS: {part!r} is not name=value")
    return result


def _taints(text: str, where: str) -> tuple[Taint, ...]:
    taints = []
    for key, rest in _pairs(text, where, "node_taints").items():
        value, _, effect = rest.rpartition(":")
        if effect not in TAINT_EFFECTS:
            raise CloudError(f"{where}: node_taints: {key}={rest!r}: effect must be one of {', '.join(TAINT_EFFECTS)}")
        taints.append(Taint(key, value, effect))
    return tuple(taints)


def _reserved(text: str, where: str) -> Resources:
    try:
        pairs = _pairs(text, where, "kube_reserved")
        return Resources(cpu=parse_cpu_millis(pairs.get("cpu", "0")), memory=parse_quantity(pairs.get("memory", "0")),
                         ephemeral_storage=parse_quantity(pairs.get("ephemeral-storage", "0")))
    except QuantityError as exc:
        raise CloudError(f"{where}: kube_reserved: {exc}") from None


def _local_ssds(template: compute_v1.InstanceTemplate, machine: compute_v1.MachineType) -> tuple[int, int]:
    """(count, total bytes) of local SSDs: SCRATCH disks plus bundled partitions."""
    count = 0
    total = 0
    for disk in template.properties.disks:
        if disk.type_ == "SCRATCH":
            size_gb = disk.initialize_params.disk_size_gb if disk.initialize_params else 0
            count += 1
            total += size_gb * _GIB if size_gb else LOCAL_SSD_BYTES
    if machine.bundled_local_ssds and machine.bundled_local_ssds.partition_count:
        count += machine.bundled_local_ssds.partition_count
        total += machine.bundled_local_ssds.partition_count * LOCAL_SSD_BYTES
    return count, total


def _boot_disk_bytes(template: compute_v1.InstanceTemplate) -> int:
    for disk in template.properties.disks:
        if disk.boot:
            size_gb = disk.initialize_params.disk_size_gb if disk.initialize_params else 0
            return (size_gb or disk.disk_size_gb or 10) * _GIB
    return 0


def build_template(group: str, zone: str, template: compute_v1.InstanceTemplate, machine: compute_v1.MachineType,
                   storage: StorageNames) -> GroupTemplate:
    """The group's template node; ``CloudError`` names the template and the field that is wrong."""
    where = f"MIG {group}: instance template {template.name}"
    kube_env = _kube_env(template, where)
    env_vars = _autoscaler_vars(kube_env, where)
    node_labels = _pairs(env_vars.get("node_labels", kube_env.get("NODE_LABELS", "")), where, "node_labels")
    taints = _taints(env_vars.get("node_taints", kube_env.get("NODE_TAINTS", "")), where)
    reserved = _reserved(env_vars.get("kube_reserved", ""), where)
    options = parse_group_options(_pairs(env_vars.get("autoscaling_options", ""), where, "autoscaling_options"), where)

    gpus = sum(a.accelerator_count for a in template.properties.guest_accelerators)
    extended = (("nvidia.com/gpu", gpus),) if gpus else ()
    capacity = Resources(cpu=machine.guest_cpus * 1000, memory=machine.memory_mb * _MIB,
                         ephemeral_storage=_boot_disk_bytes(template), pods=_DEFAULT_PODS, extended=extended)
    allocatable = Resources(cpu=max(0, capacity.cpu - reserved.cpu), memory=max(0, capacity.memory - reserved.memory),
                            ephemeral_storage=max(0, capacity.ephemeral_storage - reserved.ephemeral_storage),
                            pods=capacity.pods, extended=extended)

    ssd_count, ssd_bytes = _local_ssds(template, machine)
    name = f"{group.rsplit('/', 1)[-1]}-template"
    arch = "arm64" if machine.architecture == "ARM64" or machine.name.startswith(("t2a-", "c4a-")) else "amd64"
    labels = {
        "kubernetes.io/arch": arch,
        "kubernetes.io/os": env_vars.get("os", "linux"),
        "node.kubernetes.io/instance-type": machine.name,
        "topology.kubernetes.io/region": zone.rsplit("-", 1)[0],
        "topology.kubernetes.io/zone": zone,
        "kubernetes.io/hostname": name,
        **node_labels,
    }
    max_local: int | None = None
    override = labels.get(storage.max_capacity_label)
    if override is not None:
        try:
            max_local = int(override)
        except ValueError:
            raise CloudError(f"{where}: node_labels {storage.max_capacity_label}={override!r} is not bytes "
                             "(a decimal integer)") from None
    elif ssd_bytes > 0:
        max_local = ssd_bytes
        labels[storage.max_capacity_label] = str(ssd_bytes)
    node = Node(name=name, labels=labels, allocatable=allocatable, capacity=capacity, taints=taints,
                max_local_bytes=max_local)
    return GroupTemplate(node=node, options=options, machine_type=machine.name, local_ssd_count=ssd_count)

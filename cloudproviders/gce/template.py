"""The template node of a MIG, built as upstream CA builds it, one source at a time.

Upstream: ``cluster-autoscaler/cloudprovider/gce/templates.go`` (``BuildNodeFromTemplate``).
The sources, each read by its own function:

- machine type (``machine.py``): vCPUs and physical memory;
- instance template: boot disk size, attached local SSDs, guest accelerators (only
  ``nvidia-*`` count as ``nvidia.com/gpu``);
- kube-env (``kube_env.py``): OS, labels, taints, kube-reserved, eviction thresholds,
  extended resources, what backs ephemeral storage;
- reserves (``reserved.py``): capacity is physical memory minus the kernel's reserve and
  the boot disk minus the OS partition (or the local SSDs minus their filesystem
  overhead); allocatable subtracts kube-reserved and the hard eviction thresholds, and is
  the capacity itself when kube-env states no kube-reserved (as upstream).

Labels: kube-env's, then upstream's generic ones over them (arch, os, instance type,
region, zone, the PD CSI driver's ``topology.gke.io/zone``, hostname).

Local storage (ours): each ``SCRATCH`` disk not backing ephemeral storage (and each
bundled partition of ``-lssd`` types) is a local SSD of ``diskSizeGb`` GiB, 375 GiB by
default; their total becomes ``Node.max_local_bytes`` and the max-capacity label, unless
kube-env's labels carry that label already (then it wins: the kubelet registers it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from google.cloud import compute_v1

from cloudproviders.gce import kube_env as ke
from cloudproviders.gce.machine import MachineShape
from cloudproviders.gce.reserved import (
    EvictionHard,
    OsInfo,
    kernel_reserved,
    local_ssd_overhead,
    os_reserved_ephemeral,
    parse_eviction_hard,
)
from cloudproviders.interface import CloudError
from kube.model import Node, Resources, Taint
from kube.names import StorageNames

__all__ = ["LOCAL_SSD_BYTES", "GroupTemplate", "build_template", "os_info"]

#: One GCE local SSD partition: 375 GiB (upstream ``localssdsize.SimpleLocalSSDProvider``).
LOCAL_SSD_BYTES = 375 * 2**30
_GIB = 2**30
_DEFAULT_PODS = 110
_GPU = "nvidia.com/gpu"


@dataclass(frozen=True, slots=True)
class GroupTemplate:
    node: Node
    machine_type: str
    local_ssd_count: int


@dataclass(frozen=True, slots=True)
class _Ephemeral:
    """Bytes of ephemeral storage before reserves (0: none), and the local SSDs backing it."""

    bytes: int
    local_ssds: int


def os_info(env: ke.KubeEnv) -> OsInfo:
    """Upstream ``MigOsInfo``: an unknown ``os`` is no template; the rest default."""
    os_name = ke.operating_system(env)
    if os_name is None:
        raise CloudError(f"instance template {env.template}: kube-env AUTOSCALER_ENV_VARS: os is not "
                         "linux or windows")
    return OsInfo(os_name, ke.distribution(env), ke.arch(env))


# --- instance template ---------------------------------------------------------------


def boot_disk_bytes(props: compute_v1.InstanceProperties) -> int:
    """``initializeParams.diskSizeGb`` of the boot disk; 0 when unstated (no ephemeral storage)."""
    for disk in props.disks:
        if disk.boot and "initialize_params" in disk:
            return disk.initialize_params.disk_size_gb * _GIB
    return 0


def attached_local_ssds(props: compute_v1.InstanceProperties) -> int:
    """``SCRATCH`` disks of type ``local-ssd`` (upstream ``getLocalSsdCount``)."""
    return sum(1 for d in props.disks if d.type_ == "SCRATCH" and d.initialize_params.disk_type == "local-ssd")


def template_annotations(props: compute_v1.InstanceProperties, env: ke.KubeEnv) -> dict[str, str]:
    """Upstream's template-only annotations (boot disk size and type, local SSDs, what backs storage)."""
    result: dict[str, str] = {}
    for disk in props.disks:
        if disk.boot and "initialize_params" in disk:
            result["cluster-autoscaler/gce/boot-disk-size"] = str(disk.initialize_params.disk_size_gb)
            result["cluster-autoscaler/gce/boot-disk-type"] = disk.initialize_params.disk_type
    if ke.boot_disk_ephemeral_blocked(env):
        result["cluster-autoscaler/gce/ephemeral-storage-local-ssd"] = "true"
    if (count := attached_local_ssds(props)) > 0:
        result["cluster-autoscaler/gce/local-ssd-count"] = str(count)
    return result


def gpu_count(props: compute_v1.InstanceProperties) -> int:
    return sum(a.accelerator_count for a in props.guest_accelerators if a.accelerator_type.startswith("nvidia-"))


def _ephemeral(props: compute_v1.InstanceProperties, env: ke.KubeEnv) -> _Ephemeral:
    count = ke.ephemeral_local_ssd_count(env)
    if count > 0:
        attached = attached_local_ssds(props)
        if attached < count:
            raise CloudError(f"instance template {env.template}: ephemeral_storage_local_ssd_count={count} but "
                             f"{attached} local SSDs attached")
        return _Ephemeral(count * LOCAL_SSD_BYTES, count)
    return _Ephemeral(0 if ke.boot_disk_ephemeral_blocked(env) else boot_disk_bytes(props), 0)


def _local_storage(props: compute_v1.InstanceProperties, machine: MachineShape, ephemeral_ssds: int) -> tuple[int, int]:
    """(all local SSDs, bytes of those free for local volumes: the ones not backing ephemeral storage)."""
    sizes = [d.initialize_params.disk_size_gb * _GIB or LOCAL_SSD_BYTES for d in props.disks if d.type_ == "SCRATCH"]
    sizes += [LOCAL_SSD_BYTES] * machine.bundled_local_ssds
    return len(sizes), sum(sizes[ephemeral_ssds:])


# --- resources -----------------------------------------------------------------------


def capacity(info: OsInfo, machine: MachineShape, gpus: int, ephemeral: _Ephemeral,
             extended: Mapping[str, int]) -> Resources:
    """Upstream ``BuildCapacity``: the kernel's and the OS's shares are never capacity."""
    storage = 0
    if ephemeral.bytes > 0:
        overhead = (local_ssd_overhead(ephemeral.local_ssds, info.distribution) if ephemeral.local_ssds
                    else os_reserved_ephemeral(info, ephemeral.bytes))
        storage = max(ephemeral.bytes - overhead, 0)
    scalars = {**({_GPU: gpus} if gpus else {}), **extended}
    memory = machine.memory_bytes - kernel_reserved(info, machine.memory_bytes)
    standard = {"cpu": machine.cpus * 1000, "memory": memory, "ephemeral-storage": storage, "pods": _DEFAULT_PODS}
    for name in standard.keys() & scalars.keys():  # kube-env may restate a standard resource
        standard[name] = scalars.pop(name) * (1000 if name == "cpu" else 1)
    return Resources(cpu=standard["cpu"], memory=standard["memory"], ephemeral_storage=standard["ephemeral-storage"],
                     pods=standard["pods"], extended=tuple(sorted(scalars.items())))


def allocatable(cap: Resources, reserved: tuple[int, int, int] | None, eviction: EvictionHard) -> Resources:
    """Upstream ``CalculateAllocatable``; no kube-reserved stated: allocatable is capacity."""
    if reserved is None:
        return cap
    cpu, memory, storage = reserved
    ephemeral = 0
    if cap.ephemeral_storage > 0:
        ephemeral = max(cap.ephemeral_storage - storage - eviction.ephemeral_bytes(cap.ephemeral_storage), 0)
    return Resources(cpu=max(cap.cpu - cpu, 0), memory=max(cap.memory - memory - eviction.memory_bytes, 0),
                     ephemeral_storage=ephemeral, pods=cap.pods, extended=cap.extended)


# --- labels --------------------------------------------------------------------------


def generic_labels(zone: str, machine_type: str, hostname: str, info: OsInfo) -> dict[str, str]:
    """Upstream ``BuildGenericLabels``; they win over kube-env's."""
    region, sep, _ = zone.rpartition("-")
    if not sep:
        raise CloudError(f"zone {zone!r}: cannot tell its region")
    return {
        "kubernetes.io/arch": info.arch.value,
        "kubernetes.io/os": info.os,
        "node.kubernetes.io/instance-type": machine_type,
        "topology.kubernetes.io/region": region,
        "topology.kubernetes.io/zone": zone,
        "topology.gke.io/zone": zone,  # the GCE PD CSI driver's topology key
        "kubernetes.io/hostname": hostname,
    }


def _max_local(labels: dict[str, str], ssd_bytes: int, storage: StorageNames, where: str) -> int | None:
    override = labels.get(storage.max_capacity_label)
    if override is not None:
        try:
            return int(override)
        except ValueError:
            raise CloudError(f"{where}: node label {storage.max_capacity_label}={override!r} is not bytes "
                             "(a decimal integer)") from None
    if ssd_bytes > 0:
        labels[storage.max_capacity_label] = str(ssd_bytes)
        return ssd_bytes
    return None


def build_template(group: str, zone: str, template: compute_v1.InstanceTemplate, env: ke.KubeEnv, *,
                   machine: MachineShape, storage: StorageNames) -> GroupTemplate:
    """The group's template node; ``CloudError`` names the template and what is wrong."""
    where = f"MIG {group}: instance template {template.name}"
    info = os_info(env)
    props = template.properties
    ephemeral = _ephemeral(props, env)
    cap = capacity(info, machine, gpu_count(props), ephemeral, ke.extended_resources(env))
    labels: dict[str, str] = {}
    taints: tuple[Taint, ...] = ()
    alloc = cap
    if env.env is not None:  # a template without kube-env: no labels, taints or reserves
        labels = ke.labels(env)
        taints = ke.taints(env)
        alloc = allocatable(cap, ke.kube_reserved(env), parse_eviction_hard(ke.eviction_hard(env)))
    name = f"{group.rsplit('/', 1)[-1]}-template"
    labels.update(generic_labels(zone, machine.name, name, info))
    ssd_count, ssd_bytes = _local_storage(props, machine, ephemeral.local_ssds)
    max_local = _max_local(labels, ssd_bytes, storage, where)
    node = Node(name=name, labels=labels, allocatable=alloc, capacity=cap, taints=taints, max_local_bytes=max_local,
                annotations=template_annotations(props, env))
    return GroupTemplate(node=node, machine_type=machine.name, local_ssd_count=ssd_count)

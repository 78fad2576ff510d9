"""The template node of a scale set: one function per source, joined as upstream joins them.

Sources (upstream CA's ``cloudprovider/azure/azure_template.go``, ``buildNodeFromTemplate``
and ``processVMSSTemplate``):

1. the VM size (``skus.SkuInfo``): cpu, memory, 110 pods, GPUs as ``nvidia.com/gpu``
   (the NP series' are Xilinx FPGAs, under their device plugin's resource name);
2. the scale set's properties (``vmss.VmssFacts``): ephemeral storage from the OS disk
   size, the generic labels and the AKS label predictions (``labels.py``);
3. its tags (``tags.py``): every tag as a label, as upstream; then the node-template
   label, taint and resource tags (and the per-group options, which the group reads from
   the tags itself, template or not, as upstream's ``GetOptions``).

Labels are joined in upstream's order: raw tags, then generic labels over them, then the
label tags and predictions over both. Resource tags override the size's amounts.

Local storage (ours): the size's local NVMe disks in all become ``Node.max_local_bytes``
and the max-capacity label; the label tag
``k8s.io_cluster-autoscaler_node-template_label_rok.arrikto.com_max-instance-capacity``
(with the configured label name) overrides it.
"""

from __future__ import annotations

from dataclasses import dataclass

from cloudproviders.azure.labels import aks_labels, generic_labels
from cloudproviders.azure.skus import SkuInfo
from cloudproviders.azure.tags import labels_from_tags, options_from_tags, resources_from_tags, taints_from_tags
from cloudproviders.azure.vmss import VmssFacts
from kube.model import Node, Resources
from kube.names import StorageNames

__all__ = ["NVIDIA_GPU", "XILINX_FPGA", "GroupTemplate", "build_template", "size_resources"]

NVIDIA_GPU = "nvidia.com/gpu"
#: The resource the Xilinx device plugin registers the NP series' FPGAs under (upstream ``xilinxFpgaResourceName``).
XILINX_FPGA = "xilinx.com/fpga-xilinx_u250_gen3x16_xdma_shell_2_1-0"
_GIB = 2**30
_DEFAULT_PODS = 110
_NAMED = {"cpu", "memory", "ephemeral-storage", "pods"}


@dataclass(frozen=True, slots=True)
class GroupTemplate:
    node: Node
    vm_size: str
    #: One message per tag left out of the template (logged by the group).
    dropped: tuple[str, ...] = ()


def size_resources(sku: SkuInfo) -> dict[str, int]:
    """What the VM size gives, by resource name (cpu in millicores)."""
    accelerator = XILINX_FPGA if sku.name.lower().startswith("standard_np") else NVIDIA_GPU
    return {"cpu": sku.vcpus * 1000, "memory": sku.memory_bytes, "pods": _DEFAULT_PODS, accelerator: sku.gpus}


def _ephemeral(facts: VmssFacts) -> dict[str, int]:
    size = facts.os_disk.size_gb if facts.os_disk else None
    return {"ephemeral-storage": size * _GIB} if size is not None else {}


def _resources(amounts: dict[str, int]) -> Resources:
    extended = tuple(sorted((k, v) for k, v in amounts.items() if k not in _NAMED and v))
    return Resources(cpu=amounts.get("cpu", 0), memory=amounts.get("memory", 0),
                     ephemeral_storage=amounts.get("ephemeral-storage", 0), pods=amounts.get("pods", 0),
                     extended=extended)


def _labels(facts: VmssFacts, sku: SkuInfo, node_name: str, predict: bool) -> dict[str, str]:
    labels = dict(facts.tags) | generic_labels(facts, sku.arch, node_name)
    labels |= labels_from_tags(facts.tags) | (aks_labels(facts) if predict else {})
    return labels


def _local_storage(labels: dict[str, str], sku: SkuInfo, storage: StorageNames) -> tuple[int | None, tuple[str, ...]]:
    """The max local bytes (the label tag wins over the size's NVMe); sets or drops the label to agree."""
    key = storage.max_capacity_label
    dropped: tuple[str, ...] = ()
    if key in labels:
        text = labels[key]
        if text.isdigit():
            return int(text), ()
        del labels[key]
        dropped = (f"label tag {key}={text!r}: not bytes (a decimal integer)",)
    if sku.nvme_bytes > 0:
        labels[key] = str(sku.nvme_bytes)
        return sku.nvme_bytes, dropped
    return None, dropped


def build_template(facts: VmssFacts, sku: SkuInfo, storage: StorageNames, *,
                   predict_labels: bool = True) -> GroupTemplate:
    """The scale set's template node; a malformed tag is left out and named in ``dropped``."""
    node_name = f"{facts.name}-template"
    from_tags = resources_from_tags(facts.tags)
    capacity = _resources(size_resources(sku) | _ephemeral(facts) | from_tags.value)
    labels = _labels(facts, sku, node_name, predict_labels)
    max_local, storage_dropped = _local_storage(labels, sku, storage)
    taints = taints_from_tags(facts.tags)
    options = options_from_tags(facts.tags)  # read by the group itself; here for its messages
    node = Node(name=node_name, labels=labels, allocatable=capacity, capacity=capacity, taints=taints.value,
                max_local_bytes=max_local)
    dropped = from_tags.dropped + storage_dropped + taints.dropped + options.dropped
    return GroupTemplate(node=node, vm_size=sku.name, dropped=dropped)

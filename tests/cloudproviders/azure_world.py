"""The standard Azure world on the fake (two scale sets and their SKUs) and a provider on it.

"nvme": Standard_L8s_v3 (8 vCPU, 64 GiB, one 1.92 TB NVMe disk); its tag
``k8s.io_cluster-autoscaler_node-template_label_rok.arrikto.com_max-instance-capacity``
says 1,900,000,000,000 bytes (what the local-volume driver can use), which overrides
the size's NVMe total. "general": Standard_D4s_v5 (4 vCPU, 16 GiB), no local disk.
"""

from __future__ import annotations

import dataclasses

from cloudproviders.azure import AzureProvider, RetryPolicy, make_provider
from cloudproviders.azure.settings import AzureSettings
from cloudproviders.config import ProviderConfig, StaticGroup
from kube.model import Node
from kube.names import StorageNames
from tests.cloudproviders.fakes.azure import FakeAzure
from tests.factories import node

__all__ = ["NVME_BYTES", "NVME_TAG", "azure_node", "azure_provider", "standard_world"]

NVME_BYTES = 1_900_000_000_000
NVME_TAG = "k8s.io_cluster-autoscaler_node-template_label_" + StorageNames().max_capacity_label.replace("/", "_")


def standard_world(fake: FakeAzure) -> None:
    fake.add_sku("Standard_L8s_v3", 8, 64, temp_mb=81920, nvme_mib=1831054)
    fake.add_sku("Standard_D4s_v5", 4, 16)
    fake.add_scale_set("nvme", "Standard_L8s_v3", 0, tags={
        NVME_TAG: str(NVME_BYTES), "k8s.io_cluster-autoscaler_node-template_label_pool": "nvme",
        "k8s.io_cluster-autoscaler_node-template_taint_storage": "local:NoSchedule"})
    fake.add_scale_set("general", "Standard_D4s_v5", 2)


def azure_provider(fake: FakeAzure, sleeps: list[float], *, static: tuple[StaticGroup, ...] | None = None,
                   auto: tuple[str, ...] = (), price_file: str | None = None,
                   clock: list[float] | None = None, label_predictions: bool = True) -> AzureProvider:
    """A provider on the fake; every retry wait is recorded in ``sleeps`` instead of slept."""
    if static is None:
        static = (StaticGroup(0, 10, "nvme"), StaticGroup(1, 5, "general"))
    config = ProviderConfig(static_groups=static, auto_discovery=auto, price_file=price_file)
    settings = AzureSettings(subscription_id=fake.subscription, resource_group=fake.resource_group,
                             endpoint=fake.url, operation_timeout_seconds=10.0, polling_interval_seconds=0.0,
                             label_predictions=label_predictions)
    now = clock if clock is not None else [0.0]
    return make_provider(config, settings, RetryPolicy(sleep=sleeps.append), clock=lambda: now[0])


def azure_node(name: str, fake: FakeAzure, vmss: str, instance_id: str) -> Node:
    """A node as the kubelet registers that VM (the resource group in lower case, as AKS nodes often carry it)."""
    vm_id = fake.vmss_id(vmss).replace(f"resourceGroups/{fake.resource_group}", f"resourcegroups/{fake.resource_group}")
    return dataclasses.replace(node(name), provider_id=f"azure://{vm_id}/virtualMachines/{instance_id}")

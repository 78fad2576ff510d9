"""Scale-from-zero templates, one table per source, as upstream CA builds them (``azure_template.go``).

Every case goes through the provider over the Microsoft.Compute fake: the scale set and
its SKU are ARM JSON, and the template is what ``run --cloud-provider=azure`` would plan
with. Cases are transcribed from upstream's ``azure_template_test.go``,
``azure_scale_set_test.go`` (``TestScaleSetTemplateNodeInfo``) and ``azure_manager_test.go``
(``TestGetScaleSetOptions``), plus the rules of the code they test.
"""

from __future__ import annotations

from typing import Any

import pytest

from cloudproviders.config import StaticGroup
from kube.model import Node
from tests.cloudproviders.azure.build import MIB, TAG, XILINX, built, forbid_skus, template
from tests.cloudproviders.azure_world import azure_provider
from tests.cloudproviders.fakes.azure import FakeAzure

# --- source 1: the VM size (SKU API, else the static table) -----------------------------------------------

#: vCPUs, memory MiB, arch label, extended resources.
Shape = tuple[int, int, str, tuple[tuple[str, int], ...]]


def shape(node: Node) -> Shape:
    return (node.capacity.cpu // 1000, node.capacity.memory // MIB, node.labels["kubernetes.io/arch"],
            node.capacity.extended)


@pytest.mark.parametrize(("size", "expected"), [
    pytest.param("Standard_A1_v2", (1, 2048, "amd64", ()), id="small-size-outside-the-old-table"),
    pytest.param("Standard_D32ps_v5", (32, 131072, "arm64", ()), id="arm64-from-the-table"),
    pytest.param("Standard_NC6s_v3", (6, 114688, "amd64", (("nvidia.com/gpu", 1),)), id="gpu-size"),
    pytest.param("Standard_NP10s", (10, 172032, "amd64", ((XILINX, 1),)), id="np-series-fpga-is-not-a-gpu"),
    pytest.param("Standard_D2s_v3_Promo", (2, 8192, "amd64", ()), id="promo-falls-back-to-standard"),
    pytest.param("standard_e2s_v3", (2, 16384, "amd64", ()), id="name-case-insensitive"),
])
def test_without_the_sku_permission_the_full_static_table(fake: FakeAzure, sleeps: list[float], size: str,
                                                          expected: Shape) -> None:
    forbid_skus(fake)
    node = template(fake, sleeps, size)
    assert node.labels["kubernetes.io/arch"] == node.labels["beta.kubernetes.io/arch"]
    assert shape(node) == expected


@pytest.mark.parametrize(("sku", "expected"), [
    pytest.param({"cpus": 16, "memory_gib": 64, "arch": "Arm64"}, (16, 65536, "arm64", ()), id="api-arm64"),
    pytest.param({"cpus": 4, "memory_gib": 15.5, "arch": "x64"}, (4, 15 * 1024, "amd64", ()),
                 id="api-memory-whole-gb-as-upstream"),
    pytest.param({"cpus": 12, "memory_gib": 220.5, "gpus": 2}, (12, 220 * 1024, "amd64", (("nvidia.com/gpu", 2),)),
                 id="api-gpus"),
    # Without CpuArchitectureType upstream's SKU lookup fails and the static table answers.
    pytest.param({"cpus": 99, "memory_gib": 99, "arch": None}, (4, 16384, "amd64", ()), id="api-incomplete-uses-table"),
])
def test_size_from_the_sku_api(fake: FakeAzure, sleeps: list[float], sku: dict[str, Any], expected: Shape) -> None:
    fake.add_sku("Standard_D4s_v5", **sku)
    assert shape(template(fake, sleeps, "Standard_D4s_v5")) == expected


def test_np_series_from_the_api_is_an_fpga(fake: FakeAzure, sleeps: list[float]) -> None:
    fake.add_sku("Standard_NP20s", 20, 336, gpus=2)
    node = template(fake, sleeps, "Standard_NP20s")
    assert node.capacity.extended == ((XILINX, 2),)


# --- source 2: the scale set's properties ---------------------------------------------------------------

@pytest.mark.parametrize(("location", "zones", "expected"), [
    pytest.param("westus", ["2"], ("westus-2", "westus-2"), id="zonal"),
    pytest.param("westus", ["1", "2", "3"], ("westus-1", "westus-1"), id="multi-zone-one-of-them"),
    pytest.param("westus", [], ("0", ""), id="non-zonal"),
    pytest.param("WestUS", ["3"], ("westus-3", "westus-3"), id="region-lower-case"),
])
def test_zone_labels(fake: FakeAzure, sleeps: list[float], location: str, zones: list[str],
                     expected: tuple[str, str]) -> None:
    """(zone, Azure Disk zone); upstream picks any of several zones, we the first (reproducible plans)."""
    zone, disk_zone = expected
    labels = template(fake, sleeps, location=location, zones=zones).labels
    assert labels["topology.kubernetes.io/zone"] == labels["failure-domain.beta.kubernetes.io/zone"] == zone
    assert labels["topology.disk.csi.azure.com/zone"] == disk_zone
    assert labels["topology.kubernetes.io/region"] == labels["failure-domain.beta.kubernetes.io/region"] == "westus"


@pytest.mark.parametrize(("windows", "os"), [
    pytest.param(True, "windows", id="windows"),
    pytest.param(False, "linux", id="linux"),
])
def test_os_from_the_vm_profile(fake: FakeAzure, sleeps: list[float], windows: bool, os: str) -> None:
    labels = template(fake, sleeps, windows=windows).labels
    assert labels["kubernetes.io/os"] == labels["beta.kubernetes.io/os"] == os
    assert labels["node.kubernetes.io/instance-type"] == labels["beta.kubernetes.io/instance-type"] == "Standard_D4s_v5"


EPHEMERAL = {"diffDiskSettings": {"option": "Local"}, "diskSizeGB": 64,
             "managedDisk": {"storageAccountType": "Standard_LRS"}}


@pytest.mark.parametrize(("os_disk", "expected", "ephemeral_bytes"), [
    pytest.param({"diskSizeGB": 128, "managedDisk": {"storageAccountType": "Premium_LRS"}},
                 {"storageprofile": "managed", "storagetier": "Premium_LRS"}, 128 * 2**30, id="managed"),
    pytest.param(EPHEMERAL, {"storageprofile": "ephemeral", "storagetier": "Standard_LRS"}, 64 * 2**30,
                 id="ephemeral"),
    pytest.param({"createOption": "FromImage"}, {"storageprofile": "managed"}, 0, id="no-size-no-tier"),
])
def test_storage_profile_and_tier_predicted(fake: FakeAzure, sleeps: list[float], os_disk: dict[str, Any] | None,
                                            expected: dict[str, str], ephemeral_bytes: int) -> None:
    node = template(fake, sleeps, os_disk=os_disk)
    for key in ("storageprofile", "storagetier"):
        assert node.labels.get(key) == node.labels.get(f"kubernetes.azure.com/{key}") == expected.get(key)
    assert node.capacity.ephemeral_storage == ephemeral_bytes


@pytest.mark.parametrize(("tags", "pool"), [
    pytest.param({"poolName": "nodepool1"}, "nodepool1", id="legacy-pool-tag"),
    pytest.param({"aks-managed-poolName": "np2"}, "np2", id="pool-tag"),
    pytest.param({"poolName": "old", "aks-managed-poolName": "new"}, "new", id="new-tag-wins"),
    pytest.param({"poolName": "p", TAG + "label_agentpool": "mine"}, "p", id="prediction-wins-over-label-tag"),
])
def test_agent_pool_predicted(fake: FakeAzure, sleeps: list[float], tags: dict[str, str], pool: str) -> None:
    labels = template(fake, sleeps, tags=tags).labels
    assert labels["agentpool"] == labels["kubernetes.azure.com/agentpool"] == pool


def test_nvidia_sizes_predict_the_accelerator(fake: FakeAzure, sleeps: list[float]) -> None:
    labels = template(fake, sleeps, "Standard_NC6s_v3").labels
    assert labels["kubernetes.azure.com/accelerator"] == labels["accelerator"] == "nvidia"


def test_predictions_can_be_switched_off(fake: FakeAzure, sleeps: list[float]) -> None:
    node = built(fake, sleeps, "Standard_NC6s_v3", predictions=False, tags={"poolName": "p"}).template_node()
    assert node is not None
    assert not {"agentpool", "kubernetes.azure.com/agentpool", "storageprofile", "accelerator"} & set(node.labels)
    assert node.labels["poolName"] == "p"  # every tag is still a label, as upstream


def test_a_changed_vm_profile_rebuilds_the_template(fake: FakeAzure, sleeps: list[float]) -> None:
    fake.add_scale_set("pool", "Standard_D4s_v5")
    provider = azure_provider(fake, sleeps, static=(StaticGroup(0, 5, "pool"),))
    provider.refresh()
    (group,) = provider.node_groups()

    def os_label() -> str | None:
        node = group.template_node()
        return node.labels.get("kubernetes.io/os") if node is not None else None

    assert os_label() == "linux"
    fake.scale_sets["pool"].windows = True
    provider.refresh()
    assert os_label() == "windows"
    provider.close()

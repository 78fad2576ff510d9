"""The Azure provider against the Microsoft.Compute fake: groups, templates, acting, instances, mapping."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from cloudproviders.azure import AzureProvider
from cloudproviders.azure.group import VmssGroup
from cloudproviders.config import ProviderConfig, StaticGroup, load_provider
from cloudproviders.interface import (
    CloudError,
    InstanceErrorClass,
    InstanceState,
    Priced,
    WithGroupOptions,
    price_of,
)
from kube.names import StorageNames
from tests.cloudproviders.azure_world import NVME_BYTES, azure_node, azure_provider
from tests.cloudproviders.fakes.azure import FakeAzure
from tests.factories import node

LABEL = StorageNames().max_capacity_label
TAG = "k8s.io_cluster-autoscaler_node-template_"


def group(provider: AzureProvider, name: str) -> VmssGroup:
    found = [g for g in provider.node_groups() if g.name == name]
    assert len(found) == 1, [g.name for g in provider.node_groups()]
    assert isinstance(found[0], VmssGroup)
    return found[0]


def one_group(fake: FakeAzure, sleeps: list[float], name: str, low: int = 0, high: int = 5) -> AzureProvider:
    built = azure_provider(fake, sleeps, static=(StaticGroup(low, high, name),))
    built.refresh()
    return built


def test_build_provider_reads_the_cloud_config_file(fake: FakeAzure, tmp_path: Path) -> None:
    config_file = tmp_path / "azure.json"
    config_file.write_text(json.dumps({"subscriptionId": fake.subscription, "resourceGroup": fake.resource_group,
                                       "resourceManagerEndpoint": fake.url, "pollingInterval": "0s"}))
    config = ProviderConfig(static_groups=(StaticGroup(1, 5, "general"),), cloud_config=str(config_file))
    built = load_provider("azure", config)
    assert isinstance(built, AzureProvider)
    try:
        built.refresh()
        (only,) = built.node_groups()
        assert (only.name, only.min_size(), only.max_size(), only.target_size()) == ("general", 1, 5, 2)
        assert len(only.instances()) == 2
    finally:
        built.close()
    assert set(fake.tokens) == {"Bearer loopback-test-token"}  # a static token, over loopback http only


def test_a_resource_id_names_a_static_group(fake: FakeAzure, sleeps: list[float]) -> None:
    built = one_group(fake, sleeps, fake.vmss_id("general"), 1)
    assert [g.name for g in built.node_groups()] == ["general"]
    built.close()


def test_a_scale_set_named_twice_is_one_group_with_the_last_bounds(fake: FakeAzure, sleeps: list[float]) -> None:
    """Upstream registers a repeated --nodes scale set once, the later bounds replacing the earlier."""
    twice = (StaticGroup(1, 3, "general"), StaticGroup(0, 7, fake.vmss_id("GENERAL")))
    built = azure_provider(fake, sleeps, static=twice)
    built.refresh()
    assert [(g.name, g.min_size(), g.max_size()) for g in built.node_groups()] == [("GENERAL", 0, 7)]
    built.close()


def test_nvme_template_from_sku_and_tags(provider: AzureProvider) -> None:
    template = group(provider, "nvme").template_node()
    assert template is not None
    assert (template.capacity.cpu, template.capacity.memory) == (8000, 64 * 2**30)
    assert template.labels[LABEL] == str(NVME_BYTES)
    assert template.max_local_bytes == NVME_BYTES
    assert template.labels["pool"] == "nvme"
    assert template.labels["node.kubernetes.io/instance-type"] == "Standard_L8s_v3"
    assert [(t.key, t.value, t.effect) for t in template.taints] == [("storage", "local", "NoSchedule")]


def test_general_template_has_no_local_storage(provider: AzureProvider) -> None:
    template = group(provider, "general").template_node()
    assert template is not None
    assert (template.capacity.cpu, template.capacity.memory) == (4000, 16 * 2**30)
    assert LABEL not in template.labels
    assert template.max_local_bytes is None


@pytest.mark.parametrize(("size", "in_api", "expected"), [
    pytest.param("Standard_L16s_v3", True, 2 * 1831054 * 2**20, id="resource-skus-api"),
    pytest.param("Standard_L16s_v3", False, 2 * 1_920_000_000_000, id="shipped-table"),
    pytest.param("Standard_D8s_v5", False, None, id="table-no-nvme"),
])
def test_nvme_size_sets_the_label(fake: FakeAzure, sleeps: list[float], size: str, in_api: bool,
                                  expected: int | None) -> None:
    if in_api:
        fake.add_sku(size, 16, 128, temp_mb=163840, nvme_mib=2 * 1831054)
    fake.add_scale_set("pool", size)
    built = one_group(fake, sleeps, "pool")
    template = group(built, "pool").template_node()
    built.close()
    assert template is not None
    assert template.max_local_bytes == expected
    assert template.labels.get(LABEL) == (str(expected) if expected else None)


def test_unknown_size_gives_no_template(fake: FakeAzure, sleeps: list[float], caplog: pytest.LogCaptureFixture) -> None:
    fake.add_scale_set("odd", "Standard_Z99_v9")
    built = one_group(fake, sleeps, "odd")
    assert group(built, "odd").template_node() is None
    built.close()
    assert any("VM size unknown" in r.getMessage() for r in caplog.records)


def test_skus_unavailable_fall_back_to_the_table(fake: FakeAzure, sleeps: list[float]) -> None:
    fake.fail_next("skus", "notfound")
    fake.add_scale_set("pool", "Standard_L8s_v3")
    built = one_group(fake, sleeps, "pool")
    template = group(built, "pool").template_node()
    built.close()
    assert template is not None and template.max_local_bytes == 1_920_000_000_000


def test_resource_tags_options_and_encoded_keys(fake: FakeAzure, sleeps: list[float]) -> None:
    fake.add_scale_set("tagged", "Standard_D4s_v5", tags={
        TAG + "resources_cpu": "3500m", TAG + "resources_nvidia.com_gpu": "1",
        TAG + "label_example.com_tier~2name": "gold",
        TAG + "autoscaling-options_scaledownunneededtime": "7m",
        TAG + "autoscaling-options_scaledownutilizationthreshold": "0.3",
        TAG + "autoscaling-options_ignoredaemonsetsutilization": "False"})
    built = one_group(fake, sleeps, "tagged")
    tagged = group(built, "tagged")
    template = tagged.template_node()
    built.close()
    assert template is not None
    assert template.capacity.cpu == 3500
    assert template.capacity.get_extended("nvidia.com/gpu") == 1
    assert template.labels["example.com/tier_name"] == "gold"
    assert isinstance(tagged, WithGroupOptions)
    assert tagged.group_options().scale_down_unneeded_seconds == 420.0
    assert tagged.group_options().scale_down_utilization_threshold == 0.3
    assert tagged.group_options().ignore_daemonsets_utilization is False


@pytest.mark.parametrize("tags", [
    pytest.param({TAG + "taint_a": "b:Sometimes"}, id="bad-taint-effect"),
    pytest.param({TAG + "label_" + LABEL.replace("/", "_"): "lots"}, id="label-not-bytes"),
    pytest.param({TAG + "resources_memory": "much"}, id="bad-quantity"),
    pytest.param({TAG + "autoscaling-options_scaledownspeed": "3"}, id="unknown-option"),
])
def test_a_bad_tag_is_left_out_with_a_warning(fake: FakeAzure, sleeps: list[float], tags: dict[str, str],
                                              caplog: pytest.LogCaptureFixture) -> None:
    """Upstream drops the one tag and still builds the template (``azure_template.go``)."""
    fake.add_scale_set("bad", "Standard_D4s_v5", tags=tags)
    built = one_group(fake, sleeps, "bad")
    template = group(built, "bad").template_node()
    built.close()
    assert template is not None and template.capacity.cpu == 4000
    assert any(r.getMessage() == "template tag left out" for r in caplog.records)


def test_increase_updates_capacity_and_instances_follow(provider: AzureProvider, fake: FakeAzure) -> None:
    nvme = group(provider, "nvme")
    nvme.increase_size(3)
    assert nvme.target_size() == 3
    assert fake.scale_sets["nvme"].capacity == 3
    provider.refresh()
    assert [i.state for i in nvme.instances()] == [InstanceState.CREATING] * 3
    fake.settle()
    provider.refresh()
    assert [i.state for i in nvme.instances()] == [InstanceState.RUNNING] * 3


@pytest.mark.parametrize("delta", [pytest.param(0, id="zero"), pytest.param(11, id="above-max")])
def test_increase_refuses_bad_deltas_without_calling(provider: AzureProvider, fake: FakeAzure, delta: int) -> None:
    with pytest.raises(CloudError, match="nvme"):
        group(provider, "nvme").increase_size(delta)
    assert not any(call.startswith("PATCH") for call in fake.calls)


def test_delete_nodes_by_provider_id_case_insensitively(provider: AzureProvider, fake: FakeAzure) -> None:
    general = group(provider, "general")
    general.increase_size(1)
    provider.refresh()
    victim = azure_node("n1", fake, "general", "1")
    assert provider.node_group_for(victim) is general
    general.delete_nodes([victim])
    assert general.target_size() == 2
    assert [vm.instance_id for vm in fake.scale_sets["general"].vms] == ["0", "2"]


def test_delete_refuses_strangers_and_going_below_min(provider: AzureProvider, fake: FakeAzure) -> None:
    general = group(provider, "general")
    with pytest.raises(CloudError, match="not an instance of this scale set"):
        general.delete_nodes([azure_node("stranger", fake, "general", "77")])
    with pytest.raises(CloudError, match="below min size 1"):
        general.delete_nodes([azure_node("a", fake, "general", "0"), azure_node("b", fake, "general", "1")])


@pytest.mark.parametrize(("code", "expected"), [
    pytest.param("AllocationFailed", InstanceErrorClass.OUT_OF_CAPACITY, id="allocation"),
    pytest.param("ZonalAllocationFailed", InstanceErrorClass.OUT_OF_CAPACITY, id="zonal"),
    pytest.param("SkuNotAvailable", InstanceErrorClass.OUT_OF_CAPACITY, id="sku"),
    pytest.param("QuotaExceeded", InstanceErrorClass.QUOTA, id="quota"),
    pytest.param("VMExtensionProvisioningError", InstanceErrorClass.OTHER, id="extension"),
])
def test_failed_vms_are_instances_with_errors(provider: AzureProvider, fake: FakeAzure, code: str,
                                              expected: InstanceErrorClass) -> None:
    fake.scale_sets["nvme"].stockout = code
    nvme = group(provider, "nvme")
    nvme.increase_size(2)
    provider.refresh()
    assert [i.state for i in nvme.instances()] == [InstanceState.CREATING] * 2
    assert all(i.error is not None and i.error.error_class is expected and i.error.code == code
               for i in nvme.instances())


def test_creating_vms_are_creating(provider: AzureProvider, fake: FakeAzure) -> None:
    general = group(provider, "general")
    general.increase_size(1)
    fake.scale_sets["general"].vms[-1].state = "Creating"
    provider.refresh()
    assert [i.state for i in general.instances()] == [InstanceState.RUNNING] * 2 + [InstanceState.CREATING]
    fake.settle()
    provider.refresh()
    assert [i.state for i in general.instances()] == [InstanceState.RUNNING] * 3


def test_decrease_target_removes_only_vms_not_running(provider: AzureProvider, fake: FakeAzure) -> None:
    fake.scale_sets["general"].stockout = "AllocationFailed"
    general = group(provider, "general")
    general.increase_size(2)
    provider.refresh()
    general.decrease_target_size(-2)
    assert general.target_size() == 2
    assert [vm.instance_id for vm in fake.scale_sets["general"].vms] == ["0", "1"]
    with pytest.raises(CloudError, match="attempt to delete existing nodes"):
        general.decrease_target_size(-1)


def test_node_group_for_checks_subscription_and_group(provider: AzureProvider, fake: FakeAzure) -> None:
    general = group(provider, "general")
    mine = azure_node("n", fake, "general", "0")
    assert provider.node_group_for(mine) is general
    assert provider.node_group_for(dataclasses.replace(mine, provider_id=mine.provider_id.upper())) is general
    other_sub = mine.provider_id.replace(fake.subscription, "sub-2")
    assert provider.node_group_for(dataclasses.replace(mine, provider_id=other_sub)) is None
    assert provider.node_group_for(azure_node("x", fake, "unmanaged", "0")) is None
    assert provider.node_group_for(node("no-provider-id")) is None


def test_auto_discovery_by_tags(fake: FakeAzure, sleeps: list[float], caplog: pytest.LogCaptureFixture) -> None:
    fake.page_size = 2  # the list comes in pages (nextLink)
    fake.add_scale_set("pool-a", "Standard_D4s_v5", 1, tags={"autoscale": "yes", "min": "1", "max": "4"})
    fake.add_scale_set("pool-b", "Standard_D4s_v5", 0, tags={"autoscale": "yes", "min": "0", "max": "9"})
    fake.add_scale_set("pool-c", "Standard_D4s_v5", 0, tags={"autoscale": "yes"})
    fake.add_scale_set("pool-d", "Standard_D4s_v5", 0, tags={"autoscale": "no", "min": "0", "max": "9"})
    built = azure_provider(fake, sleeps, static=(StaticGroup(0, 2, "pool-b"),), auto=("label:autoscale=yes",))
    built.refresh()
    bounds = {g.name: (g.min_size(), g.max_size()) for g in built.node_groups()}
    built.close()
    assert bounds == {"pool-a": (1, 4), "pool-b": (0, 2)}
    assert any("pool-c" in str(r.__dict__.get("node_group")) for r in caplog.records)


def test_refresh_relists_vms_on_the_timer_only_when_idle(fake: FakeAzure, sleeps: list[float]) -> None:
    clock = [0.0]
    built = azure_provider(fake, sleeps, clock=clock)
    built.refresh()
    lists = sum(c.endswith("/virtualMachines") for c in fake.calls)
    built.refresh()
    assert sum(c.endswith("/virtualMachines") for c in fake.calls) == lists
    clock[0] = 61.0
    built.refresh()
    assert sum(c.endswith("/virtualMachines") for c in fake.calls) == lists + 2
    built.close()


def test_prices(provider: AzureProvider, fake: FakeAzure, sleeps: list[float], tmp_path: Path) -> None:
    nvme = group(provider, "nvme")
    assert isinstance(nvme, Priced)
    assert price_of(nvme) == pytest.approx(0.624)
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"Standard_D4s_v5": 0.25}))
    built = azure_provider(fake, sleeps, price_file=str(prices))
    built.refresh()
    assert price_of(group(built, "general")) == 0.25
    built.close()


def test_unknown_vm_triggers_one_relist_per_interval(fake: FakeAzure, sleeps: list[float]) -> None:
    clock = [0.0]
    built = azure_provider(fake, sleeps, clock=clock)
    built.refresh()
    general = group(built, "general")
    fake.scale_sets["general"].vms.append(type(fake.scale_sets["general"].vms[0])("42"))

    def lists() -> int:
        return sum(c.endswith("/general/virtualMachines") for c in fake.calls)

    before = lists()
    assert built.node_group_for(azure_node("new", fake, "general", "42")) is general
    assert lists() == before + 1
    assert built.node_group_for(azure_node("ghost", fake, "general", "99")) is None
    assert lists() == before + 1  # a miss within the interval asks nobody
    clock[0] = 11.0
    assert built.node_group_for(azure_node("ghost", fake, "general", "99")) is None
    assert built.node_group_for(azure_node("ghost", fake, "general", "98")) is None
    assert lists() == before + 2
    built.close()


def test_decrease_reads_fresh_and_spares_a_vm_that_came_up(provider: AzureProvider, fake: FakeAzure) -> None:
    nvme = group(provider, "nvme")
    nvme.increase_size(1)
    provider.refresh()
    assert [i.state for i in nvme.instances()] == [InstanceState.CREATING]
    fake.settle()  # up (and maybe registered) since the cache was filled
    with pytest.raises(CloudError, match="attempt to delete existing nodes"):
        nvme.decrease_target_size(-1)
    assert len(fake.scale_sets["nvme"].vms) == 1

"""The GCE provider against the compute v1 fake: groups, templates, acting, instances, mapping."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from cloudproviders.config import CloudConfigError, ProviderConfig, StaticGroup, load_provider
from cloudproviders.gce import GceProvider
from cloudproviders.gce.group import MigGroup
from cloudproviders.interface import (
    CloudError,
    InstanceErrorClass,
    InstanceState,
    Priced,
    WithGroupOptions,
    price_of,
)
from kube.names import StorageNames
from tests.cloudproviders.fakes.gce import FakeGce
from tests.cloudproviders.gce_world import NVME_BYTES, PROJECT, ZONE, gce_node, gce_provider
from tests.factories import node

LABEL = StorageNames().max_capacity_label


def group(provider: GceProvider, name: str) -> MigGroup:
    found = [g for g in provider.node_groups() if g.name.endswith("/" + name)]
    assert len(found) == 1, [g.name for g in provider.node_groups()]
    assert isinstance(found[0], MigGroup)
    return found[0]


def list_calls(fake: FakeGce) -> int:
    return sum(c.endswith("/listManagedInstances") for c in fake.calls)


def test_build_provider_reads_the_cloud_config_file(fake: FakeGce, tmp_path: Path) -> None:
    config_file = tmp_path / "gce.conf"
    config_file.write_text(f"[global]\nproject-id = {PROJECT}\nzones = {ZONE}\napi-endpoint = {fake.url}\n")
    config = ProviderConfig(static_groups=(StaticGroup(1, 5, f"{ZONE}/general"),), cloud_config=str(config_file))
    built = load_provider("gce", config)
    assert isinstance(built, GceProvider)
    try:
        built.refresh()
        (only,) = built.node_groups()
        assert only.name == f"https://www.googleapis.com/compute/v1/projects/{PROJECT}/zones/{ZONE}/instanceGroups/general"
        assert (only.min_size(), only.max_size(), only.target_size(), len(only.instances())) == (1, 5, 2, 2)
    finally:
        built.close()


def test_a_mig_url_names_a_static_group(fake: FakeGce, sleeps: list[float]) -> None:
    url = f"https://www.googleapis.com/compute/v1/projects/{PROJECT}/zones/{ZONE}/instanceGroups/general"
    built = gce_provider(fake, sleeps, static=(StaticGroup(1, 5, url),))
    built.refresh()
    assert [g.name for g in built.node_groups()] == [url]
    built.close()


def test_nvme_template_from_machine_type_and_kube_env(provider: GceProvider) -> None:
    template = group(provider, "nvme").template_node()
    assert template is not None
    # Capacity leaves out the kernel's reserve (upstream gce/reserved.go): 64 GiB - 1,277,886,988.
    assert (template.capacity.cpu, template.capacity.memory) == (8000, 67_441_589_748)
    assert template.labels[LABEL] == str(NVME_BYTES)
    assert template.max_local_bytes == NVME_BYTES
    assert template.labels["pool"] == "nvme"
    assert template.labels["node.kubernetes.io/instance-type"] == "n2-highmem-8"
    assert template.labels["topology.kubernetes.io/zone"] == ZONE
    assert [(t.key, t.value, t.effect) for t in template.taints] == [("storage", "local", "NoSchedule")]


def test_general_template_has_no_local_storage(provider: GceProvider) -> None:
    template = group(provider, "general").template_node()
    assert template is not None
    assert (template.capacity.cpu, template.capacity.memory) == (4000, 16 * 2**30 - 382_386_307)
    assert LABEL not in template.labels
    assert template.max_local_bytes is None


@pytest.mark.parametrize(("ssds", "machine", "expected"), [
    pytest.param(4, "n2-highmem-8", 4 * 375 * 2**30, id="four-scratch-disks"),
    pytest.param(0, "c3-standard-8-lssd", 2 * 375 * 2**30, id="bundled-partitions"),
    pytest.param(1, "c3-standard-8-lssd", 3 * 375 * 2**30, id="both"),
])
def test_local_ssd_arithmetic_sets_the_label(fake: FakeGce, sleeps: list[float], ssds: int, machine: str,
                                             expected: int) -> None:
    fake.add_machine_type("c3-standard-8-lssd", 8, 32768, ZONE, PROJECT)
    fake.machine_types["c3-standard-8-lssd"]["bundledLocalSsds"] = {"partitionCount": 2, "defaultInterface": "NVME"}
    fake.add_template("ssd-template", machine, local_ssds=ssds)
    fake.add_mig("ssd", "ssd-template", 0, ZONE, PROJECT)
    built = gce_provider(fake, sleeps, static=(StaticGroup(0, 3, f"{ZONE}/ssd"),))
    built.refresh()
    template = group(built, "ssd").template_node()
    built.close()
    assert template is not None
    assert template.labels[LABEL] == str(expected)
    assert template.max_local_bytes == expected


def test_kube_reserved_gpus_and_options(fake: FakeGce, sleeps: list[float]) -> None:
    fake.add_template("gpu-template", "n2-standard-4", accelerators=2, kube_env=(
        "AUTOSCALER_ENV_VARS: kube_reserved=cpu=500m,memory=1Gi;"
        "autoscaling_options=scaledownutilizationthreshold=0.7,scaledownunneededtime=5m\n"))
    fake.add_mig("gpu", "gpu-template", 0, ZONE, PROJECT)
    built = gce_provider(fake, sleeps, static=(StaticGroup(0, 3, f"{ZONE}/gpu"),))
    built.refresh()
    gpu = group(built, "gpu")
    template = gpu.template_node()
    built.close()
    assert template is not None
    # kube-reserved and the 100 MiB hard eviction threshold come off the capacity.
    expected_memory = template.capacity.memory - 2**30 - 100 * 2**20
    assert (template.allocatable.cpu, template.allocatable.memory) == (3500, expected_memory)
    assert template.capacity.get_extended("nvidia.com/gpu") == 2
    assert isinstance(gpu, WithGroupOptions)
    options = gpu.group_options()
    assert (options.scale_down_utilization_threshold, options.scale_down_unneeded_seconds) == (0.7, 300.0)


@pytest.mark.parametrize("kube_env", [
    pytest.param("AUTOSCALER_ENV_VARS: node_taints=a=b\n", id="taint-without-effect"),
    pytest.param(f"AUTOSCALER_ENV_VARS: node_labels={LABEL}=lots\n", id="label-not-bytes"),
    pytest.param("AUTOSCALER_ENV_VARS: os=macos\n", id="unknown-os"),
    pytest.param(": [\n", id="not-yaml"),
])
def test_a_bad_template_gives_no_template_and_a_warning(fake: FakeGce, sleeps: list[float], kube_env: str,
                                                        caplog: pytest.LogCaptureFixture) -> None:
    fake.add_template("bad-template", "n2-standard-4", kube_env=kube_env)
    fake.add_mig("bad", "bad-template", 0, ZONE, PROJECT)
    built = gce_provider(fake, sleeps, static=(StaticGroup(0, 3, f"{ZONE}/bad"),))
    built.refresh()
    assert group(built, "bad").template_node() is None
    built.close()
    assert any("no template node" in r.getMessage() for r in caplog.records)


def test_increase_resizes_and_instances_follow(provider: GceProvider, fake: FakeGce) -> None:
    nvme = group(provider, "nvme")
    nvme.increase_size(3)
    assert nvme.target_size() == 3
    provider.refresh()
    assert [i.state for i in nvme.instances()] == [InstanceState.CREATING] * 3
    assert all(i.error is None for i in nvme.instances())
    fake.settle()
    provider.refresh()
    assert [i.state for i in nvme.instances()] == [InstanceState.RUNNING] * 3
    assert all(i.id.startswith(f"gce://{PROJECT}/{ZONE}/nvme-") for i in nvme.instances())
    assert fake.migs[(ZONE, "nvme")].target == 3


@pytest.mark.parametrize("delta", [pytest.param(0, id="zero"), pytest.param(11, id="above-max")])
def test_increase_refuses_bad_deltas_without_calling(provider: GceProvider, fake: FakeGce, delta: int) -> None:
    with pytest.raises(CloudError, match="nvme"):
        group(provider, "nvme").increase_size(delta)
    assert not any(call.endswith("/resize") for call in fake.calls)


def test_delete_nodes_deletes_named_instances(provider: GceProvider, fake: FakeGce) -> None:
    general = group(provider, "general")
    general.increase_size(1)
    provider.refresh()
    victim = general.instances()[0].id.rsplit("/", 1)[-1]
    general.delete_nodes([gce_node("n1", victim)])
    assert general.target_size() == 2
    assert victim not in [i.name for i in fake.migs[(ZONE, "general")].instances]


def test_delete_refuses_strangers_and_going_below_min(provider: GceProvider) -> None:
    general = group(provider, "general")
    with pytest.raises(CloudError, match="not an instance of this group"):
        general.delete_nodes([gce_node("stranger", "not-there")])
    names = [i.id.rsplit("/", 1)[-1] for i in general.instances()]
    with pytest.raises(CloudError, match="below min size 1"):
        general.delete_nodes([gce_node(f"n{k}", n) for k, n in enumerate(names)])


def test_stockout_shows_as_instance_errors(provider: GceProvider, fake: FakeGce) -> None:
    fake.migs[(ZONE, "nvme")].stockout = "ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS"
    nvme = group(provider, "nvme")
    nvme.increase_size(2)
    provider.refresh()
    errors = [i.error for i in nvme.instances()]
    assert [i.state for i in nvme.instances()] == [InstanceState.CREATING] * 2
    assert all(e is not None and e.error_class is InstanceErrorClass.OUT_OF_CAPACITY for e in errors)


@pytest.mark.parametrize(("codes", "expected"), [
    pytest.param(["ZONE_RESOURCE_POOL_EXHAUSTED"], InstanceErrorClass.OUT_OF_CAPACITY, id="exhausted"),
    pytest.param(["RESOURCE_POOL_EXHAUSTED"], InstanceErrorClass.OUT_OF_CAPACITY, id="pool"),
    pytest.param(["QUOTA_EXCEEDED"], InstanceErrorClass.QUOTA, id="quota"),
    pytest.param(["IP_SPACE_EXHAUSTED"], InstanceErrorClass.OTHER, id="ip-space"),
    pytest.param(["CONDITION_NOT_MET", "ZONE_RESOURCE_POOL_EXHAUSTED"], InstanceErrorClass.OUT_OF_CAPACITY,
                 id="exhaustion-wins"),
])
def test_last_attempt_errors_classified(provider: GceProvider, fake: FakeGce, codes: list[str],
                                        expected: InstanceErrorClass) -> None:
    general = group(provider, "general")
    general.increase_size(1)
    mig = fake.migs[(ZONE, "general")]
    mig.instances[-1].action, mig.instances[-1].status = "CREATING", ""
    mig.instances[-1].errors = [(code, f"{code} happened") for code in codes]
    provider.refresh()
    failed = [i for i in general.instances() if i.error is not None]
    assert len(failed) == 1
    assert failed[0].error is not None and failed[0].error.error_class is expected


def test_decrease_target_removes_only_instances_being_created(provider: GceProvider, fake: FakeGce) -> None:
    fake.migs[(ZONE, "general")].stockout = "QUOTA_EXCEEDED"
    general = group(provider, "general")
    general.increase_size(2)
    provider.refresh()
    running = {i.name for i in fake.migs[(ZONE, "general")].instances if i.action == "NONE"}
    general.decrease_target_size(-2)
    assert general.target_size() == 2
    assert {i.name for i in fake.migs[(ZONE, "general")].instances} == running
    with pytest.raises(CloudError, match="attempt to delete existing nodes"):
        general.decrease_target_size(-1)
    with pytest.raises(CloudError, match="must be negative"):
        general.decrease_target_size(1)


def test_node_group_for_maps_by_provider_id(provider: GceProvider) -> None:
    general = group(provider, "general")
    instance = general.instances()[0].id.rsplit("/", 1)[-1]
    assert provider.node_group_for(gce_node("n", instance)) is general
    assert provider.node_group_for(dataclasses.replace(node("aws"), provider_id="aws:///us-east-1a/i-1")) is None
    assert provider.node_group_for(node("no-provider-id")) is None


def test_unknown_instance_triggers_one_relist_per_interval(fake: FakeGce, sleeps: list[float]) -> None:
    clock = [0.0]
    built = gce_provider(fake, sleeps, clock=clock)
    built.refresh()
    general = group(built, "general")
    fake.migs[(ZONE, "general")].target = 3
    fake.migs[(ZONE, "general")].instances.append(type(fake.migs[(ZONE, "general")].instances[0])("general-new"))
    before = list_calls(fake)
    assert built.node_group_for(gce_node("new", "general-new")) is general
    assert list_calls(fake) == before + 2  # both groups re-listed once
    assert built.node_group_for(gce_node("ghost", "ghost")) is None
    assert list_calls(fake) == before + 2  # within the interval: no second re-list
    assert built.node_group_for(gce_node("far", "x", zone="us-east1-b")) is None
    clock[0] = 11.0
    assert built.node_group_for(gce_node("ghost", "ghost")) is None
    assert list_calls(fake) == before + 4
    built.close()


def test_refresh_relists_instances_on_the_timer_only_when_idle(fake: FakeGce, sleeps: list[float]) -> None:
    clock = [0.0]
    built = gce_provider(fake, sleeps, clock=clock)
    built.refresh()
    before = list_calls(fake)
    built.refresh()
    assert list_calls(fake) == before  # steady state: MIG gets only
    clock[0] = 61.0
    built.refresh()
    assert list_calls(fake) == before + 2
    built.close()


def test_auto_discovery_by_name_prefix(fake: FakeGce, sleeps: list[float]) -> None:
    fake.add_mig("pool-a", "general-template", 1, ZONE, PROJECT)
    fake.add_mig("pool-b", "nvme-template", 0, ZONE, PROJECT)
    fake.page_size = 2  # instanceGroupManagers.list over pages
    built = gce_provider(fake, sleeps, static=(StaticGroup(1, 2, f"{ZONE}/pool-a"),),
                         auto=("mig:namePrefix=pool-,min=0,max=7",))
    built.refresh()
    bounds = {g.name.rsplit("/", 1)[-1]: (g.min_size(), g.max_size()) for g in built.node_groups()}
    assert bounds == {"pool-a": (1, 2), "pool-b": (0, 7)}  # the static flag wins
    del fake.migs[(ZONE, "pool-b")]
    built.refresh()
    assert [g.name.rsplit("/", 1)[-1] for g in built.node_groups()] == ["pool-a"]
    built.close()


def test_many_instances_over_pages(provider: GceProvider, fake: FakeGce) -> None:
    fake.page_size = 2
    nvme = group(provider, "nvme")
    nvme.increase_size(5)
    provider.refresh()
    assert len(nvme.instances()) == 5


def test_prices_include_local_ssds(provider: GceProvider, tmp_path: Path, fake: FakeGce, sleeps: list[float]) -> None:
    nvme, general = group(provider, "nvme"), group(provider, "general")
    assert isinstance(nvme, Priced)
    assert price_of(general) == pytest.approx(0.1942)
    assert price_of(nvme) == pytest.approx(0.5241 + 4 * 0.0411)
    prices = tmp_path / "prices.yaml"
    prices.write_text("n2-standard-4: 0.5\n")
    built = gce_provider(fake, sleeps, price_file=str(prices))
    built.refresh()
    assert price_of(group(built, "general")) == 0.5
    built.close()


@pytest.mark.parametrize(("text", "message"), [
    pytest.param("[1, 2]", "expected a map", id="not-a-map"),
    pytest.param("n2-standard-4: cheap\n", "n2-standard-4", id="not-a-number"),
    pytest.param("n2-standard-4: -1\n", "non-negative", id="negative"),
])
def test_bad_price_file_is_a_config_error(fake: FakeGce, sleeps: list[float], tmp_path: Path, text: str,
                                          message: str) -> None:
    prices = tmp_path / "prices.yaml"
    prices.write_text(text)
    with pytest.raises(CloudConfigError, match=message):
        gce_provider(fake, sleeps, price_file=str(prices))


def test_decrease_reads_fresh_and_spares_an_instance_that_came_up(provider: GceProvider, fake: FakeGce) -> None:
    nvme = group(provider, "nvme")
    nvme.increase_size(1)
    provider.refresh()
    assert [i.state for i in nvme.instances()] == [InstanceState.CREATING]
    fake.settle()  # up (and maybe registered) since the cache was filled
    with pytest.raises(CloudError, match="attempt to delete existing nodes"):
        nvme.decrease_target_size(-1)
    assert len(fake.migs[(ZONE, "nvme")].instances) == 1

"""Templates from zero over moto: instance types, launch kinds, node-template tags, local NVMe, prices."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from moto import mock_aws

from cloudproviders.aws.template import InstanceTypeInfo, static_instance_type
from cloudproviders.config import StaticGroup
from cloudproviders.interface import GroupOptions, NodeGroup, WithGroupOptions
from kube.model import Taint
from kube.names import StorageNames
from tests.cloudproviders.aws_instance_types import moto_types
from tests.cloudproviders.aws_world import AwsWorld, aws_env

GIB = 2**30
MIB = 2**20
NAMES = StorageNames()
LABEL = "k8s.io/cluster-autoscaler/node-template/label/"
TAINT = "k8s.io/cluster-autoscaler/node-template/taint/"
RESOURCE = "k8s.io/cluster-autoscaler/node-template/resources/"
OPTION = "k8s.io/cluster-autoscaler/node-template/autoscaling-options/"


@pytest.fixture
def world() -> Iterator[AwsWorld]:
    with aws_env(), mock_aws():
        yield AwsWorld()


def the_group(world: AwsWorld, *, price_file: str | None = None, **kw: Any) -> NodeGroup:
    world.group("grp", min_size=0, max_size=5, desired=0, **kw)
    groups = world.provider(static=[StaticGroup(0, 5, "grp")], price_file=price_file).node_groups()
    assert len(groups) == 1
    return groups[0]


class Shape(NamedTuple):
    cpu: int
    memory: int
    local: int | None
    arch: str = "amd64"
    extended: tuple[tuple[str, int], ...] = ()


@pytest.mark.parametrize(("launch", "shape"), [
    pytest.param({"instance_type": "i3.2xlarge"}, Shape(8000, 62464 * MIB, 1_900_000_000_000), id="i3"),
    pytest.param({"instance_type": "i4i.2xlarge"}, Shape(8000, 64 * GIB, 1_875_000_000_000), id="i4i"),
    pytest.param({"instance_type": "i3en.2xlarge"}, Shape(8000, 64 * GIB, 5_000_000_000_000), id="i3en-two-disks"),
    pytest.param({"instance_type": "m5.xlarge", "launch_configuration": "grp-lc"}, Shape(4000, 16 * GIB, None),
                 id="m5-launch-configuration"),
    pytest.param({"mixed_overrides": ["c5d.2xlarge", "m5d.2xlarge"]}, Shape(8000, 16 * GIB, 200_000_000_000),
                 id="mixed-policy-first-override"),
    pytest.param({"instance_type": "g4dn.xlarge"}, Shape(4000, 16 * GIB, 125_000_000_000,
                                                         extended=(("nvidia.com/gpu", 1),)), id="gpu"),
    pytest.param({"instance_type": "m6g.xlarge"}, Shape(4000, 16 * GIB, None, "arm64"), id="graviton"),
    # CA interpretEc2SupportedArchitecure: i386 (listed first for t2) is amd64, not 386.
    pytest.param({"instance_type": "t2.micro"}, Shape(1000, 1 * GIB, None, "amd64"), id="i386-first-is-amd64"),
    # CA getGpuCount: every GPU of the type counts as nvidia.com/gpu, whoever makes it.
    pytest.param({"instance_type": "g4ad.xlarge"}, Shape(4000, 16 * GIB, 150_000_000_000,
                                                         extended=(("nvidia.com/gpu", 1),)), id="amd-gpu-as-ca-counts"),
])
def test_template_from_the_instance_type(world: AwsWorld, launch: Mapping[str, Any], shape: Shape) -> None:
    template = the_group(world, zones=["us-east-1c", "us-east-1b"], **launch).template_node()
    assert template is not None
    assert (template.capacity.cpu, template.capacity.memory, template.capacity.pods) == (shape.cpu, shape.memory, 110)
    assert template.allocatable == template.capacity
    assert template.capacity.extended == shape.extended
    assert template.max_local_bytes == shape.local
    assert template.labels.get(NAMES.max_capacity_label) == (str(shape.local) if shape.local else None)
    instance_type = launch.get("instance_type") or launch["mixed_overrides"][0]
    assert {k: v for k, v in template.labels.items() if k != NAMES.max_capacity_label} == {
        "kubernetes.io/os": "linux", "kubernetes.io/arch": shape.arch,
        "node.kubernetes.io/instance-type": instance_type, "topology.kubernetes.io/region": "us-east-1",
        "topology.kubernetes.io/zone": "us-east-1c", "topology.ebs.csi.aws.com/zone": "us-east-1c",
        "kubernetes.io/hostname": "grp-template"}
    assert template.taints == () and template.ready


@pytest.mark.parametrize(("tag", "local"), [
    pytest.param("1900000000000", 1_900_000_000_000, id="bytes"),
    pytest.param("1700Gi", 1700 * GIB, id="quantity"),
    pytest.param("lots", 1_875_000_000_000, id="bad-falls-back-to-instance-store"),
    pytest.param("-1", 1_875_000_000_000, id="negative-falls-back-to-instance-store"),
    pytest.param("0", 0, id="zero-declares-no-local-storage"),
])
def test_a_max_capacity_tag_overrides_the_instance_store(world: AwsWorld, tag: str, local: int | None) -> None:
    template = the_group(world, instance_type="i4i.2xlarge",
                         tags={LABEL + NAMES.max_capacity_label: tag}).template_node()
    assert template is not None
    assert template.max_local_bytes == local
    assert template.labels.get(NAMES.max_capacity_label) == (str(local) if local is not None else None)


def test_a_max_capacity_tag_gives_local_storage_to_a_type_without_instance_store(world: AwsWorld) -> None:
    """EBS-backed local volumes (e.g. a big second volume the storage driver uses) are declared by tag."""
    template = the_group(world, instance_type="m5.xlarge",
                         tags={LABEL + NAMES.max_capacity_label: "500Gi"}).template_node()
    assert template is not None and template.max_local_bytes == 500 * GIB


def test_node_template_tags(world: AwsWorld) -> None:
    tags = {
        LABEL + "team": "storage", LABEL + "kubernetes.io/arch": "arm64",
        TAINT + "dedicated": "kafka:NoSchedule", TAINT + "bad": "no-effect", TAINT + "gpu": ":NoExecute",
        RESOURCE + "cpu": "7500m", RESOURCE + "memory": "60Gi", RESOURCE + "ephemeral-storage": "100Gi",
        RESOURCE + "hugepages-2Mi": "1Gi", RESOURCE + "pods": "58", RESOURCE + "example.com/dongle": "x",
    }
    template = the_group(world, instance_type="i3.2xlarge", tags=tags).template_node()
    assert template is not None
    assert template.labels["team"] == "storage" and template.labels["kubernetes.io/arch"] == "arm64"
    assert template.taints == (Taint("dedicated", "kafka", "NoSchedule"), Taint("gpu", "", "NoExecute"))
    resources = template.allocatable
    assert (resources.cpu, resources.memory, resources.ephemeral_storage, resources.pods) == (
        7500, 60 * GIB, 100 * GIB, 58)
    assert resources.extended == (("hugepages-2Mi", GIB),)


def test_root_volume_is_ephemeral_storage(world: AwsWorld) -> None:
    world.launch_template("grp", "m5.xlarge", BlockDeviceMappings=[{"DeviceName": "/dev/xvda",
                                                                  "Ebs": {"VolumeSize": 80}}])
    world.autoscaling.create_auto_scaling_group(
        AutoScalingGroupName="grp", MinSize=0, MaxSize=3, DesiredCapacity=0, AvailabilityZones=["us-east-1a"],
        LaunchTemplate={"LaunchTemplateName": "grp", "Version": "$Default"})
    template = world.provider(static=[StaticGroup(0, 3, "grp")]).node_groups()[0].template_node()
    assert template is not None and template.capacity.ephemeral_storage == 80 * GIB


def test_template_is_cached_until_the_next_refresh(world: AwsWorld) -> None:
    world.group("grp", min_size=0, max_size=5, desired=0, instance_type="i3.2xlarge")
    provider = world.provider(static=[StaticGroup(0, 5, "grp")])
    group = provider.node_groups()[0]
    assert group.template_node() is group.template_node()
    assert world.faults.calls.count("DescribeLaunchTemplateVersions") == 1
    assert world.faults.calls.count("DescribeInstanceTypes") == 1
    provider.force_refresh()
    assert group.template_node() is not None
    # The launch template is read again (it may have a new $Latest); instance types never change.
    assert world.faults.calls.count("DescribeLaunchTemplateVersions") == 2
    assert world.faults.calls.count("DescribeInstanceTypes") == 1


@pytest.mark.parametrize(("fault", "code"), [
    pytest.param("DescribeLaunchTemplateVersions", "InvalidLaunchTemplateName.NotFoundException", id="template-gone"),
])
def test_no_template_when_the_cloud_cannot_tell(world: AwsWorld, fault: str, code: str,
                                                caplog: pytest.LogCaptureFixture) -> None:
    world.faults.fail(fault, 400, code, "nope")
    assert the_group(world, instance_type="i3.2xlarge").template_node() is None
    assert "no cloud template" in caplog.text


def test_group_options_from_tags(world: AwsWorld) -> None:
    group = the_group(world, instance_type="m5.xlarge", tags={
        OPTION + "scaledownutilizationthreshold": "0.3", OPTION + "scaledowngpuutilizationthreshold": "0.6",
        OPTION + "scaledownunneededtime": "20m", OPTION + "scaledownunreadytime": "-1s",
        OPTION + "maxnodeprovisiontime": "bad", OPTION + "somethingelse": "1",
        OPTION + "ignoredaemonsetsutilization": "true"})
    assert isinstance(group, WithGroupOptions)
    assert group.group_options() == GroupOptions(
        scale_down_utilization_threshold=0.3, scale_down_gpu_utilization_threshold=0.6,
        scale_down_unneeded_seconds=1200.0, scale_down_unready_seconds=-1.0, ignore_daemonsets_utilization=True)


@pytest.mark.parametrize(("launch", "price_file", "price"), [
    pytest.param({"instance_type": "i3.2xlarge"}, None, 0.624, id="shipped-table"),
    pytest.param({"mixed_overrides": ["r5d.xlarge", "m5d.xlarge"]}, None, 0.288, id="mixed-first-override"),
    pytest.param({"instance_type": "i3.2xlarge"}, "i3.2xlarge: 0.5\n", 0.5, id="price-file"),
    pytest.param({"instance_type": "t2.nano"}, None, None, id="unknown-type"),
])
def test_prices(world: AwsWorld, tmp_path: Path, launch: Mapping[str, Any], price_file: str | None,
                price: float | None) -> None:
    path = None
    if price_file is not None:
        (tmp_path / "prices.yaml").write_text(price_file)
        path = str(tmp_path / "prices.yaml")
    group = the_group(world, price_file=path, **launch)
    assert group.price_per_hour() == price  # type: ignore[attr-defined]


def described_group(zones: list[str]) -> str:
    """A DescribeAutoScalingGroups answer for ``grp`` in ``zones`` (AWS's order), launching through template ``grp``."""
    members = "".join(f"<member>{z}</member>" for z in zones)
    return ("<DescribeAutoScalingGroupsResponse xmlns=\"http://autoscaling.amazonaws.com/doc/2011-01-01/\">"
            "<DescribeAutoScalingGroupsResult><AutoScalingGroups><member>"
            "<AutoScalingGroupName>grp</AutoScalingGroupName><MinSize>0</MinSize><MaxSize>5</MaxSize>"
            f"<DesiredCapacity>0</DesiredCapacity><AvailabilityZones>{members}</AvailabilityZones>"
            "<LaunchTemplate><LaunchTemplateName>grp</LaunchTemplateName><Version>$Default</Version></LaunchTemplate>"
            "<Instances></Instances><Tags></Tags></member></AutoScalingGroups></DescribeAutoScalingGroupsResult>"
            "<ResponseMetadata><RequestId>r</RequestId></ResponseMetadata></DescribeAutoScalingGroupsResponse>")


@pytest.mark.parametrize(("zones", "region", "zone"), [
    pytest.param(["us-east-1a"], "us-east-1", "us-east-1a", id="single-zone"),
    pytest.param(["us-east-1c", "us-west-1b"], "us-east-1", "us-east-1c", id="first-zone-as-aws-lists-them"),
    pytest.param(["us-west-2-lax-1a"], "us-west-2-lax-1", "us-west-2-lax-1a", id="local-zone"),
    pytest.param([], None, None, id="no-zone-no-template"),
])
def test_zone_and_region_labels(world: AwsWorld, zones: list[str], region: str | None, zone: str | None) -> None:
    """CA ``getAsgTemplate``: the first zone, the region is that zone less its letter, no zone no template."""
    world.launch_template("grp", "m5.large")
    world.faults.respond("DescribeAutoScalingGroups", described_group(zones))
    template = world.provider(static=[StaticGroup(0, 5, "grp")]).node_groups()[0].template_node()
    if zone is None:
        assert template is None
        return
    assert template is not None
    assert (template.labels["topology.kubernetes.io/region"], template.labels["topology.kubernetes.io/zone"],
            template.labels["topology.ebs.csi.aws.com/zone"]) == (region, zone, zone)


@pytest.mark.parametrize(("instance_type", "cpu"), [
    pytest.param("i3.2xlarge", 8000, id="known-type-from-the-static-list"),
    pytest.param("x9.unheard-of", None, id="unknown-type-no-template"),
])
def test_without_describe_instance_types_the_static_list_answers(world: AwsWorld, instance_type: str,
                                                                 cpu: int | None) -> None:
    """CA falls back on its static instance type list when DescribeInstanceTypes fails (``BuildAWS``)."""
    world.faults.fail("DescribeInstanceTypes", 400, "UnauthorizedOperation", "not allowed")
    template = the_group(world, instance_type=instance_type).template_node()
    assert (template.capacity.cpu if template is not None else None) == cpu
    if template is not None:
        assert template.max_local_bytes == 1_900_000_000_000


def test_the_static_list_is_describe_instance_types_as_moto_records_it() -> None:
    """``instance_types.json`` is regenerated with ``python -m tests.cloudproviders.aws_instance_types``.

    Like upstream's static list it is a snapshot: a newer moto may know types it lacks (they
    come from DescribeInstanceTypes live); every type it has must read as moto records it.
    """
    recorded = moto_types()
    known = {name: raw for name, raw in recorded.items() if static_instance_type(name) is not None}
    assert len(known) > 1000
    for name, raw in known.items():
        assert static_instance_type(name) == InstanceTypeInfo.from_api(raw), name

"""The launch source of AWS templates, over moto: which instance type, attribute-based selection included.

Cases from CA's ``aws_wrapper_test.go`` (``TestGetInstanceTypesForAsgs``,
``TestGetInstanceTypesFromInstanceRequirements...``) and ``aws_manager_test.go``
(``TestBuildNodeFromTemplate``, instance requirements). moto does not implement
GetInstanceTypesFromInstanceRequirements, so AWS's answer is played at the wire.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest
from moto import mock_aws

from cloudproviders.config import StaticGroup
from kube.model import Node
from tests.cloudproviders.aws_world import AMI, EC2_XMLNS, AwsWorld, aws_env

GIB = 2**30
MIB = 2**20
REQUIREMENTS = {"VCpuCount": {"Min": 4, "Max": 8}, "MemoryMiB": {"Min": 4096, "Max": 8192}}
GPU_REQUIREMENTS = {**REQUIREMENTS, "AcceleratorTypes": ["gpu"], "AcceleratorManufacturers": ["nvidia"],
                    "AcceleratorCount": {"Min": 4, "Max": 8}}


@pytest.fixture
def world() -> Iterator[AwsWorld]:
    with aws_env(), mock_aws():
        yield AwsWorld()


def aws_matches(world: AwsWorld, types: Sequence[str], architecture: str = "x86_64") -> None:
    """What AWS answers for the image and the requirements (the next call of each)."""
    world.faults.respond("DescribeImages", (
        f"<DescribeImagesResponse xmlns=\"{EC2_XMLNS}\"><requestId>r</requestId><imagesSet><item>"
        f"<imageId>{AMI}</imageId><architecture>{architecture}</architecture>"
        "<virtualizationType>hvm</virtualizationType></item></imagesSet></DescribeImagesResponse>"))
    items = "".join(f"<item><instanceType>{t}</instanceType></item>" for t in types)
    world.faults.respond("GetInstanceTypesFromInstanceRequirements", (
        f"<GetInstanceTypesFromInstanceRequirementsResponse xmlns=\"{EC2_XMLNS}\"><requestId>r</requestId>"
        f"<instanceTypeSet>{items}</instanceTypeSet></GetInstanceTypesFromInstanceRequirementsResponse>"))


def asg(world: AwsWorld, *, launch_template: Mapping[str, Any] | None = None,
        mixed: Mapping[str, Any] | None = None, template_data: Mapping[str, Any] | None = None) -> Node | None:
    world.ec2.create_launch_template(LaunchTemplateName="grp-lt",
                                     LaunchTemplateData={"ImageId": AMI, **(template_data or {})})
    request: dict[str, Any] = {"AutoScalingGroupName": "grp", "MinSize": 0, "MaxSize": 5, "DesiredCapacity": 0,
                               "AvailabilityZones": ["us-east-1a"]}
    if launch_template is not None:
        request["LaunchTemplate"] = {"LaunchTemplateName": "grp-lt", **launch_template}
    if mixed is not None:
        request["MixedInstancesPolicy"] = {"LaunchTemplate": {
            "LaunchTemplateSpecification": {"LaunchTemplateName": "grp-lt"}, **mixed}}
    world.autoscaling.create_auto_scaling_group(**request)
    return world.provider(static=[StaticGroup(0, 5, "grp")]).node_groups()[0].template_node()


@pytest.mark.parametrize(("kind", "template_data", "mixed", "shape"), [
    pytest.param("launch-template", {"InstanceRequirements": REQUIREMENTS}, None,
                 ("c5.xlarge", 4000, 8 * GIB, ()), id="requirements-in-launch-template"),
    pytest.param("mixed", {"InstanceType": "m5.large"}, {"Overrides": [{"InstanceRequirements": REQUIREMENTS}]},
                 ("c5.xlarge", 4000, 4096 * MIB, ()), id="requirements-override-sets-the-minimums"),
    pytest.param("mixed", {}, {"Overrides": [{"InstanceRequirements": GPU_REQUIREMENTS}]},
                 ("c5.xlarge", 4000, 4096 * MIB, (("nvidia.com/gpu", 4),)), id="nvidia-gpu-minimum"),
    pytest.param("mixed", {"InstanceRequirements": REQUIREMENTS}, {},
                 ("c5.xlarge", 4000, 4096 * MIB, ()), id="mixed-policy-template-requirements"),
])
def test_attribute_based_selection_yields_a_template(
        world: AwsWorld, kind: str, template_data: Mapping[str, Any], mixed: Mapping[str, Any] | None,
        shape: tuple[str, int, int, tuple[tuple[str, int], ...]]) -> None:
    """The first matching type's template; a mixed policy's requirements then set cpu, memory and NVIDIA GPUs."""
    aws_matches(world, ["c5.xlarge", "m5.xlarge"])
    got = asg(world, launch_template={} if kind == "launch-template" else None, mixed=mixed,
              template_data=template_data)
    assert got is not None
    instance_type, cpu, memory, extended = shape
    assert got.labels["node.kubernetes.io/instance-type"] == instance_type
    assert (got.capacity.cpu, got.capacity.memory, got.capacity.extended) == (cpu, memory, extended)
    request = dict(world.faults.requests)["GetInstanceTypesFromInstanceRequirements"]
    assert request["ArchitectureType.1"] == "x86_64" and request["VirtualizationType.1"] == "hvm"
    assert request["InstanceRequirements.VCpuCount.Min"] == 4


@pytest.mark.parametrize(("types", "image", "why"), [
    pytest.param([], True, "no instance types found", id="nothing-matches"),
    pytest.param(["c5.xlarge"], False, "unable to find instance type", id="no-image-id"),
])
def test_no_template_when_attribute_based_selection_finds_nothing(
        world: AwsWorld, types: list[str], image: bool, why: str, caplog: pytest.LogCaptureFixture) -> None:
    """CA ``getInstanceTypeByLaunchTemplate`` needs the image; no matching type is no template."""
    aws_matches(world, types)
    data: dict[str, Any] = {"InstanceRequirements": REQUIREMENTS}
    world.ec2.create_launch_template(LaunchTemplateName="grp-lt",
                                     LaunchTemplateData={**data, **({"ImageId": AMI} if image else {})})
    world.autoscaling.create_auto_scaling_group(
        AutoScalingGroupName="grp", MinSize=0, MaxSize=5, DesiredCapacity=0, AvailabilityZones=["us-east-1a"],
        LaunchTemplate={"LaunchTemplateName": "grp-lt"})
    assert world.provider(static=[StaticGroup(0, 5, "grp")]).node_groups()[0].template_node() is None
    assert any(why in str(getattr(r, "error", "")) for r in caplog.records)

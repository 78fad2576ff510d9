"""The provider reaches whatever ``AWS_ENDPOINT_URL`` names: moto in server mode on loopback.

Nothing in the provider sets an endpoint, so boto3's standard variable applies, as for
every AWS tool (and, in production, for VPC endpoints or a local proxy).
"""

from __future__ import annotations

from collections.abc import Iterator

import boto3  # type: ignore[import-untyped]
import pytest
from moto.server import ThreadedMotoServer

from cloudproviders.aws import build_provider
from cloudproviders.aws.errors import RetryPolicy
from cloudproviders.aws.provider import AwsProvider
from cloudproviders.config import ProviderConfig, StaticGroup
from cloudproviders.interface import InstanceState
from tests.cloudproviders.aws_world import AMI, REGION, aws_env


@pytest.fixture
def endpoint() -> Iterator[str]:
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        yield f"http://{host}:{port}"
    finally:
        server.stop()


def test_the_endpoint_comes_from_the_environment(endpoint: str) -> None:
    with aws_env(AWS_ENDPOINT_URL=endpoint):
        setup = boto3.Session(region_name=REGION)
        setup.client("ec2").create_launch_template(
            LaunchTemplateName="nvme", LaunchTemplateData={"InstanceType": "i3.2xlarge", "ImageId": AMI})
        setup.client("autoscaling").create_auto_scaling_group(
            AutoScalingGroupName="nvme", MinSize=0, MaxSize=4, DesiredCapacity=1, AvailabilityZones=[f"{REGION}a"],
            LaunchTemplate={"LaunchTemplateName": "nvme", "Version": "$Latest"})
        provider = build_provider(ProviderConfig(static_groups=(StaticGroup(0, 4, "nvme"),)),
                                  retry=RetryPolicy(attempts=1))
        provider.refresh()
        (group,) = provider.node_groups()
        template = group.template_node()
        assert template is not None and template.max_local_bytes == 1_900_000_000_000
        group.increase_size(1)
        assert isinstance(provider, AwsProvider)
        provider.force_refresh()
        assert group.target_size() == 2
        assert [i.state for i in group.instances()] == [InstanceState.RUNNING] * 2
    # The group really lives in the server, not in an in-process mock.
    with aws_env(AWS_ENDPOINT_URL=endpoint):
        listed = boto3.client("autoscaling", region_name=REGION).describe_auto_scaling_groups()
    assert [(g["AutoScalingGroupName"], g["DesiredCapacity"]) for g in listed["AutoScalingGroups"]] == [("nvme", 2)]

"""The EKS source of AWS templates, over moto: ``eks:DescribeNodegroup`` for managed node groups.

Cases from CA's ``aws_manager_test.go`` (``TestBuildNodeFromTemplateWithManagedNodegroup...``),
``aws_wrapper_test.go`` (``TestGetManagedNodegroup...``) and ``managed_nodegroup_cache_test.go``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from moto import mock_aws

from cloudproviders.aws.provider import AwsProvider
from cloudproviders.config import ProviderConfig, StaticGroup
from cloudproviders.interface import NodeGroup
from kube.model import Node, Taint
from tests.cloudproviders.aws_world import AwsWorld, aws_env

GIB = 2**30
MNG_TAGS = {"eks:nodegroup-name": "ng-1", "eks:cluster-name": "cluster-1"}
LABEL = "k8s.io/cluster-autoscaler/node-template/label/"


@pytest.fixture
def world() -> Iterator[AwsWorld]:
    with aws_env(), mock_aws():
        yield AwsWorld()


def the_group(world: AwsWorld, tags: Mapping[str, str]) -> NodeGroup:
    world.group("eks-ng-1", min_size=0, max_size=5, desired=0, instance_type="c5.xlarge", tags=tags)
    return world.provider(static=[StaticGroup(0, 5, "eks-ng-1")]).node_groups()[0]


def template(world: AwsWorld, tags: Mapping[str, str]) -> Node:
    built = the_group(world, tags).template_node()
    assert built is not None
    return built


NODEGROUP: dict[str, Any] = {
    "labels": {"labelKey 1": "testValue 1", "labelKey 2": "testValue 2"},
    "taints": [{"key": "key 1", "value": "value 1", "effect": "NO_SCHEDULE"},
               {"key": "key 2", "value": "value 2", "effect": "PREFER_NO_SCHEDULE"}],
    "tags": {"k8s.io/cluster-autoscaler/node-template/resources/ephemeral-storage": "80Gi"},
    "capacityType": "SPOT", "amiType": "AL2_ARM_64", "diskSize": 100,
}


def test_a_managed_node_group_adds_its_labels_taints_and_resource_tags(world: AwsWorld) -> None:
    world.nodegroup("cluster-1", "ng-1", **NODEGROUP)
    got = template(world, {**MNG_TAGS, LABEL + "labelKey 2": "testValue 3",
                           "k8s.io/cluster-autoscaler/node-template/taint/dedicated": "x:NoSchedule"})
    assert got.labels["nodegroup-name"] == "ng-1" and got.labels["cluster-name"] == "cluster-1"
    # The node group's labels win over the ASG's tags (CA joinNodeLabelsChoosingUserValuesOverAPIValues).
    assert got.labels["labelKey 1"] == "testValue 1" and got.labels["labelKey 2"] == "testValue 2"
    assert {k: got.labels[k] for k in ("eks.amazonaws.com/nodegroup", "eks.amazonaws.com/capacityType",
                                       "amiType", "diskSize")} == {
        "eks.amazonaws.com/nodegroup": "ng-1", "eks.amazonaws.com/capacityType": "SPOT", "amiType": "AL2_ARM_64",
        "diskSize": "100"}
    assert got.labels["k8sVersion"]  # moto's default Kubernetes version
    assert got.taints == (Taint("dedicated", "x", "NoSchedule"), Taint("key 1", "value 1", "NoSchedule"),
                          Taint("key 2", "value 2", "PreferNoSchedule"))
    assert got.capacity.ephemeral_storage == got.allocatable.ephemeral_storage == 80 * GIB


@pytest.mark.parametrize(("fault", "calls"), [
    pytest.param(("AccessDeniedException", 403), 1, id="no-permission"),
    pytest.param(("ResourceNotFoundException", 404), 1, id="no-such-nodegroup"),
    pytest.param(("ServerException", 500), 3, id="eks-down-after-retries"),
])
def test_without_describe_nodegroup_the_template_comes_from_the_asg(
        world: AwsWorld, fault: tuple[str, int], calls: int, caplog: pytest.LogCaptureFixture) -> None:
    """CA logs the failure and builds the template from the ASG; the failure is kept six minutes."""
    world.nodegroup("cluster-1", "ng-1", **NODEGROUP)
    for _ in range(calls):
        world.faults.fail("DescribeNodegroup", fault[1], fault[0], "no")
    group = the_group(world, MNG_TAGS)
    got = group.template_node()
    assert got is not None
    assert got.labels["nodegroup-name"] == "ng-1" and "eks.amazonaws.com/nodegroup" not in got.labels
    assert got.taints == () and got.capacity.cpu == 4000
    assert "DescribeNodegroup failed" in caplog.text
    assert world.faults.calls.count("DescribeNodegroup") == calls


@pytest.mark.parametrize("tags", [
    pytest.param({"eks:nodegroup-name": "ng-1"}, id="no-cluster-name"),
    pytest.param({"eks:cluster-name": "cluster-1"}, id="no-nodegroup-name"),
])
def test_no_call_unless_the_tags_name_a_node_group_and_its_cluster(world: AwsWorld, tags: Mapping[str, str]) -> None:
    got = template(world, tags)
    assert "DescribeNodegroup" not in world.faults.calls
    assert {k: got.labels[k] for k in ("nodegroup-name", "cluster-name") if k in got.labels} == {
        k.removeprefix("eks:"): v for k, v in tags.items()}


def test_an_unknown_taint_effect_drops_the_whole_answer(world: AwsWorld) -> None:
    """CA ``taintEksTranslator`` errors, and ``getManagedNodegroupInfo`` with it (labels too)."""
    world.nodegroup("cluster-1", "ng-1", labels={"a": "b"})
    body = ('{"nodegroup": {"nodegroupName": "ng-1", "clusterName": "cluster-1", "labels": {"a": "b"}, '
            '"taints": [{"key": "k", "value": "v", "effect": "SOMETIMES"}]}}')
    world.faults.respond("DescribeNodegroup", body)
    got = template(world, MNG_TAGS)
    assert "a" not in got.labels and got.taints == ()
    assert got.labels["nodegroup-name"] == "ng-1" and world.faults.calls.count("DescribeNodegroup") == 1


def test_answers_are_kept_for_six_minutes(world: AwsWorld) -> None:
    world.nodegroup("cluster-1", "ng-1", **NODEGROUP)
    world.group("eks-ng-1", min_size=0, max_size=5, desired=0, instance_type="c5.xlarge", tags=MNG_TAGS)
    clock = [1000.0]
    config = ProviderConfig(static_groups=(StaticGroup(0, 5, "eks-ng-1"),))
    provider = AwsProvider(config, world.api(), [], {}, clock=lambda: clock[0])
    provider.refresh()
    assert provider.node_groups()[0].template_node() is not None
    for minutes in (1, 5.9, 6.1):
        clock[0] = 1000.0 + minutes * 60
        provider.force_refresh()
        assert provider.node_groups()[0].template_node() is not None
    assert world.faults.calls.count("DescribeNodegroup") == 2

"""The tag source of AWS templates, over moto: labels, taints, resources and options as CA reads the ASG's tags.

Cases from CA's ``cloudprovider/aws/aws_manager_test.go`` (``TestExtractLabelsFromAsg``,
``TestExtractTaintsFromAsg``, ``TestBuildNodeFromTemplate``, ``TestGetAsgOptions``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import pytest
from moto import mock_aws

from cloudproviders.config import StaticGroup
from cloudproviders.interface import GroupOptions, NodeGroup, WithGroupOptions
from kube.model import Node, Taint
from tests.cloudproviders.aws_world import AwsWorld, aws_env

LABEL = "k8s.io/cluster-autoscaler/node-template/label/"
TAINT = "k8s.io/cluster-autoscaler/node-template/taint/"
RESOURCE = "k8s.io/cluster-autoscaler/node-template/resources/"
OPTION = "k8s.io/cluster-autoscaler/node-template/autoscaling-options/"
GENERIC = {"kubernetes.io/arch", "kubernetes.io/os", "node.kubernetes.io/instance-type", "kubernetes.io/hostname",
           "topology.kubernetes.io/region", "topology.kubernetes.io/zone", "topology.ebs.csi.aws.com/zone"}


@pytest.fixture
def world() -> Iterator[AwsWorld]:
    with aws_env(), mock_aws():
        yield AwsWorld()


def group_tagged(world: AwsWorld, tags: Mapping[str, str]) -> NodeGroup:
    world.group("grp", min_size=0, max_size=5, desired=0, instance_type="c5.xlarge", tags=tags)
    return world.provider(static=[StaticGroup(0, 5, "grp")]).node_groups()[0]


def template(world: AwsWorld, tags: Mapping[str, str]) -> Node:
    built = group_tagged(world, tags).template_node()
    assert built is not None
    return built


@pytest.mark.parametrize(("tags", "labels"), [
    pytest.param({LABEL + "foo": "bar", "eks:nodegroup-name": "bar2", "bar": "baz"},
                 {"foo": "bar", "nodegroup-name": "bar2"}, id="eks-tags-are-labels"),
    pytest.param({"team/eks:cluster-name": "c1"}, {"cluster-name": "c1"}, id="eks-anywhere-in-the-key"),
])
def test_labels_from_tags(world: AwsWorld, tags: Mapping[str, str], labels: Mapping[str, str]) -> None:
    """``extractLabelsFromAsg``: ``.../label/<key>``, else anything after ``eks:``."""
    got = template(world, tags).labels
    assert {k: v for k, v in got.items() if k not in GENERIC} == labels


@pytest.mark.parametrize(("value", "taint"), [
    pytest.param("a:b:NoSchedule", Taint("t", "a", "b:NoSchedule"), id="split-at-the-first-colon"),
    pytest.param("x:NoExecute-later", Taint("t", "x", "NoExecute-later"), id="effect-anywhere-in-the-value"),
])
def test_taints_from_tags(world: AwsWorld, value: str, taint: Taint | None) -> None:
    """``extractTaintsFromAsg``: the value must hold ``:<Effect>``; value and effect split at the first colon.

    (``value:Effect``, ``:Effect`` and values without an effect: ``test_aws_template.py``.)"""
    assert template(world, {TAINT + "t": value}).taints == ((taint,) if taint is not None else ())


@pytest.mark.parametrize(("tags", "options"), [
    pytest.param({"scaledownutilizationthreshold": "0.42", "scaledownunneededtime": "1h",
                  "ignoredaemonsetsutilization": "true"},
                 GroupOptions(scale_down_utilization_threshold=0.42, scale_down_unneeded_seconds=3600.0,
                              ignore_daemonsets_utilization=True), id="some-given"),
    pytest.param({"scaledownutilizationthreshold": "0.6", "scaledowngpuutilizationthreshold": "0.7",
                  "scaledownunneededtime": "1m", "scaledownunreadytime": "1h", "ignoredaemonsetsutilization": "F",
                  "notyetspecified": "42"},
                 GroupOptions(scale_down_utilization_threshold=0.6, scale_down_gpu_utilization_threshold=0.7,
                              scale_down_unneeded_seconds=60.0, scale_down_unready_seconds=3600.0,
                              ignore_daemonsets_utilization=False), id="all-given-unknown-ignored"),
    # CA's AWS provider reads five options; max node provision time is not one of them.
    pytest.param({"maxnodeprovisiontime": "10m"}, GroupOptions(), id="not-read-on-aws"),
])
def test_group_options_from_tags(world: AwsWorld, tags: Mapping[str, str], options: GroupOptions) -> None:
    group = group_tagged(world, {OPTION + k: v for k, v in tags.items()})
    assert isinstance(group, WithGroupOptions)
    assert group.group_options() == options

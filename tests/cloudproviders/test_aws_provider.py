"""The AWS provider over moto: groups, node mapping, the cache, acting, placeholders and launch errors.

Templates and prices are in ``test_aws_template.py``; error translation in
``test_aws_errors.py``; the contract shared with every provider in ``test_conformance.py``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest
from moto import mock_aws
from moto.autoscaling.models import autoscaling_backends
from moto.core.models import DEFAULT_ACCOUNT_ID

from cloudproviders.aws.provider import AwsProvider
from cloudproviders.aws.settings import parse_auto_discovery
from cloudproviders.config import ProviderConfig, StaticGroup, load_provider
from cloudproviders.interface import CloudError, InstanceErrorClass, InstanceState
from kube.model import Node
from tests.cloudproviders.aws_world import CLUSTER_TAGS, DISCOVERY, REGION, AwsWorld, aws_env
from tests.factories import node


@pytest.fixture
def world() -> Iterator[AwsWorld]:
    with aws_env(), mock_aws():
        yield AwsWorld()


def node_of(provider_id: str) -> Node:
    return dataclasses.replace(node(f"ip-{provider_id.rsplit('/', 1)[-1]}"), provider_id=provider_id)


# --- groups ------------------------------------------------------------------------------------


def test_static_groups_take_their_bounds_from_the_flag(world: AwsWorld) -> None:
    world.group("b-general", min_size=1, max_size=5, desired=2, instance_type="m5.xlarge")
    world.group("a-nvme", min_size=0, max_size=10, desired=0, instance_type="i3.2xlarge")
    provider = world.provider(static=[StaticGroup(1, 3, "b-general"), StaticGroup(0, 4, "a-nvme"),
                                      StaticGroup(0, 4, "absent")])
    groups = provider.node_groups()
    # Flag order; a static group AWS does not list is left out (CA logs and ignores it).
    assert [(g.name, g.min_size(), g.max_size(), g.target_size()) for g in groups] == [
        ("b-general", 1, 3, 2), ("a-nvme", 0, 4, 0)]
    instances = groups[0].instances()
    assert sorted(i.id for i in instances) == sorted(f"aws:///us-east-1a/{i}" for i in world.instance_ids("b-general"))
    assert {i.state for i in instances} == {InstanceState.RUNNING}


def test_discovery_by_tag_keys_and_values(world: AwsWorld) -> None:
    world.group("ours", min_size=0, max_size=7, desired=0, instance_type="m5.large",
                tags={**CLUSTER_TAGS, "team": "storage"})
    world.group("other-team", min_size=0, max_size=7, desired=0, instance_type="m5.large",
                tags={**CLUSTER_TAGS, "team": "web"})
    world.group("other-cluster", min_size=0, max_size=7, desired=0, instance_type="m5.large",
                tags={"k8s.io/cluster-autoscaler/enabled": "true"})
    provider = world.provider(discovery=[DISCOVERY])
    assert sorted(g.name for g in provider.node_groups()) == ["other-team", "ours"]
    provider = world.provider(discovery=[f"{DISCOVERY},team=storage"])
    assert [(g.name, g.min_size(), g.max_size()) for g in provider.node_groups()] == [("ours", 0, 7)]


def test_several_discovery_specs_all_apply(world: AwsWorld) -> None:
    """CA merges the specs' tags (``buildAsgTags``): another cluster's group never matches a second spec alone."""
    world.group("ours", min_size=0, max_size=7, desired=0, instance_type="m5.large", tags={**CLUSTER_TAGS, "team": "x"})
    world.group("other-cluster", min_size=0, max_size=7, desired=0, instance_type="m5.large", tags={"team": "x"})
    provider = world.provider(discovery=[DISCOVERY, "asg:tag=team=x"])
    assert [g.name for g in provider.node_groups()] == ["ours"]
    assert world.faults.calls.count("DescribeAutoScalingGroups") == 1


def test_a_group_named_twice_in_nodes_keeps_the_first_bounds(world: AwsWorld) -> None:
    """CA registers an explicitly configured group once and keeps its first bounds (``asgCache.register``)."""
    world.group("coolasg", min_size=1, max_size=10, desired=1, instance_type="m5.large")
    provider = world.provider(static=[StaticGroup(1, 10, "coolasg"), StaticGroup(1, 9, "coolasg")])
    assert [(g.name, g.min_size(), g.max_size()) for g in provider.node_groups()] == [("coolasg", 1, 10)]


def test_a_group_both_static_and_discovered_appears_once_with_the_flag_bounds(world: AwsWorld) -> None:
    world.group("nvme", min_size=0, max_size=10, desired=0, instance_type="i3.2xlarge", tags=CLUSTER_TAGS)
    provider = world.provider(static=[StaticGroup(2, 3, "nvme")], discovery=[DISCOVERY, DISCOVERY])
    assert [(g.name, g.min_size(), g.max_size()) for g in provider.node_groups()] == [("nvme", 2, 3)]


# --- node mapping and the cache ---------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def cached_provider(world: AwsWorld, clock: Clock, refresh_interval_seconds: float = 60.0) -> AwsProvider:
    """A provider on a fake monotonic clock."""
    config = ProviderConfig(static_groups=(StaticGroup(0, 5, "general"),),
                            refresh_interval_seconds=refresh_interval_seconds)
    provider = AwsProvider(config, world.api(), [], {}, clock=clock, on_demand_min_seconds=10.0)
    provider.refresh()
    return provider


def describes(world: AwsWorld) -> int:
    return world.faults.calls.count("DescribeAutoScalingGroups")


def test_unknown_instances_refresh_on_demand_at_most_every_few_seconds(world: AwsWorld) -> None:
    world.group("general", min_size=0, max_size=5, desired=1, instance_type="m5.xlarge")
    clock = Clock()
    provider = cached_provider(world, clock)
    (first,) = world.instance_ids("general")
    assert provider.node_group_for(node_of(f"aws:///us-east-1a/{first}")) is provider.node_groups()[0]
    world.autoscaling.set_desired_capacity(AutoScalingGroupName="general", DesiredCapacity=2)
    (second,) = set(world.instance_ids("general")) - {first}
    newcomer = node_of(f"aws:///us-east-1a/{second}")
    before = describes(world)
    # Just refreshed: the newcomer waits for the next allowed refresh.
    assert provider.node_group_for(newcomer) is None
    assert describes(world) == before
    clock.now += 10
    assert provider.node_group_for(newcomer) is provider.node_groups()[0]
    assert describes(world) == before + 1
    # A node outside every group costs at most one refresh per interval.
    stranger = node_of("aws:///us-east-1a/i-00000000000000001")
    clock.now += 10
    assert provider.node_group_for(stranger) is None
    assert provider.node_group_for(stranger) is None
    assert describes(world) == before + 2


@pytest.mark.parametrize("provider_id", [
    pytest.param("", id="none"),
    pytest.param("gce://project/zone/name", id="other-cloud"),
    pytest.param("kind://docker/kind/kind-worker", id="kind"),
])
def test_nodes_of_other_clouds_belong_to_no_group_and_cost_no_call(world: AwsWorld, provider_id: str) -> None:
    world.group("general", min_size=0, max_size=5, desired=1, instance_type="m5.xlarge")
    clock = Clock()
    provider = cached_provider(world, clock)
    clock.now += 100
    before = describes(world)
    assert provider.node_group_for(node_of(provider_id) if provider_id else node("n")) is None
    assert describes(world) == before


def test_refresh_reads_again_only_after_the_interval(world: AwsWorld) -> None:
    world.group("general", min_size=0, max_size=5, desired=1, instance_type="m5.xlarge")
    clock = Clock()
    provider = cached_provider(world, clock, refresh_interval_seconds=60.0)
    before = describes(world)
    clock.now += 59
    provider.refresh()
    assert describes(world) == before
    world.autoscaling.set_desired_capacity(AutoScalingGroupName="general", DesiredCapacity=3)
    clock.now += 1
    provider.refresh()
    assert describes(world) == before + 1
    assert provider.node_groups()[0].target_size() == 3


def test_a_failed_refresh_keeps_the_whole_previous_view(world: AwsWorld) -> None:
    world.group("general", min_size=0, max_size=5, desired=2, instance_type="m5.xlarge")
    provider = world.provider(static=[StaticGroup(0, 5, "general")])
    group = provider.node_groups()[0]
    world.faults.fail("DescribeAutoScalingGroups", 403, "AccessDenied", "not authorized")
    with pytest.raises(CloudError, match="AccessDenied"):
        provider.force_refresh()
    assert provider.node_groups() == [group] and len(group.instances()) == 2


# --- acting ------------------------------------------------------------------------------------


def test_increase_launches_and_delete_terminates(world: AwsWorld) -> None:
    world.group("general", min_size=1, max_size=5, desired=2, instance_type="m5.xlarge")
    provider = world.provider(static=[StaticGroup(1, 5, "general")])
    group = provider.node_groups()[0]
    group.increase_size(2)
    provider.force_refresh()
    assert group.target_size() == 4 and len(world.instance_ids("general")) == 4
    assert [i.state for i in group.instances()] == [InstanceState.RUNNING] * 4
    doomed = [node_of(i.id) for i in group.instances()[:2]]
    group.delete_nodes(doomed)
    assert group.target_size() == 2
    assert world.faults.calls.count("TerminateInstanceInAutoScalingGroup") == 2
    provider.force_refresh()
    assert sorted(f"aws:///us-east-1a/{i}" for i in world.instance_ids("general")) == sorted(
        i.id for i in group.instances())
    assert not {n.provider_id for n in doomed} & {i.id for i in group.instances()}


@pytest.mark.parametrize(("victims", "complaint"), [
    pytest.param(["aws:///us-east-1a/i-00000000000000001"], "is not one of its instances", id="foreign"),
    pytest.param(["gce://p/z/n"], "is not one of its instances", id="other-cloud"),
    pytest.param(["own", "own"], "below min", id="below-min"),
    # The same node twice would terminate one instance and lower the target twice (shared check, deletable.py).
    pytest.param(["same", "same"], "nodes repeated", id="repeated"),
])
def test_delete_refuses_what_it_cannot_do(world: AwsWorld, victims: list[str], complaint: str) -> None:
    world.group("general", min_size=1, max_size=5, desired=2, instance_type="m5.xlarge")
    provider = world.provider(static=[StaticGroup(1, 5, "general")])
    group = provider.node_groups()[0]
    own = [i.id for i in group.instances()]
    nodes = [node_of(own.pop() if v == "own" else own[0] if v == "same" else v) for v in victims]
    with pytest.raises(CloudError, match=complaint):
        group.delete_nodes(nodes)
    assert "TerminateInstanceInAutoScalingGroup" not in world.faults.calls
    assert group.target_size() == 2


def test_decrease_target_size_refuses_once_aws_started_the_instances(world: AwsWorld) -> None:
    """moto starts instances at once: lowering the target would then delete one (CA refuses too)."""
    world.group("nvme", min_size=0, max_size=5, desired=0, instance_type="i3.2xlarge")
    group = world.provider(static=[StaticGroup(0, 5, "nvme")]).node_groups()[0]
    group.increase_size(1)
    with pytest.raises(CloudError, match="attempt to delete existing instances"):
        group.decrease_target_size(-1)


# --- placeholders and launch errors -------------------------------------------------------------


def activities(status: str, message: str, start: str = "2100-01-01T00:00:00Z") -> str:
    member = (f"<member><ActivityId>a1</ActivityId><AutoScalingGroupName>nvme</AutoScalingGroupName>"
              f"<Description>Launching a new EC2 instance.  Status Reason: {message}</Description>"
              f"<Cause>set desired capacity</Cause><StartTime>{start}</StartTime><StatusCode>{status}</StatusCode>"
              f"<StatusMessage>{message}</StatusMessage><Progress>100</Progress></member>")
    return ("<DescribeScalingActivitiesResponse xmlns=\"http://autoscaling.amazonaws.com/doc/2011-01-01/\">"
            f"<DescribeScalingActivitiesResult><Activities>{member}</Activities></DescribeScalingActivitiesResult>"
            "<ResponseMetadata><RequestId>r</RequestId></ResponseMetadata></DescribeScalingActivitiesResponse>")


_STOCK_OUT = ("Could not launch On-Demand Instances. InsufficientInstanceCapacity - We currently do not have "
              "sufficient i3.2xlarge capacity in the Availability Zone you requested (us-east-1a). "
              "Launching EC2 instance failed.")
_QUOTA = ("Could not launch On-Demand Instances. VcpuLimitExceeded - You have requested more vCPU capacity than "
          "your current vCPU limit of 32 allows. Launching EC2 instance failed.")


@pytest.mark.parametrize(("status", "message", "start", "expected"), [
    pytest.param("Failed", _STOCK_OUT, "2100-01-01T00:00:00Z",
                 (InstanceErrorClass.OUT_OF_CAPACITY, "InsufficientInstanceCapacity"), id="stock-out"),
    pytest.param("Failed", _QUOTA, "2100-01-01T00:00:00Z", (InstanceErrorClass.QUOTA, "VcpuLimitExceeded"),
                 id="quota"),
    pytest.param("Failed", "Invalid IAM instance profile", "2100-01-01T00:00:00Z",
                 (InstanceErrorClass.OTHER, "Failed"), id="other"),
    pytest.param("InProgress", "", "2100-01-01T00:00:00Z", None, id="in-progress"),
    pytest.param("Failed", _STOCK_OUT, "2000-01-01T00:00:00Z", None, id="before-our-request"),
])
def test_requested_instances_are_placeholders_with_the_launch_error(
        world: AwsWorld, status: str, message: str, start: str,
        expected: tuple[InstanceErrorClass, str] | None) -> None:
    world.group("nvme", min_size=0, max_size=5, desired=0, instance_type="i3.2xlarge", zones=["us-east-1b"])
    world.faults.lag_launches = True
    provider = world.provider(static=[StaticGroup(0, 5, "nvme")])
    group = provider.node_groups()[0]
    group.increase_size(2)
    world.faults.respond("DescribeScalingActivities", activities(status, message, start))
    provider.force_refresh()
    instances = group.instances()
    assert [i.id for i in instances] == ["aws:///us-east-1b/i-placeholder-nvme-0", "aws:///us-east-1b/i-placeholder-nvme-1"]
    assert {i.state for i in instances} == {InstanceState.CREATING}
    errors = {(i.error.error_class, i.error.code) if i.error else None for i in instances}
    assert errors == {expected}


def test_a_failure_behind_a_newer_success_still_counts(world: AwsWorld) -> None:
    """CA ``isNodeGroupAvailable`` reads every activity since its last resize, not only the newest."""
    world.group("nvme", min_size=0, max_size=5, desired=0, instance_type="i3.2xlarge")
    world.faults.lag_launches = True
    provider = world.provider(static=[StaticGroup(0, 5, "nvme")])
    group = provider.node_groups()[0]
    group.increase_size(1)
    newest = activities("Successful", "", "2100-01-02T00:00:00Z")
    older = activities("Failed", _STOCK_OUT, "2100-01-01T00:00:00Z")
    member = older[older.index("<member>"):older.index("</Activities>")]
    world.faults.respond("DescribeScalingActivities", newest.replace("</Activities>", member + "</Activities>"))
    provider.force_refresh()
    (placeholder,) = group.instances()
    assert placeholder.error is not None and placeholder.error.code == "InsufficientInstanceCapacity"


def test_a_group_seen_for_the_first_time_has_no_launch_error_yet(world: AwsWorld) -> None:
    """CA ``isNodeGroupAvailable`` skips a group it has not registered; the next refresh reads its activities."""
    world.group("nvme", min_size=0, max_size=5, desired=0, instance_type="i3.2xlarge")
    world.faults.lag_launches = True
    autoscaling_backends[DEFAULT_ACCOUNT_ID][REGION].autoscaling_groups["nvme"].desired_capacity = 1
    world.faults.respond("DescribeScalingActivities", activities("Failed", _STOCK_OUT))
    provider = world.provider(static=[StaticGroup(0, 5, "nvme")])
    group = provider.node_groups()[0]
    assert "DescribeScalingActivities" not in world.faults.calls
    assert [i.error for i in group.instances()] == [None]
    provider.force_refresh()
    (placeholder,) = group.instances()
    assert placeholder.error is not None and placeholder.error.code == "InsufficientInstanceCapacity"


def test_unreadable_activities_leave_placeholders_without_an_error(world: AwsWorld) -> None:
    """CA: "If we can't describe the scaling activities we assume the node group is available"."""
    world.group("nvme", min_size=0, max_size=5, desired=0, instance_type="i3.2xlarge")
    world.faults.lag_launches = True
    provider = world.provider(static=[StaticGroup(0, 5, "nvme")])
    group = provider.node_groups()[0]
    group.increase_size(2)
    world.faults.fail("DescribeScalingActivities", 403, "AccessDenied", "not allowed")
    provider.force_refresh()
    assert [(i.state, i.error) for i in group.instances()] == [(InstanceState.CREATING, None)] * 2


def test_placeholders_are_deleted_by_lowering_the_target(world: AwsWorld) -> None:
    world.group("nvme", min_size=0, max_size=5, desired=0, instance_type="i3.2xlarge")
    world.faults.lag_launches = True
    provider = world.provider(static=[StaticGroup(0, 5, "nvme")])
    group = provider.node_groups()[0]
    group.increase_size(3)
    group.delete_nodes([node_of(group.instances()[0].id)])
    assert group.target_size() == 2
    assert "TerminateInstanceInAutoScalingGroup" not in world.faults.calls
    group.decrease_target_size(-2)
    provider.force_refresh()
    assert (group.target_size(), list(group.instances())) == (0, [])


def test_activities_are_read_only_for_groups_waiting_for_instances(world: AwsWorld) -> None:
    world.group("general", min_size=0, max_size=5, desired=2, instance_type="m5.xlarge")
    provider = world.provider(static=[StaticGroup(0, 5, "general")])
    provider.force_refresh()
    assert "DescribeScalingActivities" not in world.faults.calls


def test_instances_follow_their_lifecycle_state_and_terminating_ones_are_not_deleted_again(world: AwsWorld) -> None:
    world.group("general", min_size=0, max_size=5, desired=3, instance_type="m5.xlarge")
    states = autoscaling_backends[DEFAULT_ACCOUNT_ID][REGION].autoscaling_groups["general"].instance_states
    states[0].lifecycle_state, states[1].lifecycle_state = "Pending:Wait", "Terminating:Wait"
    ids = {"Pending:Wait": states[0].instance.id, "Terminating:Wait": states[1].instance.id,
           "InService": states[2].instance.id}
    provider = world.provider(static=[StaticGroup(0, 5, "general")])
    group = provider.node_groups()[0]
    assert {i.id.rsplit("/", 1)[-1]: i.state for i in group.instances()} == {
        ids["Pending:Wait"]: InstanceState.CREATING, ids["Terminating:Wait"]: InstanceState.DELETING,
        ids["InService"]: InstanceState.RUNNING,
        # A terminating instance no longer counts: AWS launches a replacement for the desired capacity.
        "i-placeholder-general-0": InstanceState.CREATING}
    group.delete_nodes([node_of(f"aws:///us-east-1a/{ids['Terminating:Wait']}")])
    assert "TerminateInstanceInAutoScalingGroup" not in world.faults.calls


def test_throttled_reads_are_retried_after_the_advised_wait(world: AwsWorld) -> None:
    world.group("general", min_size=0, max_size=5, desired=1, instance_type="m5.xlarge")
    world.faults.fail("DescribeAutoScalingGroups", 400, "Throttling", "Rate exceeded")
    world.faults.fail("DescribeAutoScalingGroups", 503, "ServiceUnavailable", "try again")
    provider = world.provider(static=[StaticGroup(0, 5, "general")])
    assert [g.target_size() for g in provider.node_groups()] == [1]
    assert world.sleeps == [1.0, 2.0]


def test_load_provider_builds_the_aws_provider(world: AwsWorld) -> None:
    world.group("general", min_size=0, max_size=5, desired=1, instance_type="m5.xlarge")
    provider = load_provider("aws", ProviderConfig(static_groups=(StaticGroup(0, 5, "general"),)))
    provider.refresh()
    assert (provider.name, [g.name for g in provider.node_groups()]) == ("aws", ["general"])


def test_an_on_demand_refresh_neither_adds_nor_drops_groups(world: AwsWorld) -> None:
    world.group("general", min_size=0, max_size=5, desired=1, instance_type="m5.xlarge", tags=CLUSTER_TAGS)
    clock = Clock()
    provider = AwsProvider(ProviderConfig(auto_discovery=(DISCOVERY,)), world.api(),
                           [parse_auto_discovery(DISCOVERY)], {}, clock=clock)
    provider.refresh()
    world.group("newcomer", min_size=0, max_size=5, desired=1, instance_type="m5.xlarge", tags=CLUSTER_TAGS)
    world.autoscaling.delete_auto_scaling_group(AutoScalingGroupName="general", ForceDelete=True)
    clock.now += 30
    (stranger,) = world.instance_ids("newcomer")
    assert provider.node_group_for(node_of(f"aws:///us-east-1a/{stranger}")) is None
    assert [g.name for g in provider.node_groups()] == ["general"]
    clock.now += 60
    provider.refresh()
    assert [g.name for g in provider.node_groups()] == ["newcomer"]


def test_a_placeholder_aws_has_meanwhile_started_is_not_deleted_by_lowering_the_target(world: AwsWorld) -> None:
    world.group("nvme", min_size=0, max_size=5, desired=0, instance_type="i3.2xlarge")
    world.faults.lag_launches = True
    provider = world.provider(static=[StaticGroup(0, 5, "nvme")])
    group = provider.node_groups()[0]
    group.increase_size(1)
    (placeholder,) = group.instances()
    world.faults.lag_launches = False
    world.autoscaling.set_desired_capacity(AutoScalingGroupName="nvme", DesiredCapacity=1)  # AWS starts it
    with pytest.raises(CloudError, match="attempt to delete existing instances"):
        group.delete_nodes([node_of(placeholder.id)])
    assert len(world.instance_ids("nvme")) == 1

"""Storage-aware scale-up from zero, end to end: the real loop's decision over the AWS provider on moto.

No node of either group exists; the only thing the autoscaler knows about local disks
is what the AWS templates say (instance store of i3.2xlarge: 1.9 TB; ``general`` tagged
with a max capacity of 0). The decision is then carried out through the provider.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from moto import mock_aws

from autoscaler.runonce import run_once
from cloudproviders.config import StaticGroup
from kube.names import StorageNames
from tests.cloudproviders.aws_world import AwsWorld, aws_env
from tests.factories import NOW, ClusterObject, cluster, options, pod, pvc, storage_class

NO_LOCAL_STORAGE = {f"k8s.io/cluster-autoscaler/node-template/label/{StorageNames().max_capacity_label}": "0"}


@pytest.fixture
def world() -> Iterator[AwsWorld]:
    with aws_env(), mock_aws():
        yield AwsWorld()


def brokers(count: int, size: str) -> list[ClusterObject]:
    """Pending StatefulSet pods, each with one local claim of ``size``."""
    out: list[ClusterObject] = []
    for i in range(count):
        out.append(pvc(f"data-kafka-{i}", size))
        out.append(pod(f"kafka-{i}", "500m", "1Gi", owner=("StatefulSet", "kafka"), claims=[f"data-kafka-{i}"]))
    return out


@pytest.mark.parametrize(("count", "size", "flags", "nodes"), [
    pytest.param(4, "1000Gi", [], 4, id="one-broker-per-1.9TB-node"),
    pytest.param(4, "800Gi", [], 2, id="two-brokers-per-node"),
    # general (m5.xlarge) is cheaper, but its template declares no local storage.
    pytest.param(3, "800Gi", ["--expander=price"], 2, id="price-expander-skips-the-diskless-group"),
])
def test_scale_up_from_zero_sizes_by_instance_store(world: AwsWorld, count: int, size: str, flags: list[str],
                                                    nodes: int) -> None:
    world.group("nvme", min_size=0, max_size=10, desired=0, instance_type="i3.2xlarge")
    world.group("general", min_size=0, max_size=10, desired=0, instance_type="m5.xlarge", tags=NO_LOCAL_STORAGE)
    provider = world.provider(static=[StaticGroup(0, 10, "nvme"), StaticGroup(0, 10, "general")])
    decision = run_once(cluster(storage_class(), *brokers(count, size)), provider, options(*flags), NOW,
                        steady_state=True)
    up = decision.scale_up
    assert up.result == "ScaledUp", up.still_unschedulable
    assert {i.group: i.delta for i in up.increases} == {"nvme": nodes}
    groups = {g.name: g for g in provider.node_groups()}
    for increase in up.increases:
        groups[increase.group].increase_size(increase.delta)
    provider.force_refresh()
    assert len(world.instance_ids("nvme")) == nodes and world.instance_ids("general") == []


def test_pods_too_big_for_any_instance_store_stay_pending(world: AwsWorld) -> None:
    world.group("nvme", min_size=0, max_size=10, desired=0, instance_type="i3.2xlarge")
    provider = world.provider(static=[StaticGroup(0, 10, "nvme")])
    up = run_once(cluster(storage_class(), *brokers(1, "2Ti")), provider, options(), NOW, steady_state=True).scale_up
    assert (up.result, list(up.increases)) == ("NoScaleUp", [])
    assert "free storage" in up.still_unschedulable["default/kafka-0"]["nvme"]

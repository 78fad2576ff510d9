"""The simulated cloud: provisioning delay, new nodes from the template, deletion, limits, cost."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from cloudproviders.interface import CloudError, CloudProvider, NodeGroup, Priced
from emulator.cloud import SimNodeGroup
from emulator.world import World
from kube.names import HOSTNAME_LABEL, StorageNames
from tests.emulator.worlds import (
    PROVISIONING,
    START,
    deployment,
    later,
    make_world,
    node,
    nvme_group,
    nvme_node,
    pods_of,
)

NAMES = StorageNames()


def _world() -> World:
    return make_world(nvme_group(min_size=1, max_size=4, price=2.0), nvme_node("nvme-1"))


def test_protocols() -> None:
    world = _world()
    cloud: CloudProvider = world.cloud
    group: NodeGroup = cloud.node_groups()[0]
    assert isinstance(group, Priced) and group.price_per_hour() == 2.0
    assert cloud.node_group_for(node(world, "nvme-1")) is group
    assert [g.name for g in world.cluster.list_objects().node_groups] == ["nvme"]


def test_new_nodes_register_after_the_provisioning_delay() -> None:
    world = _world()
    group = world.cloud.group("nvme")
    group.increase_size(2)
    assert (group.target_size(), list(group.node_names())) == (3, ["nvme-1"])
    assert world.cluster.list_objects().node_groups[0].target_size == 3
    later(world, PROVISIONING - 1)
    assert world.cluster.node("nvme-2") is None
    later(world, 1)
    assert list(group.node_names()) == ["nvme-1", "nvme-2", "nvme-3"]
    new = node(world, "nvme-2")
    assert new.labels[HOSTNAME_LABEL] == "nvme-2"
    assert new.labels["ng"] == "nvme"
    assert (new.ready, new.created, new.ready_since) == (True, START + PROVISIONING, START + PROVISIONING)
    assert new.provider_id == "sim:///nvme/nvme-2"
    # The storage driver has not started: neither its label nor its annotation.
    assert new.free_local_bytes is None and new.max_local_bytes is None
    assert NAMES.capacity_annotation not in new.annotations
    assert NAMES.max_capacity_label not in new.labels
    assert world.cloud.node_group_for(new) is group


@pytest.mark.parametrize(("call", "message"), [
    pytest.param(lambda g: g.increase_size(4), "above max 4", id="above-max"),
    pytest.param(lambda g: g.increase_size(0), "must be positive", id="zero"),
    pytest.param(lambda g: g.delete_names(["nvme-9"]), "not a member", id="unknown-node"),
    pytest.param(lambda g: g.delete_names(["nvme-1"]), "below min 1", id="below-min"),
])
def test_cloud_errors(call: Callable[[SimNodeGroup], None], message: str) -> None:
    world = _world()
    group = world.cloud.group("nvme")
    with pytest.raises(CloudError, match=message):
        call(group)
    assert (group.target_size(), list(group.node_names())) == (1, ["nvme-1"])


def test_delete_removes_the_node_and_its_pods_at_once() -> None:
    world = make_world(nvme_group(), nvme_node("nvme-1", cpu="2"), nvme_node("nvme-2", cpu="2"),
                       deployment("web", 2, cpu="1500m"))
    before = {p.node_name: p.name for p in pods_of(world, "web")}
    assert set(before) == {"nvme-1", "nvme-2"}
    world.cloud.group("nvme").delete_names(["nvme-1"])
    assert world.cluster.node("nvme-1") is None
    assert world.cloud.group("nvme").target_size() == 1
    web = pods_of(world, "web")
    assert len(web) == 2, "the ReplicaSet recreated the lost pod"
    replacement = next(p for p in web if p.name != before["nvme-2"])
    assert (replacement.node_name, replacement.marked_unschedulable) == ("", True)
    assert world.metrics.evictions == 0


def test_node_seconds_and_cost_count_provisioning_instances() -> None:
    world = make_world(nvme_group(price=2.0), nvme_group("cpu", local=None, price=0.5), nvme_node("nvme-1"))
    world.cloud.group("cpu").increase_size(2)
    later(world, 1800)
    world.cloud.group("nvme").delete_names(["nvme-1"])
    later(world, 1800)
    hours = world.metrics.node_hours_by_group()
    assert hours == {"nvme": 0.5, "cpu": 2.0}
    assert world.metrics.cost_by_group() == {"nvme": 1.0, "cpu": 1.0}
    assert (world.metrics.node_hours(), world.metrics.cost()) == (2.5, 2.0)


def test_targets_above_members_are_launched_at_the_start() -> None:
    world = make_world(nvme_group(min_size=2, target_size=3), nvme_node("nvme-1"))
    group = world.cloud.group("nvme")
    assert (group.target_size(), len(group.provisioning)) == (3, 2)
    later(world, PROVISIONING)
    assert list(group.node_names()) == ["nvme-1", "nvme-2", "nvme-3"]
    assert world.sample().nodes == {"nvme": 3}

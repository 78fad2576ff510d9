"""``run``'s loop over the simulated world: events, status ConfigMap, metrics, dry run, lost lease.

The world (``emulator``) stands behind the same ``ClusterAPI`` and ``CloudProvider``
seams the live adapter and the cloud providers implement, so what the loop reports
is checked against what really changed.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest
import yaml

from app.run.events import go_utilization
from emulator.world import World
from kube.clusterapi import ClusterAPI, EvictionResult, ViewUnavailable
from kube.model import ClusterObjects, Pod, Taint
from simulator.utilization import Utilization
from tests.app.run_helpers import NO_GPU, live_loop, sample
from tests.emulator.worlds import deployment, make_world, nvme_group, nvme_node, rok_class, statefulset


def _storage_bound() -> World:
    """Four brokers each need 400Gi of local disk; nvme-1 has 300Gi free: two new nodes are needed."""
    return make_world(rok_class(), nvme_group(min_size=1), nvme_node("nvme-1", free="300Gi"),
                      statefulset("kafka", 4, "400Gi", cpu="1"))


def _events(world: World, reason: str) -> list[tuple[str, str, str]]:
    return [(e.kind, e.name, e.message) for e in world.cluster.events if e.reason == reason]


def _status(world: World) -> dict[str, object]:
    assert world.cluster.statuses, "no status written"
    status = yaml.safe_load(world.cluster.statuses[-1].text)
    assert isinstance(status, dict)
    return status


def test_scale_up_emits_ca_events_status_and_metrics() -> None:
    world = _storage_bound()
    loop = live_loop(world)
    world.advance(world.clock.now)
    assert loop.iterate(world.clock.now)
    assert world.cloud.group("nvme").target_size() == 3
    triggered = _events(world, "TriggeredScaleUp")
    assert sorted(name for _, name, _ in triggered) == [f"kafka-{i}" for i in range(4)]
    assert {msg for *_, msg in triggered} == {"pod triggered scale-up: [{nvme 1->3 (max: 10)}]"}
    assert _events(world, "ScaledUpGroup") == [
        ("ConfigMap", "cluster-autoscaler-status", "Scale-up: setting group nvme size to 3 instead of 1 (max: 10)")]
    assert sample(loop, "cluster_autoscaler_scaled_up_nodes_total", **NO_GPU) == 2
    assert sample(loop, "cluster_autoscaler_unschedulable_pods_count", type="unschedulable") == 4
    assert sample(loop, "storage_autoscaler_pods_pending_local_storage") == 4
    assert sample(loop, "storage_autoscaler_local_storage_free_bytes", node_group="nvme") == 300 * 2**30
    assert sample(loop, "storage_autoscaler_local_storage_total_bytes", node_group="nvme") == 1000 * 2**30
    assert sample(loop, "cluster_autoscaler_node_group_target_count", node_group="nvme") == 3
    assert sample(loop, "cluster_autoscaler_function_duration_seconds_count", function="main") == 1
    status = _status(world)
    assert status["autoscalerStatus"] == "Running"
    group = status["nodeGroups"][0]  # type: ignore[index]
    assert group["name"] == "nvme"
    assert group["health"]["cloudProviderTarget"] == 3
    assert group["health"]["nodeCounts"]["registered"]["ready"] == 1
    assert group["health"]["nodeCounts"]["unregistered"] == 2
    assert group["scaleUp"]["status"] == "InProgress"
    assert status["clusterWide"]["scaleUp"]["status"] == "InProgress"  # type: ignore[index]


def test_dry_run_decides_and_reports_but_changes_nothing() -> None:
    world = _storage_bound()
    loop = live_loop(world, dry_run=True)
    world.advance(world.clock.now)
    assert loop.iterate(world.clock.now)
    assert world.cloud.group("nvme").target_size() == 1
    triggered = _events(world, "TriggeredScaleUp")
    assert len(triggered) == 4
    assert all(msg.startswith("(dry run) pod triggered scale-up") for *_, msg in triggered)
    assert sample(loop, "cluster_autoscaler_scaled_up_nodes_total", **NO_GPU) == 0
    assert _status(world)["autoscalerStatus"] == "Running"


def test_a_lost_lease_refuses_every_change() -> None:
    world = _storage_bound()
    loop = live_loop(world, refusal=lambda: "not the leader")
    world.advance(world.clock.now)
    loop.iterate(world.clock.now)
    assert world.cloud.group("nvme").target_size() == 1
    assert _events(world, "TriggeredScaleUp") == []
    assert _events(world, "FailedToScaleUpGroup") == [], "a refusal is not a cloud failure"
    assert sample(loop, "cluster_autoscaler_errors_total", type="cloudProviderError") == 0


def _idle_node_world() -> World:
    return make_world(rok_class(), nvme_group(min_size=1), nvme_node("nvme-1"), nvme_node("nvme-2"),
                      deployment("web", 1, cpu="500m"))


@pytest.mark.parametrize(("dry_run", "left"), [
    pytest.param(False, 1, id="acts"),
    pytest.param(True, 2, id="dry-run"),
])
def test_scale_down_of_an_idle_node(dry_run: bool, left: int) -> None:
    world = _idle_node_world()
    loop = live_loop(world, "--scale-down-unneeded-time=0s", "--scale-down-delay-after-add=0s", dry_run=dry_run)
    for _ in range(12):  # evicted pods take their grace period (30s) to go
        world.advance(world.clock.now + 10)
        assert loop.iterate(world.clock.now)
    assert len(world.cloud.group("nvme").node_names()) == left
    started = _events(world, "ScaleDown")
    assert [(kind, msg.removeprefix("(dry run) ")) for kind, _, msg in started][:1] == [
        ("Node", "marked the node as toBeDeleted/unschedulable")]
    removed = sample(loop, "cluster_autoscaler_scaled_down_nodes_total", reason="empty", **NO_GPU)
    removed += sample(loop, "cluster_autoscaler_scaled_down_nodes_total", reason="underutilized", **NO_GPU)
    assert removed == (0 if dry_run else 1)
    assert world.metrics.data_loss_events == []


def test_pods_no_group_helps_get_not_trigger_scale_up_once() -> None:
    world = make_world(rok_class(), nvme_group(min_size=1, max_size=1), nvme_node("nvme-1", free="100Gi"),
                       statefulset("kafka", 1, "400Gi"))
    loop = live_loop(world)
    for _ in range(3):
        world.advance(world.clock.now + 10)
        loop.iterate(world.clock.now)
    not_triggered = [e for e in world.cluster.events if e.reason == "NotTriggerScaleUp"]
    assert [e.name for e in not_triggered] == ["kafka-0"]
    assert not_triggered[0].count == 1, "repeated at most every 10 minutes"
    assert not_triggered[0].message.startswith("pod didn't trigger scale-up: 1 ")


class _Unavailable:
    """A cluster whose view is never complete (caches not synced); every other call is the world's."""

    def __init__(self, inner: ClusterAPI) -> None:
        self.inner = inner

    def list_objects(self) -> ClusterObjects:
        raise ViewUnavailable("watch of pods lost; re-listing")

    def pods_on_node(self, node: str) -> Sequence[Pod]:
        return self.inner.pods_on_node(node)

    def taint_node(self, node: str, taint: Taint) -> None:
        self.inner.taint_node(node, taint)

    def untaint_node(self, node: str, key: str) -> None:
        self.inner.untaint_node(node, key)

    def evict_pod(self, namespace: str, name: str, grace_period_seconds: int | None = None) -> EvictionResult:
        return self.inner.evict_pod(namespace, name, grace_period_seconds)

    def record_event(self, kind: str, namespace: str, name: str, reason: str, message: str, *,
                     warning: bool = False) -> None:
        self.inner.record_event(kind, namespace, name, reason, message, warning=warning)

    def write_status(self, text: str) -> None:
        self.inner.write_status(text)


def test_an_incomplete_view_fails_the_loop_without_acting_or_crashing() -> None:
    world = _storage_bound()
    loop = live_loop(world, cluster=_Unavailable(world.cluster))
    world.advance(world.clock.now)
    assert not loop.iterate(world.clock.now)
    assert not loop.iterate(world.clock.now + 10)
    assert sample(loop, "cluster_autoscaler_errors_total", type="apiCallError") == 2
    assert world.cloud.group("nvme").target_size() == 1
    assert world.cluster.statuses == []


def test_scale_down_events_on_the_status_config_map_as_cas_actuator() -> None:
    world = _idle_node_world()
    loop = live_loop(world, "--scale-down-unneeded-time=0s", "--scale-down-delay-after-add=0s")
    for _ in range(12):
        world.advance(world.clock.now + 10)
        assert loop.iterate(world.clock.now)
    on_config_map = [(e.name, e.reason, e.message) for e in world.cluster.events
                     if e.kind == "ConfigMap" and e.reason.startswith("ScaleDown")]
    assert on_config_map == [
        ("cluster-autoscaler-status", "ScaleDownEmpty", 'Scale-down: removing empty node "nvme-1"'),
        ("cluster-autoscaler-status", "ScaleDownEmpty", "Scale-down: empty node nvme-1 removed")]
    assert ("Node", "nvme-1", "nodes removed by cluster autoscaler") in _events(world, "ScaleDown")


@pytest.mark.parametrize(("utilization", "printed"), [
    pytest.param(Utilization(0.25, 0.5, None), "{0.25 0.5 0 0 memory 0.5}", id="memory-decides"),
    pytest.param(Utilization(0.75, 0.5, 0.9), "{0.75 0.5 0 0 cpu 0.75}", id="cpu-decides"),
    pytest.param(None, "{0 0 0 0  0}", id="unknown"),
])
def test_utilization_in_scale_down_events_is_printed_as_go_does(utilization: Utilization | None,
                                                                 printed: str) -> None:
    assert go_utilization(utilization) == printed


def test_nodes_that_never_register_count_as_timed_out_scale_up() -> None:
    world = make_world(rok_class(), nvme_group(min_size=1), nvme_node("nvme-1", free="300Gi"),
                       statefulset("kafka", 4, "400Gi", cpu="1"), provisioning="2h")
    loop = live_loop(world, "--max-node-provision-time=1m")
    for _ in range(10):
        world.advance(world.clock.now + 10)
        assert loop.iterate(world.clock.now)
    assert sample(loop, "cluster_autoscaler_failed_scale_ups_total", reason="timeout", **NO_GPU) == 1
    assert sample(loop, "cluster_autoscaler_failed_node_creations_total", reason="timeout") == 2


@pytest.mark.parametrize(("flags", "direction", "limit"), [
    pytest.param(["--cores-total=0:8"], "up", "CpuResourceLimit", id="scale-up-capped-by-cores"),
    pytest.param(["--memory-total=0:32"], "up", "MemoryResourceLimit", id="scale-up-capped-by-memory"),
])
def test_resource_limits_count_as_skipped_scale_events(flags: list[str], direction: str, limit: str) -> None:
    world = _storage_bound()
    loop = live_loop(world, *flags)
    world.advance(world.clock.now)
    assert loop.iterate(world.clock.now)
    # The registry's own name; /metrics drops the _total as CA's does (test_run_metrics.py).
    assert sample(loop, "cluster_autoscaler_skipped_scale_events_count_total", direction=direction,
                  reason=limit) == 1

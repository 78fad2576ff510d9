"""The thesis' end-to-end stories: the real ``Autoscaler`` loop against a simulated world.

Each story builds a small ``World``, then drives it as ``autoscaler simulate`` does: at
every scan interval ``world.advance(t)`` lets time pass (nodes register, the storage
driver starts and unpins, the scheduler binds) and ``autoscaler.run_once(t)`` decides and
acts (taint, evict, delete through the cloud, resize groups). Every loop is recorded as a
``Tick`` (what the loop saw, what it decided, what the world looked like after), and the
assertions check what happened, in order.

1. Thesis 3.4.5.2, scale-down coordinated with the storage guard: the drain of a node whose
   pod uses a migratable local volume waits for the guard's PodDisruptionBudget while the
   driver unpins, and succeeds after; with ``--max-pod-eviction-time`` shorter than the
   unpin, the deletion is rolled back.
2. Thesis 3.4.5.5, scale-up for storage: a pod whose local volume fits no existing node
   triggers one new node, and the loop waits for the driver there instead of adding another.
3. A node deletion the cloud refuses is rolled back, and scale-down cools down before it
   tries again (``SimNodeGroup.fail_deletes`` injects the fault).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import pytest

from autoscaler.loop import Autoscaler, LoopRecord
from cloudproviders.interface import CloudError
from emulator.cluster import pinned_host
from emulator.world import World
from kube.model import Node
from kube.names import CA_TO_BE_DELETED_TAINT
from tests.emulator.worlds import (
    PROVISIONING,
    Driven,
    GiB,
    Json,
    deployment,
    has_guard_budget,
    make_world,
    nvme_group,
    nvme_node,
    rok_class,
    statefulset,
    volume_of,
)
from tests.factories import options

# --- driving the loop ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class State:
    """The world at one moment."""

    nodes: Mapping[str, Node]
    #: Non-guard pod name -> its node ("" while pending).
    pods: Mapping[str, str]
    #: Nodes whose guard PodDisruptionBudget exists.
    guard_budgets: frozenset[str]
    #: Bound claim name -> the host its PV is pinned to (None: unpinned).
    pinned: Mapping[str, str | None]
    #: Node group -> its target size.
    targets: Mapping[str, int]

    def tainted(self, name: str) -> bool:
        node = self.nodes.get(name)
        return node is not None and node.has_taint(CA_TO_BE_DELETED_TAINT)


@dataclass(frozen=True, slots=True)
class Tick:
    #: Seconds since the scenario's start.
    at: float
    record: LoopRecord
    #: The world as this loop listed it (after ``advance``, before ``run_once``).
    seen: State
    #: The world after the loop acted.
    after: State
    #: ``metrics.refused_evictions`` after the loop.
    refused: int
    #: Deletions in progress after the loop: node -> (refused evictions so far, the last refusal).
    draining: Mapping[str, tuple[int, str]]
    #: The loop's ``memory.last_failure`` after it acted, in seconds since the start.
    last_failure: float | None


def _state(world: World) -> State:
    nodes = {n.name: n for n in world.cluster.nodes()}
    pods = {p.name: p.node_name for p in world.cluster.pods() if not world.guard.is_guard(p)}
    pinned = {name: pinned_host(volume_of(world, name, namespace))
              for (namespace, name), claim in world.cluster.claims().items() if claim.volume_name}
    budgets = frozenset(n for n in nodes if has_guard_budget(world, n))
    return State(nodes, pods, budgets, pinned, {g.name: g.target_size() for g in world.cloud.groups()})


def _rel(world: World, t: float | None) -> float | None:
    return None if t is None else t - world.start


def _drive(world: World, *flags: str, minutes: float) -> tuple[Driven, list[Tick]]:
    """Run the real loop every scan interval from the scenario's start for ``minutes``."""
    autoscaler = Driven(Autoscaler(world.cluster, world.cloud, options(*flags)))
    step = world.scenario.scan_interval
    ticks: list[Tick] = []
    for i in range(int(minutes * 60 / step) + 1):
        now = world.start + i * step
        world.advance(now)
        seen = _state(world)
        record = autoscaler.run_once(now)
        draining = {t.node: (t.refusals, t.last_refusal) for t in autoscaler.actuator.tasks.values()}
        ticks.append(Tick(now - world.start, record, seen, _state(world), world.metrics.refused_evictions, draining,
                          _rel(world, autoscaler.memory.last_failure)))
    return autoscaler, ticks


def _history(world: World, autoscaler: Driven, node: str) -> list[tuple[float, str, str]]:
    """The actuator's record for ``node``: (seconds since start, kind, message)."""
    return [(e.time - world.start, e.kind, e.message) for e in autoscaler.actuation if e.node == node]


def _scale_events(world: World, autoscaler: Driven, kind: str) -> list[tuple[float, str, int]]:
    return [(e.time - world.start, e.group, e.nodes) for e in autoscaler.events if e.kind == kind]


def _first(history: list[tuple[float, str, str]], kind: str, after: float = -math.inf) -> tuple[float, str, str]:
    found = next((h for h in history if h[1] == kind and h[0] >= after), None)
    assert found is not None, f"no {kind} event at or after {after}s in {history}"
    return found


def _tick(ticks: list[Tick], at: float) -> Tick:
    return next(t for t in ticks if t.at == at)


# --- story 1: a drain waits for the guard PDB (thesis 3.4.5.2) -----------------------------

#: Every pod here keeps Kubernetes' default terminationGracePeriodSeconds: an evicted pod
#: stays on its node this long, and the actuator deletes the node only after it is gone.
GRACE = 30.0
DB_SIZE_GIB = 60
UNPIN_PER_GIB = 5.0
#: The storage driver snapshots db-0's volume in this long (size x unpinSecondsPerGiB).
UNPIN_SECONDS = DB_SIZE_GIB * UNPIN_PER_GIB


def _guarded_drain_world() -> World:
    """nvme-1 runs db-0 (a 60Gi local volume pinned there) and its guard; nvme-2, which joins
    at the start, runs a 5-cpu web pod (not underutilized) and has room for db-0.

    The second node joins by a scenario event so that the scheduler puts db-0 on nvme-1.
    """
    return make_world(
        rok_class(), nvme_group(), nvme_node("nvme-1"), statefulset("db", 1, f"{DB_SIZE_GIB}Gi"),
        events=[{"at": "0s", "create": [nvme_node("nvme-2"), deployment("web", 1, cpu="5")]}],
        unpin=UNPIN_PER_GIB)


@pytest.mark.parametrize("eviction_time", [
    pytest.param(600.0, id="eviction-time-longer-than-unpin-drains-and-deletes"),
    pytest.param(120.0, id="eviction-time-shorter-than-unpin-rolls-back"),
])
def test_a_drain_waits_for_the_guard_pdb_and_succeeds_after_unpinning(eviction_time: float) -> None:
    world = _guarded_drain_world()
    assert world.cluster.pod("default", "db-0") is not None
    assert pinned_host(volume_of(world, "data-db-0")) == "nvme-1"
    # A fast predicted driver (6 s for 60Gi) keeps the bytes' deadline below the flag: the flag alone counts.
    autoscaler, ticks = _drive(world, "--scale-down-unneeded-time=2m", "--storage-unpin-throughput=10Gi",
                               f"--max-pod-eviction-time={int(eviction_time)}s", minutes=12)
    step = world.scenario.scan_interval
    history = _history(world, autoscaler, "nvme-1")

    # The autoscaler chose nvme-1 (db-0 can move to nvme-2; the guard is ignored) and tainted it.
    t0, _, message = _first(history, "Tainted")
    assert message == "draining 2 pod(s)", "db-0 and the guard"
    assert t0 == 120.0, "after --scale-down-unneeded-time"
    assert not any(t.seen.tainted("nvme-1") for t in ticks if t.at < t0)
    assert _scale_events(world, autoscaler, "ScaleDownStarted")[0] == (t0, "nvme", 1)
    assert _tick(ticks, t0).after.tainted("nvme-1")
    (chosen,) = _tick(ticks, t0).record.decision.scale_down.to_delete
    assert (chosen.node, chosen.destinations) == ("nvme-1", {"default/db-0": "nvme-2"})
    assert [p.namespace for p in chosen.drain.guards] == ["rok-system"], "evicted, but not moved in simulation"
    # db-0 was evicted at once (no budget); the guard was refused: its PDB holds until the unpin.
    assert history[1] == (t0, "Evicted", "default/db-0")
    assert _tick(ticks, t0).refused == 1
    refusals, last = _tick(ticks, t0).draining["nvme-1"]
    assert refusals == 1 and "disruption budget rok-system/rok-csi-guard-nvme-1" in last
    # No false scale-up for db-0 while it waits for its volume to be unpinned.
    assert _scale_events(world, autoscaler, "ScaleUp") == []
    assert world.metrics.data_loss_events == []

    if eviction_time > UNPIN_SECONDS:
        t_deleted, _, removed = _first(history, "Deleted")
        assert removed == "removed from nvme"
        # db-0 terminated for its grace period, then the driver unpinned its volume; the guard
        # was refused every loop until then, then its budget was gone when the loop came (seen
        # before acting), the eviction went through, and the node went once the guard had
        # terminated too (its own grace period).
        assert UNPIN_SECONDS + 2 * GRACE <= t_deleted - t0 < UNPIN_SECONDS + 2 * GRACE + step
        t_guard = history[2][0]
        assert t_guard == t_deleted - GRACE
        waiting = [t for t in ticks if t0 <= t.at < t_guard]
        assert all(t.after.tainted("nvme-1") and "nvme-1" in t.seen.guard_budgets for t in waiting)
        assert [t.refused for t in waiting] == list(range(1, len(waiting) + 1)), "one refusal per loop"
        # Meanwhile db-0 terminated on nvme-1, then waited, pending, for its volume, still pinned to
        # nvme-1 until the unpin ended.
        assert all(t.after.pods["db-0"] == "nvme-1" for t in waiting if t.at < t0 + GRACE)
        assert all(t.after.pods["db-0"] == "" and t.after.pinned["data-db-0"] == "nvme-1"
                   for t in waiting if t.at >= t0 + GRACE)
        last_loop = _tick(ticks, t_deleted)
        assert "nvme-1" in last_loop.seen.nodes and "nvme-1" not in last_loop.seen.guard_budgets
        assert [kind for _, kind, _ in history] == ["Tainted", "Evicted", "Evicted", "Deleted"]
        assert history[2][2].startswith("rok-system/rok-csi-guard-nvme-1-")
        assert world.metrics.refused_evictions == len(waiting)
        # The node is gone through the cloud; db-0 runs on nvme-2 with its volume pinned there.
        assert world.cluster.node("nvme-1") is None
        group = world.cloud.group("nvme")
        assert (list(group.node_names()), group.target_size()) == (["nvme-2"], 1)
        assert ticks[-1].after.pods["db-0"] == "nvme-2"
        assert pinned_host(volume_of(world, "data-db-0")) == "nvme-2"
        assert (world.metrics.unpins, world.metrics.restores) == (1, 1)
        assert _rel(world, autoscaler.memory.last_scale_down) == t_deleted
        assert autoscaler.memory.last_failure is None
    else:
        # The guard is still refused when --max-pod-eviction-time runs out: the deletion fails.
        t_failed, _, why = _first(history, "Failed")
        assert t_failed == t0 + eviction_time
        assert why.startswith("pods not evicted within --max-pod-eviction-time: rok-system/rok-csi-guard-nvme-1-")
        assert "Deleted" not in [kind for _, kind, _ in history]
        failed = _tick(ticks, t_failed)
        # Rolled back: the taint is gone, the node and its group are untouched.
        assert not failed.after.tainted("nvme-1") and "nvme-1" in failed.after.nodes
        assert "nvme-1" not in failed.draining
        assert failed.last_failure == t_failed
        assert failed.after.targets == {"nvme": 2}
        # The cancelled unpin left the volume pinned to nvme-1, and db-0 went back there.
        assert world.metrics.unpins == 0
        back = _tick(ticks, t_failed + step)
        assert (back.after.pods["db-0"], back.after.pinned["data-db-0"]) == ("nvme-1", "nvme-1")
        # --scale-down-delay-after-failure (3m by default) keeps the next loops from retrying.
        cooldown = [t for t in ticks if t_failed < t.at < t_failed + 180.0]
        assert cooldown and all(t.record.decision.scale_down.waiting.startswith("ScaleDownInCooldown")
                                for t in cooldown)
        assert all(not t.after.tainted("nvme-1") for t in cooldown)
        assert _first(history, "Tainted", after=t_failed + step)[0] >= t_failed + 180.0
        # Later attempts fail the same way: every attempt is rolled back, nothing is deleted or lost.
        attempts = [h for h in history if h[1] == "Tainted"]
        failures = [h for h in history if h[1] == "Failed"]
        assert len(attempts) - len(failures) == len(ticks[-1].draining)
        assert world.cluster.node("nvme-1") is not None
        assert all(t.after.pinned["data-db-0"] == "nvme-1" for t in ticks)


# --- story 2: a storage-triggered scale-up waits for the driver (thesis 3.4.5.5) -----------

#: The storage driver starts this long after a node registers (many scan intervals).
DRIVER_START = 300.0


def _storage_bound_world() -> World:
    """db-0 needs a 500Gi local volume; nvme-1 has 100Gi free; the nvme group's template
    carries the max-capacity label (1000Gi), so a new node would hold it."""
    return make_world(rok_class(), nvme_group(), nvme_node("nvme-1", free="100Gi"),
                      statefulset("db", 1, "500Gi"), driver=f"{int(DRIVER_START)}s")


@pytest.mark.parametrize(("flags", "scale_ups", "bound_to"), [
    pytest.param((), [(0.0, "nvme", 1)], "nvme-2", id="storage-aware-one-scale-up-then-waits-for-the-driver"),
    pytest.param(("--max-node-startup-time=3m",), [(0.0, "nvme", 1), (PROVISIONING + 180.0, "nvme", 1)], "nvme-2",
                 id="driver-slower-than-max-node-startup-time-scales-up-again"),
    pytest.param(("--storage-aware=false",), [], None,
                 id="upstream-believes-the-pod-fits-nvme-1-and-never-scales-up"),
])
def test_a_pod_whose_storage_triggers_a_scale_up_waits_for_the_driver_on_the_new_node(
        flags: tuple[str, ...], scale_ups: list[tuple[float, str, int]], bound_to: str | None) -> None:
    """One scale-up, then no second one while the new node is Ready without the driver's
    annotation: it counts as upcoming for up to ``--max-node-startup-time`` (thesis: 15 min),
    after which (slow-driver case) the pod triggers another. Upstream never scales up."""
    world = _storage_bound_world()
    autoscaler, ticks = _drive(world, *flags, minutes=15)
    step = world.scenario.scan_interval
    opts = options(*flags)
    startup = opts.scale_up.max_node_startup_seconds

    # ScaleUp events over the whole run: when, which group, how many nodes.
    assert _scale_events(world, autoscaler, "ScaleUp") == scale_ups
    assert _scale_events(world, autoscaler, "ScaleUpFailed") == []
    if scale_ups:
        first = _tick(ticks, 0.0).record.decision.scale_up
        assert [p.ref for p in first.triggered_by] == ["default/db-0"]
    else:
        # Upstream ignores the capacity annotation: it places db-0 on nvme-1 in its simulation
        # (filter-out-schedulable) in every loop, while the scheduler never can: db-0 stays pending.
        assert all(t.record.decision.scale_up.result == "NotNeeded" for t in ticks)
        assert all([p.ref for p in t.record.decision.scale_up.fits_existing] == ["default/db-0"] for t in ticks)
        assert all(t.after.pods["db-0"] == "" for t in ticks)
        assert list(world.cloud.group("nvme").node_names()) == ["nvme-1"]
        return

    # nvme-2 registers Ready after the provisioning delay, without the driver's annotation.
    registered = PROVISIONING
    assert "nvme-2" not in _tick(ticks, registered - step).seen.nodes
    new = _tick(ticks, registered).seen.nodes["nvme-2"]
    assert new.ready and new.free_local_bytes is None
    waiting = [t for t in ticks if "nvme-2" in t.seen.nodes and t.seen.nodes["nvme-2"].free_local_bytes is None]
    assert [t.at for t in waiting] == [registered + i * step for i in range(int(DRIVER_START / step))]
    within_startup = [t for t in waiting if t.at - registered < startup]
    assert len(within_startup) >= 10, "several loops see the Ready node without the driver"
    for t in within_startup:
        # The node counts as upcoming (its group's template stands for it): db-0 fits there.
        decision = t.record.decision
        assert decision.scale_up.result == "NotNeeded", t.at
        assert [p.ref for p in decision.scale_up.fits_upcoming] == ["default/db-0"], t.at
        assert any("waiting for the storage driver on nvme-2" in w for w in decision.warnings), t.at
        assert t.after.pods["db-0"] == ""
    # The driver starts; the scheduler binds db-0 to the new node and pins its volume there.
    started = registered + DRIVER_START
    at_start = _tick(ticks, started)
    assert at_start.seen.nodes["nvme-2"].free_local_bytes == 500 * GiB, "1000Gi minus db-0's 500Gi"
    assert (at_start.seen.pods["db-0"], at_start.seen.pinned["data-db-0"]) == (bound_to, bound_to)
    assert all(t.after.pods["db-0"] == "" for t in ticks if t.at < started)
    assert ticks[-1].after.pods["db-0"] == bound_to
    assert world.metrics.data_loss_events == []
    group = world.cloud.group("nvme")
    assert group.target_size() == 1 + len(scale_ups)


# --- story 3: a node-deletion failure is rolled back -------------------------------------------

FAILURE_DELAY = 300.0


@pytest.mark.parametrize(("extra", "drained"), [
    pytest.param((), ["rok-system/rok-csi-guard-nvme-2-"], id="empty-node"),
    pytest.param((statefulset("db", 1, "60Gi"),), ["default/db-0", "rok-system/rok-csi-guard-nvme-2-"],
                 id="drained-node-with-a-local-volume"),
])
def test_a_node_deletion_failure_is_rolled_back(extra: tuple[Json, ...], drained: list[str]) -> None:
    # nvme-1 runs a 5-cpu web pod (not underutilized); nvme-2 joins at the start, empty or
    # running db-0 with its volume: the scale-down candidate either way.
    world = make_world(rok_class(), nvme_group(), nvme_node("nvme-1"), deployment("web", 1, cpu="5"),
                       events=[{"at": "0s", "create": [nvme_node("nvme-2"), *extra]}])
    group = world.cloud.group("nvme")
    group.fail_deletes(1, "injected: instance termination quota exceeded")
    autoscaler, ticks = _drive(world, "--scale-down-unneeded-time=2m",
                               f"--scale-down-delay-after-failure={int(FAILURE_DELAY)}s", minutes=12)
    history = _history(world, autoscaler, "nvme-2")

    t0 = _first(history, "Tainted")[0]
    t_failed, _, why = _first(history, "Failed")
    assert why == ("cloud provider refused to delete the node: node group nvme: "
                   "injected: instance termination quota exceeded")
    # Every pod was evicted before the cloud was asked (and refused).
    evicted = [m for at, kind, m in history if kind == "Evicted" and t0 <= at <= t_failed]
    assert len(evicted) == len(drained)
    assert all(m.startswith(prefix) for m, prefix in zip(evicted, drained, strict=True))
    # Rolled back: the taint is removed again, the node and its group's size are as before.
    failed = _tick(ticks, t_failed)
    assert not failed.after.tainted("nvme-2") and not failed.after.nodes["nvme-2"].unschedulable
    assert "nvme-2" not in failed.draining
    assert failed.last_failure == t_failed
    assert set(failed.after.nodes) == {"nvme-1", "nvme-2"} and failed.after.targets == {"nvme": 2}
    world_events = [(e.reason, e.warning) for e in world.cluster.events if e.name == "nvme-2"]
    assert ("ScaleDownFailed", True) in world_events
    # Cooldown: no loop retries before --scale-down-delay-after-failure has passed.
    cooldown = [t for t in ticks if t_failed < t.at < t_failed + FAILURE_DELAY]
    assert cooldown and all(
        t.record.decision.scale_down.waiting
        == "ScaleDownInCooldown: a scale-down failed less than --scale-down-delay-after-failure ago"
        for t in cooldown)
    assert all(not t.after.tainted("nvme-2") and "nvme-2" in t.after.nodes for t in cooldown)
    # Then, with no fault left, the first loop after the cooldown removes the node.
    started = _scale_events(world, autoscaler, "ScaleDownStarted")
    assert [at for at, _, _ in started] == [t0, t_failed + FAILURE_DELAY]
    t_deleted = _first(history, "Deleted", after=t_failed)[0]
    assert t_deleted == t_failed + FAILURE_DELAY + GRACE, "once the evicted guard has terminated"
    assert [kind for _, kind, _ in history].count("Failed") == 1
    assert world.cluster.node("nvme-2") is None
    assert (list(group.node_names()), group.target_size(), group.pending_delete_faults) == (["nvme-1"], 1, 0)
    assert world.metrics.data_loss_events == []
    if extra:
        # db-0 moved to nvme-1 during the first attempt, its volume unpinned and pinned there.
        assert (ticks[-1].after.pods["db-0"], ticks[-1].after.pinned["data-db-0"]) == ("nvme-1", "nvme-1")
        assert (world.metrics.unpins, world.metrics.restores) == (1, 1)


def test_injected_delete_faults_change_nothing_and_run_out() -> None:
    world = make_world(nvme_group(), nvme_node("nvme-1"), nvme_node("nvme-2"))
    group = world.cloud.group("nvme")
    group.fail_deletes(2)
    for _ in range(2):
        with pytest.raises(CloudError, match="node group nvme: injected fault"):
            group.delete_names(["nvme-2"])
        assert (list(group.node_names()), group.target_size()) == (["nvme-1", "nvme-2"], 2)
        assert world.cluster.node("nvme-2") is not None
    assert group.pending_delete_faults == 0
    group.delete_names(["nvme-2"])
    assert (list(group.node_names()), world.cluster.node("nvme-2")) == (["nvme-1"], None)
    with pytest.raises(ValueError, match="must not be negative"):
        group.fail_deletes(-1)

"""Incremental scale-down (``autoscaler/scaledown/reuse.py``): the last pass is kept only while it is valid.

Unit cases: one loop, then a second loop over objects where one input changed (or
none did); the second loop either reuses the recorded pass (the plan carries the
same record) or re-simulates, and its verdicts are those of a fresh plan either way.
The differential test runs the real loop over the shipped scenarios (shortened)
with and without reuse and requires the same decisions in every loop.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from autoscaler.context import build_context
from autoscaler.loop import Autoscaler
from autoscaler.runonce import LoopDecision, run_once
from autoscaler.scaledown.planner import plan_scale_down
from autoscaler.scaledown.types import SIMULATION_TIMED_OUT, ScaleDownMemory
from cloudproviders.snapshot import SnapshotProvider
from emulator.scenario import load_scenario
from emulator.world import World
from kube.model import ClusterObjects, Node, Pod
from tests.autoscaler.scaledown_helpers import group, pod_with, reasons, scaled_cluster, verdicts
from tests.factories import NOW, node, options, pod

SCENARIOS = Path(__file__).resolve().parents[2] / "examples" / "scenarios"
FLAGS = ("--scale-down-unneeded-time=2m",)


def _objects(*, w1_pods: tuple[Pod, ...] | None = None, big: Node | None = None, w1: Node | None = None,
             extra: tuple[Any, ...] = ()) -> ClusterObjects:
    """``w1`` runs one small pod; ``big`` (16 cores, 9 busy) has room for it; ``w2`` is empty."""
    pods = w1_pods if w1_pods is not None else (pod("app", "1", "1Gi", "w1", owner=("ReplicaSet", "rs")),)
    return scaled_cluster(big if big is not None else node("big", "16", "64Gi"), pod("busy", "9", "1Gi", "big"),
                          w1 if w1 is not None else node("w1"), node("w2"), *pods, *extra,
                          group("ng", "big", "w1", "w2"))


def _step(objects: ClusterObjects, memory: ScaleDownMemory, now: float = NOW) -> tuple[LoopDecision, bool]:
    """One loop over ``objects`` remembering ``memory``; returns the decision and whether the pass was reused."""
    provider = SnapshotProvider(objects.node_groups, objects.nodes)
    decision = run_once(objects, provider, options(*FLAGS), now, memory=memory)
    reused = memory.last_pass is not None and decision.scale_down.last_pass is memory.last_pass
    return decision, reused


def _fresh(objects: ClusterObjects, now: float = NOW) -> LoopDecision:
    return _step(objects, ScaleDownMemory(), now)[0]


def _remember(decision: LoopDecision) -> ScaleDownMemory:
    return ScaleDownMemory(unneeded_since=decision.scale_down.unneeded_since,
                           last_pass=decision.scale_down.last_pass)


BASE = _objects()
SAME_POD_COPY = pod("app", "1", "1Gi", "w1", owner=("ReplicaSet", "rs"))

CASES = [
    pytest.param(BASE, True, id="same-objects"),
    pytest.param(_objects(w1_pods=(SAME_POD_COPY,)), True, id="equal-copy-of-a-pod"),
    pytest.param(_objects(w1_pods=(pod("app", "2", "1Gi", "w1", owner=("ReplicaSet", "rs")),)), False,
                 id="changed-pod"),
    pytest.param(_objects(w1_pods=(pod("app", "1", "1Gi", "w1", owner=None),)), False, id="pod-lost-its-owner"),
    pytest.param(_objects(big=node("big", "10", "64Gi")), False, id="destination-shrank"),
    pytest.param(_objects(w1=node("w1", labels={"zone": "b"})), False, id="changed-candidate-node"),
    pytest.param(_objects(extra=(pod("other", "1", "1Gi", "w2", owner=("ReplicaSet", "rs")),)), False,
                 id="new-pod-elsewhere"),
    pytest.param(dataclasses.replace(BASE, pods=[*BASE.pods, pod("pending", "1", "1Gi")]), False,
                 id="new-pending-pod-fitted-onto-a-node-counts-there"),
    pytest.param(dataclasses.replace(BASE, pods=[*BASE.pods, pod("pending", "1", "1Gi", pending=False)]), True,
                 id="pending-pod-the-scheduler-has-not-tried-is-not-simulated"),
    pytest.param(dataclasses.replace(BASE, pods=[*BASE.pods, pod("low", "1", "1Gi", "w2", priority=-100)]), True,
                 id="new-expendable-pod-is-not-simulated"),
]


@pytest.mark.parametrize(("second", "reused"), CASES)
def test_a_pass_is_reused_only_while_its_inputs_are_unchanged(second: ClusterObjects, reused: bool) -> None:
    first, _ = _step(BASE, ScaleDownMemory())
    assert first.scale_down.last_pass is not None
    decision, was_reused = _step(second, _remember(first), NOW + 10)
    assert was_reused is reused
    assert verdicts(decision) == verdicts(_fresh(second, NOW + 10))


def test_a_changed_destination_changes_the_verdict() -> None:
    first, _ = _step(BASE, ScaleDownMemory())
    assert "w1" in first.scale_down.unneeded
    # big and w2 fill up: w1's pod has nowhere to go any more.
    full = _objects(big=node("big", "9", "64Gi"), extra=(pod("fill", "4", "1Gi", "w2"),))
    decision, reused = _step(full, _remember(first), NOW + 10)
    assert not reused
    assert reasons(decision.scale_down).get("w1") == "NoPlaceToMovePods"


def test_a_pending_pod_fitted_onto_a_node_invalidates_the_pass() -> None:
    """Filter-out-schedulable's placements count as running pods: the pass must see them."""
    first, _ = _step(BASE, ScaleDownMemory())
    assert "w2" in first.scale_down.unneeded
    # Only w2 has room for it (big is busy, w1 is small): it is fitted onto w2, so w2 is not empty.
    pending = pod("incoming", "3500m", "1Gi", pending=True)
    second = dataclasses.replace(BASE, pods=[*BASE.pods, pending])
    decision, reused = _step(second, _remember(first), NOW + 10)
    assert not reused
    assert "w2" not in decision.scale_down.removed
    assert verdicts(decision) == verdicts(_fresh(second, NOW + 10))


def test_placements_do_not_leak_into_the_next_loop() -> None:
    """The per-node pod lists are shared with the next loop's context: placements go to copies."""
    pending = pod("incoming", "3500m", "1Gi", pending=True)
    objects = dataclasses.replace(BASE, pods=[*BASE.pods, pending])
    decision, _ = _step(objects, ScaleDownMemory())
    assert decision.context_memo is not None
    index = decision.context_memo.pods
    assert all(p.name != "incoming" for pods in index.by_node.values() for p in pods)


def test_a_pod_turning_long_terminating_invalidates_the_pass() -> None:
    """A pod deleted at NOW with 30 s grace is long-terminating 60 s later (grace + 30 s): the verdict may change."""
    dying = pod_with("dying", "1", "1Gi", "w1", owner=("ReplicaSet", "rs"), deleted=NOW, grace_seconds=30)
    objects = _objects(w1_pods=(dying,))
    first, _ = _step(objects, ScaleDownMemory())
    still, reused = _step(objects, _remember(first), NOW + 50)
    assert reused, "no pod crossed its long-terminating instant"
    later, reused = _step(objects, _remember(still), NOW + 70)
    assert not reused
    assert verdicts(later) == verdicts(_fresh(objects, NOW + 70))


def test_a_timed_out_pass_is_not_kept() -> None:
    """Its verdicts depend on the clock (``--scale-down-simulation-timeout``), not only on its inputs."""
    ticks = iter(range(0, 10**6, 10**4))  # every reading is 10,000 s after the last: past any timeout
    sim = build_context(BASE, SnapshotProvider(BASE.node_groups, BASE.nodes), options(*FLAGS), NOW)
    plan = plan_scale_down(sim, ScaleDownMemory(), steady_state=True, clock=lambda: float(next(ticks)))
    assert SIMULATION_TIMED_OUT in [u.detail for u in plan.unremovable]
    assert plan.last_pass is None


# --- the real loop over the shipped scenarios, with and without reuse ---------------------------------


def _decisions(world: World, loop: Autoscaler, loops: int, step: float) -> tuple[list[tuple[Any, ...]], int]:
    """Every loop's decision (timings left out), and how many loops reused the previous pass."""
    out = []
    reused = 0
    now = world.clock.now
    for _ in range(loops):
        world.advance(now)
        before = loop.memory.last_pass
        d = loop.run_once(now).decision
        reused += before is not None and d.scale_down.last_pass is before
        out.append((d.scale_up, verdicts(d), d.scale_down.unneeded_since, d.nodes, d.warnings))
        now += step
    return out, reused


@pytest.mark.parametrize(("scenario", "minutes", "flags"), [
    pytest.param("storage-scale-down.yaml", 50, ("--storage-aware=true",), id="storage-scale-down"),
    pytest.param("storage-scale-down.yaml", 40, ("--storage-aware=false",), id="storage-scale-down-upstream"),
    pytest.param("storage-scale-up.yaml", 40, ("--storage-aware=true",), id="storage-scale-up"),
    pytest.param("cloud-stockout.yaml", 30, (), id="cloud-stockout"),
    pytest.param("mixed-day.yaml", 250, (), id="mixed-day"),
    pytest.param("mixed-day.yaml", 250, ("--scale-down-mode=cluster-wide",), id="mixed-day-cluster-wide"),
])
def test_reuse_makes_the_same_decisions_as_re_simulating(scenario: str, minutes: int, flags: tuple[str, ...]) -> None:
    loaded = load_scenario(SCENARIOS / scenario)
    opts = options(*FLAGS, *flags)
    loops = int(minutes * 60 // loaded.scan_interval)
    runs = []
    for incremental in (True, False):
        world = World(loaded, opts.storage)
        loop = Autoscaler(world.cluster, world.cloud, opts, sleep=lambda _s: None, incremental=incremental)
        runs.append(_decisions(world, loop, loops, loaded.scan_interval))
    (with_reuse, reused), (without, never) = runs
    assert never == 0
    assert reused > 0, "the scenario never exercised the reuse path"
    for i, (a, b) in enumerate(zip(with_reuse, without, strict=True)):
        assert a == b, f"loop {i + 1} decided differently with reuse"


def test_the_loop_reuses_the_pass_in_a_steady_cluster() -> None:
    """Nothing changes between loops: every loop after the first reuses the first pass."""
    loaded = load_scenario(SCENARIOS / "storage-scale-down.yaml")
    opts = options(*FLAGS, "--storage-aware=true")
    world = World(dataclasses.replace(loaded, events=()), opts.storage)
    loop = Autoscaler(world.cluster, world.cloud, opts, sleep=lambda _s: None)
    now = world.clock.now + 600  # past start-up: the nodes run, the pods are scheduled
    world.advance(now)
    loop.run_once(now)
    first = loop.memory.last_pass
    assert first is not None
    for i in range(1, 4):
        world.advance(now + 10 * i)
        loop.run_once(now + 10 * i)
        assert loop.memory.last_pass is first, f"loop {i + 1} re-simulated an unchanged cluster"


def test_a_pod_list_refilled_in_place_is_seen_as_changed() -> None:
    """A cluster API may hand out the same list object with new contents: what was kept is a copy."""
    objects = _objects()
    memory = ScaleDownMemory()
    provider = SnapshotProvider(objects.node_groups, objects.nodes)
    first = run_once(objects, provider, options(*FLAGS), NOW, memory=memory)
    assert "w1" in first.scale_down.unneeded
    objects.pods[:] = [*objects.pods, pod("more", "7", "1Gi", "big", owner=("ReplicaSet", "rs")),
                       pod("fill", "4", "1Gi", "w2", owner=("ReplicaSet", "rs"))]
    objects.nodes[:] = list(objects.nodes)  # same nodes, same list object
    decision = run_once(objects, provider, options(*FLAGS), NOW + 10, memory=_remember(first),
                        previous=first.context_memo)
    assert decision.scale_down.last_pass is not first.scale_down.last_pass
    assert verdicts(decision) == verdicts(_fresh(objects, NOW + 10))
    assert reasons(decision.scale_down).get("w1") == "NoPlaceToMovePods"

"""Partial replay of the last removal pass (``autoscaler/scaledown/replay.py``): same verdicts as simulating everything.

A generated cluster (local volumes, owners, several groups) runs one loop; then one kind
of change lands on a few nodes and a second loop runs with the first loop's memory. It
replays the leading candidates whose verdicts stand and simulates the rest; its
scale-down must equal a fresh loop's over the changed cluster, removals, destinations
and reasons included. Each case also says whether some candidates must have been
replayed (the change sits late in the node order) or none (it is not a per-node change).
"""

from __future__ import annotations

import dataclasses
import random
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import msgspec.structs
import pytest

from autoscaler.runonce import LoopDecision, run_once
from autoscaler.scaledown.types import ScaleDownMemory
from cloudproviders.snapshot import SnapshotProvider
from kube.load import load_snapshot
from kube.model import ClusterObjects, Resources
from kube.names import StorageNames
from tests.autoscaler.scaledown_helpers import group, pdb, scaled_cluster, verdicts
from tests.factories import NOW, node, options, pod

ROOT = Path(__file__).resolve().parents[2]
#: The replay's premise ("a change late in the node order leaves earlier verdicts standing")
#: is about a candidate order that does not follow the pods: upstream's. Under the
#: disruption-cost order a changed node may move in the order; replay then still decides as
#: a fresh pass (``test_replay_under_disruption_cost_decides_as_a_fresh_pass``).
FLAGS = ("--scale-down-unneeded-time=2m", "--scale-down-order=upstream")
Change = Callable[[ClusterObjects, random.Random], ClusterObjects]


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> ClusterObjects:
    out = tmp_path_factory.mktemp("replay") / "cluster.json"
    subprocess.run([sys.executable, str(ROOT / "tools" / "gen-bench-snapshot"), "120", "20", "0",
                    str(out), "--seed", "3"], check=True, timeout=60, capture_output=True)
    return load_snapshot([str(out)], StorageNames())


def _late_nodes(objects: ClusterObjects, rng: random.Random, count: int = 3) -> list[str]:
    """Nodes from the last fifth of the node order (changes there leave earlier verdicts standing)."""
    names = [n.name for n in objects.nodes]
    return rng.sample(names[-len(names) // 5:], count)


def _resize_pods(objects: ClusterObjects, rng: random.Random) -> ClusterObjects:
    targets = set(_late_nodes(objects, rng))
    pods = [msgspec.structs.replace(p, requests=Resources(p.requests.cpu // 2 + 1, p.requests.memory))
            if p.node_name in targets else p for p in objects.pods]
    return dataclasses.replace(objects, pods=pods)


def _delete_pods(objects: ClusterObjects, rng: random.Random) -> ClusterObjects:
    """One pod less on each of a few nodes (emptying a node would move it to the front: empty ones go first)."""
    targets = set(_late_nodes(objects, rng))
    gone = {next(p.ref for p in objects.pods if p.node_name == name and not p.claims) for name in targets}
    return dataclasses.replace(objects, pods=[p for p in objects.pods if p.ref not in gone])


def _add_pods(objects: ClusterObjects, rng: random.Random) -> ClusterObjects:
    extra = [msgspec.structs.replace(rng.choice([p for p in objects.pods if not p.claims]), name=f"extra-{i}",
                                     node_name=name) for i, name in enumerate(_late_nodes(objects, rng))]
    return dataclasses.replace(objects, pods=[*objects.pods, *extra])


def _relabel_node(objects: ClusterObjects, rng: random.Random) -> ClusterObjects:
    (target,) = _late_nodes(objects, rng, 1)
    nodes = [dataclasses.replace(n, labels={**n.labels, "churn": "1"}) if n.name == target else n
             for n in objects.nodes]
    return dataclasses.replace(objects, nodes=nodes)


def _any_nodes(objects: ClusterObjects, rng: random.Random, count: int = 5) -> set[str]:
    return set(rng.sample([n.name for n in objects.nodes], count))


def _shrink_pods_anywhere(objects: ClusterObjects, rng: random.Random) -> ClusterObjects:
    """Room appears on nodes anywhere in the order: pods moved past them may now land there."""
    targets = _any_nodes(objects, rng)
    pods = [msgspec.structs.replace(p, requests=Resources(p.requests.cpu // 4, p.requests.memory // 4))
            if p.node_name in targets else p for p in objects.pods]
    return dataclasses.replace(objects, pods=pods)


def _grow_pods_anywhere(objects: ClusterObjects, rng: random.Random) -> ClusterObjects:
    """Room shrinks on nodes anywhere in the order: a destination may no longer fit."""
    targets = _any_nodes(objects, rng)
    pods = [msgspec.structs.replace(p, requests=Resources(p.requests.cpu + 300, p.requests.memory + 2**29))
            if p.node_name in targets else p for p in objects.pods]
    return dataclasses.replace(objects, pods=pods)


def _add_pods_anywhere(objects: ClusterObjects, rng: random.Random) -> ClusterObjects:
    extra = [msgspec.structs.replace(rng.choice([p for p in objects.pods if not p.claims]), name=f"any-{i}",
                                     node_name=name) for i, name in enumerate(sorted(_any_nodes(objects, rng)))]
    return dataclasses.replace(objects, pods=[*objects.pods, *extra])


def _early_change(objects: ClusterObjects, rng: random.Random) -> ClusterObjects:
    first = objects.nodes[0].name
    pods = [msgspec.structs.replace(p, requests=Resources(p.requests.cpu + 1, p.requests.memory))
            if p.node_name == first else p for p in objects.pods]
    return dataclasses.replace(objects, pods=pods)


def _new_claim(objects: ClusterObjects, rng: random.Random) -> ClusterObjects:
    claims = dict(objects.claims)
    key, claim = next(iter(claims.items()))
    claims[(key[0], "churn-claim")] = dataclasses.replace(claim, name="churn-claim", volume_name="")
    return dataclasses.replace(objects, claims=claims)


def _decide(objects: ClusterObjects, memory: ScaleDownMemory, now: float,
            flags: tuple[str, ...] = FLAGS) -> LoopDecision:
    provider = SnapshotProvider(objects.node_groups, objects.nodes)
    return run_once(objects, provider, options(*flags), now, memory=memory)



@pytest.mark.parametrize(("change", "replays"), [
    pytest.param(_resize_pods, True, id="pods-shrink-on-late-nodes"),
    pytest.param(_delete_pods, True, id="pods-deleted-on-late-nodes"),
    pytest.param(_add_pods, True, id="pods-added-on-late-nodes"),
    pytest.param(_relabel_node, True, id="late-node-relabelled"),
    pytest.param(_early_change, None, id="first-node-changed"),
    pytest.param(_shrink_pods_anywhere, None, id="room-appears-anywhere"),
    pytest.param(_grow_pods_anywhere, None, id="room-shrinks-anywhere"),
    pytest.param(_add_pods_anywhere, None, id="pods-added-anywhere"),
    pytest.param(_new_claim, False, id="a-claim-appeared-not-per-node"),
])
@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_replay_decides_as_a_fresh_pass(generated: ClusterObjects, change: Change, replays: bool | None,
                                        seed: int) -> None:
    first = _decide(generated, ScaleDownMemory(), NOW)
    record = first.scale_down.last_pass
    assert record is not None and record.steps is not None and first.scale_down.unneeded
    changed = change(generated, random.Random(seed))
    memory = ScaleDownMemory(unneeded_since=first.scale_down.unneeded_since, last_pass=record)
    second = _decide(changed, memory, NOW + 10)
    fresh = _decide(changed, ScaleDownMemory(unneeded_since=first.scale_down.unneeded_since), NOW + 10)
    assert verdicts(second) == verdicts(fresh)
    kept = second.scale_down.last_pass
    assert kept is not None and kept is not record
    if replays is True:
        assert kept.replayed > 0, "a change late in the node order should leave earlier verdicts standing"
    elif replays is False:
        assert kept.replayed == 0
    reference = fresh.scale_down.last_pass
    assert kept.steps is not None and reference is not None and reference.steps is not None
    assert [s.verdict for s in kept.steps] == [s.verdict for s in reference.steps]


@pytest.mark.parametrize("change", [_resize_pods, _delete_pods, _add_pods, _relabel_node, _early_change,
                                    _add_pods_anywhere, _new_claim])
def test_replay_under_disruption_cost_decides_as_a_fresh_pass(generated: ClusterObjects, change: Change) -> None:
    flags = ("--scale-down-unneeded-time=2m", "--scale-down-order=disruption-cost")
    first = _decide(generated, ScaleDownMemory(), NOW, flags)
    changed = change(generated, random.Random(7))
    memory = ScaleDownMemory(unneeded_since=first.scale_down.unneeded_since, last_pass=first.scale_down.last_pass)
    second = _decide(changed, memory, NOW + 10, flags)
    fresh = _decide(changed, ScaleDownMemory(unneeded_since=first.scale_down.unneeded_since), NOW + 10, flags)
    assert verdicts(second) == verdicts(fresh)


# --- a verdict of "no place to move pod", confirmed or overturned ---------------------------------

def _no_place_cluster(busy_pod_cpu: str) -> ClusterObjects:
    """``a-big`` (16 cores) runs a 7-core pod no other node can take while ``m-busy`` is busy;
    ``c1`` and ``c2`` run small pods that fit ``z-room``. ``m-busy`` comes between them in the node order."""
    rs = ("ReplicaSet", "rs")
    return scaled_cluster(
        node("a-big", "16", "64Gi"), pod("wide", "7", "1Gi", "a-big", owner=rs),
        node("c1", "4", "8Gi"), pod("small-1", "1", "1Gi", "c1", owner=rs),
        node("c2", "4", "8Gi"), pod("small-2", "1", "1Gi", "c2", owner=rs),
        node("m-busy", "16", "64Gi"), pod("hog", busy_pod_cpu, "1Gi", "m-busy", owner=rs),
        node("z-room", "8", "32Gi"), pod("resident", "5", "1Gi", "z-room", owner=rs),
        group("ng", "a-big", "c1", "c2", "m-busy", "z-room"),
    )


@pytest.mark.parametrize(("busy_after", "stands"), [
    pytest.param("14", True, id="still-no-room-the-verdict-stands"),
    pytest.param("1", False, id="room-appears-the-pod-now-fits"),
])
def test_a_failed_drain_is_confirmed_against_the_changed_nodes(busy_after: str, stands: bool) -> None:
    before = _no_place_cluster("15")
    first = _decide(before, ScaleDownMemory(), NOW)
    record = first.scale_down.last_pass
    assert record is not None and record.steps is not None
    assert record.steps[0].candidate[0] == "a-big" and record.steps[0].failed == 0
    after = _no_place_cluster(busy_after)
    memory = ScaleDownMemory(unneeded_since=first.scale_down.unneeded_since, last_pass=record)
    second = _decide(after, memory, NOW + 10)
    fresh = _decide(after, ScaleDownMemory(unneeded_since=first.scale_down.unneeded_since), NOW + 10)
    assert verdicts(second) == verdicts(fresh)
    kept = second.scale_down.last_pass
    assert kept is not None and kept.steps is not None
    assert ("a-big" in second.scale_down.unneeded) is not stands
    if stands:
        assert kept.replayed >= 1, "the failed drain was confirmed, not simulated again"


# --- a pod updated on a candidate's own node: simulated again, and the walk goes on or ends -------------

def _pdb_cluster(web_labels: dict[str, str]) -> ClusterObjects:
    """Candidates c1..c3 each run one pod; a PDB allows one disruption of ``app=web`` pods.

    ``c1``'s pod is ``web`` or not (its labels); ``c2``'s pod is always ``web``. When ``c1``'s pod
    spends the budget, ``c2`` cannot be drained in the same pass.
    """
    rs = ("ReplicaSet", "rs")
    return scaled_cluster(
        node("c1", "4", "8Gi"), pod("one", "1", "1Gi", "c1", owner=rs, labels=web_labels),
        node("c2", "4", "8Gi"), pod("two", "1", "1Gi", "c2", owner=rs, labels={"app": "web"}),
        node("c3", "4", "8Gi"), pod("three", "1", "1Gi", "c3", owner=rs),
        node("z-room", "16", "64Gi"), pod("resident", "9", "1Gi", "z-room", owner=rs),
        group("ng", "c1", "c2", "c3", "z-room"),
        pdbs=[pdb("web", {"app": "web"}, 1)],
    )


@pytest.mark.parametrize(("before", "after", "goes_on"), [
    pytest.param({"app": "web", "v": "1"}, {"app": "web", "v": "2"}, True, id="same-pdbs-the-walk-goes-on"),
    pytest.param({"app": "web"}, {"app": "api"}, False, id="left-the-pdb-the-walk-ends"),
    pytest.param({"app": "api"}, {"app": "web"}, False, id="joined-the-pdb-the-walk-ends"),
])
def test_a_pod_updated_on_a_candidate(before: dict[str, str], after: dict[str, str], goes_on: bool) -> None:
    first = _decide(_pdb_cluster(before), ScaleDownMemory(), NOW)
    record = first.scale_down.last_pass
    assert record is not None and record.steps is not None
    changed = _pdb_cluster(after)
    memory = ScaleDownMemory(unneeded_since=first.scale_down.unneeded_since, last_pass=record)
    second = _decide(changed, memory, NOW + 10)
    fresh = _decide(changed, ScaleDownMemory(unneeded_since=first.scale_down.unneeded_since), NOW + 10)
    assert verdicts(second) == verdicts(fresh)
    kept = second.scale_down.last_pass
    assert kept is not None
    assert (kept.replayed > 0) is goes_on

"""What one loop's context keeps for the next (``autoscaler/context.py``): kept only while its inputs are the same.

Each case builds a context, then a second one over objects where one input changed
(or none did) with the first one's memo, and checks what was reused and that every
derived value equals a context built from nothing.
"""

from __future__ import annotations

import dataclasses

import pytest

from autoscaler.context import LoopContext, build_context, index_pods
from cloudproviders.snapshot import SnapshotProvider
from kube.model import ClusterObjects
from tests.autoscaler.scaledown_helpers import group, pod_with, scaled_cluster
from tests.factories import NOW, node, options, pod, pv, pvc, storage_class

OPTIONS = options("--storage-aware=true")


def _objects(w1_cpu: str = "1", w2_labels: dict[str, str] | None = None, pv_size: str = "50Gi") -> ClusterObjects:
    return scaled_cluster(
        node("w1"), node("w2", labels=w2_labels or {}), pod("a", w1_cpu, "1Gi", "w1"), pod("b", "1", "1Gi", "w2"),
        pod("pending", "1", "1Gi"), group("ng", "w1", "w2"),
        storage_class("local-disk", "kubernetes.io/no-provisioner"),
        pvc("logs", pv_size, "local-disk", volume="pv-logs"),
        pv("pv-logs", pv_size, "local-disk", hosts=["w1"], claim=("default", "logs"), driver="local"),
    )


def _context(objects: ClusterObjects, previous: LoopContext | None = None, now: float = NOW) -> LoopContext:
    provider = SnapshotProvider(objects.node_groups, objects.nodes)
    memo = previous.memo() if previous is not None else None
    return build_context(objects, provider, OPTIONS, now, previous=memo)


def _derived(sim: LoopContext) -> tuple[object, ...]:
    snap = sim.snapshot
    n = snap.count
    return (sim.pods_by_node, sim.orphans, [s.node.name for s in sim.state.nodes],
            [sim.utilization(s) for s in sim.state.nodes], sim.pinned_local_volumes(),
            snap.free_cpu[:n].tolist(), snap.free_memory[:n].tolist(), snap.free_pods[:n].tolist(),
            [list(p) for p in snap.pods_on])


BASE = _objects()


@pytest.mark.parametrize(("second", "pods_kept", "pinned_kept"), [
    pytest.param(BASE, True, True, id="same-objects"),
    pytest.param(dataclasses.replace(BASE, pods=list(BASE.pods)), True, True, id="same-pods-new-list"),
    # Rebuilt objects: the pods differ, the volumes and nodes are equal copies (kept by ``==``).
    pytest.param(_objects(w1_cpu="2"), False, True, id="changed-pod-equal-copies"),
    pytest.param(dataclasses.replace(BASE, nodes=[BASE.nodes[0], node("w2", labels={"zone": "b"})]), True, False,
                 id="changed-node"),
    pytest.param(dataclasses.replace(BASE, volumes=_objects(pv_size="60Gi").volumes), True, False,
                 id="changed-volume"),
])
def test_the_memo_is_used_only_for_unchanged_inputs(second: ClusterObjects, pods_kept: bool,
                                                    pinned_kept: bool) -> None:
    first = _context(BASE)
    _derived(first)
    again = _context(second, first)
    assert (again.pod_index is first.pod_index) is pods_kept
    assert (again.pinned_local_volumes() is first.pinned_local_volumes()) is pinned_kept
    assert _derived(again) == _derived(_context(second))


def test_utilization_is_kept_per_unchanged_node() -> None:
    first = _context(BASE)
    _derived(first)
    changed = dataclasses.replace(BASE, nodes=[BASE.nodes[0], node("w2", "8", "16Gi")])
    again = _context(changed, first)
    w1, w2 = again.state.nodes
    assert again.utilization(w1) is first.utilization(first.state.nodes[0])
    assert again.utilization(w2) != first.utilization(first.state.nodes[1])


def test_a_node_with_a_pod_being_deleted_is_not_kept() -> None:
    """Its utilization reads the clock (a long-terminating pod stops counting)."""
    dying = pod_with("dying", "3", "1Gi", "w1", deleted=NOW, grace_seconds=30)
    objects = dataclasses.replace(BASE, pods=[*BASE.pods, dying])
    first = _context(objects)
    _derived(first)
    later = _context(objects, first, NOW + 120)
    assert later.utilization(later.state.nodes[0]) != first.utilization(first.state.nodes[0])
    assert _derived(later) == _derived(_context(objects, now=NOW + 120))


def test_pods_are_regrouped_when_the_cutoff_changes() -> None:
    index = index_pods(BASE.pods, -10)
    memo = _context(BASE).memo()
    assert index_pods(list(BASE.pods), -10, memo.pods if memo is not None else None) is not index
    assert index_pods(BASE.pods, 0).scheduled == index.scheduled

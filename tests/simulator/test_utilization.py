"""Node utilization as scale-down measures it: CPU and memory as upstream, plus storage.

Upstream ``utilization.Calculate``: requests over allocatable; with
``--ignore-daemonsets-utilization`` / ``--ignore-mirror-pods-utilization`` those pods
leave both sides; pods deleted longer ago than grace + 30 s do not count. Storage
(storage-semantics 3.1): ``(max - free) / max`` from the label and the annotation.
"""

from __future__ import annotations

import pytest

from kube.model import Node, Pod
from simulator.utilization import Utilization, is_long_terminating, node_utilization, storage_utilization
from tests.autoscaler.scaledown_helpers import mirror_pod, pod_with
from tests.factories import NOW, node, pod

# One node for the CPU/memory table: 4 cores, 8Gi.
W1 = node("w1", "4", "8Gi")


def _ds(name: str, cpu: str, memory: str) -> Pod:
    return pod(name, cpu, memory, "w1", owner=("DaemonSet", "ds"))


@pytest.mark.parametrize(
    ("pods", "flags", "cpu", "memory"),
    [
        pytest.param([], {}, 0.0, 0.0, id="empty-node"),
        pytest.param([pod("a", "1", "2Gi", "w1")], {}, 0.25, 0.25, id="one-pod"),
        pytest.param([pod("a", "1", "1Gi", "w1"), pod("b", "2", "1Gi", "w1")], {}, 0.75, 0.25,
                     id="requests-add-up"),
        pytest.param([pod("a", None, None, "w1")], {}, 0.0, 0.0, id="best-effort-pod-counts-nothing"),
        pytest.param([pod("a", "1", "2Gi", "w1"), _ds("ds", "1", "2Gi")], {}, 0.5, 0.5,
                     id="daemonset-counted-by-default"),
        # (1 core) / (4 - 1 cores); (2Gi) / (8Gi - 2Gi)
        pytest.param([pod("a", "1", "2Gi", "w1"), _ds("ds", "1", "2Gi")], {"ignore_daemonsets": True},
                     1 / 3, 2 / 6, id="daemonset-ignored-leaves-both-sides"),
        pytest.param([pod("a", "1", "2Gi", "w1"), _ds("ds", "1", "2Gi")], {"ignore_mirror": True},
                     0.5, 0.5, id="mirror-flag-does-not-ignore-daemonsets"),
        pytest.param([pod("a", "1", "2Gi", "w1"), mirror_pod("m", "2", "4Gi", "w1")], {}, 0.75, 0.75,
                     id="mirror-counted-by-default"),
        pytest.param([pod("a", "1", "2Gi", "w1"), mirror_pod("m", "2", "4Gi", "w1")], {"ignore_mirror": True},
                     0.5, 0.5, id="mirror-ignored-leaves-both-sides"),
        pytest.param([pod("a", "1", "2Gi", "w1"), mirror_pod("m", "2", "4Gi", "w1")],
                     {"ignore_daemonsets": True}, 0.75, 0.75, id="daemonset-flag-does-not-ignore-mirrors"),
        pytest.param([pod("a", "1", "1Gi", "w1"), _ds("ds", "1", "1Gi"), mirror_pod("m", "1", "2Gi", "w1")],
                     {"ignore_daemonsets": True, "ignore_mirror": True}, 0.5, 0.2, id="both-ignored"),
        # grace 30 s + 30 s slack: deleted 61 s ago is stuck, 59 s ago is still shutting down.
        pytest.param([pod("a", "1", "2Gi", "w1"), pod_with("gone", "2", "4Gi", "w1", deleted=NOW - 61)], {},
                     0.25, 0.25, id="long-terminating-pod-skipped"),
        pytest.param([pod("a", "1", "2Gi", "w1"), pod_with("going", "2", "4Gi", "w1", deleted=NOW - 59)], {},
                     0.75, 0.75, id="recently-deleted-pod-counted"),
        pytest.param([pod_with("slow", "2", "4Gi", "w1", deleted=NOW - 100, grace_seconds=120)], {},
                     0.5, 0.5, id="long-grace-period-still-counted"),
        # Upstream takes an ignored DaemonSet pod out of allocatable even when it is terminating.
        pytest.param([pod("a", "1", "2Gi", "w1"),
                      pod_with("ds-gone", "1", "2Gi", "w1", owner=("DaemonSet", "ds"), deleted=NOW - 600)],
                     {"ignore_daemonsets": True}, 1 / 3, 2 / 6, id="ignored-terminating-daemonset-leaves-allocatable"),
    ],
)
def test_cpu_and_memory(pods: list[Pod], flags: dict[str, bool], cpu: float, memory: float) -> None:
    util = node_utilization(W1, pods, NOW, **flags)
    assert util.cpu == pytest.approx(cpu)
    assert util.memory == pytest.approx(memory)


@pytest.mark.parametrize(
    ("subject", "pods"),
    [
        pytest.param(node("w1", "0", "0"), [], id="zero-allocatable"),
        pytest.param(node("w1", "0", "0"), [pod("a", "1", "1Gi", "w1")], id="zero-allocatable-with-pods"),
        pytest.param(node("w1", "1", "1Gi"), [_ds("ds", "1", "1Gi")], id="all-allocatable-ignored"),
    ],
)
def test_nothing_to_divide_by_counts_as_unused(subject: Node, pods: list[Pod]) -> None:
    util = node_utilization(subject, pods, NOW, ignore_daemonsets=True)
    assert (util.cpu, util.memory) == (0.0, 0.0)


@pytest.mark.parametrize(
    ("util", "resource", "value"),
    [
        pytest.param(Utilization(0.7, 0.2, None), "cpu", 0.7, id="cpu-dominates"),
        pytest.param(Utilization(0.2, 0.7, None), "memory", 0.7, id="memory-dominates"),
        pytest.param(Utilization(0.4, 0.4, None), "memory", 0.4, id="tie-is-memory"),
    ],
)
def test_deciding_dimension(util: Utilization, resource: str, value: float) -> None:
    assert (util.resource, util.value) == (resource, value)


@pytest.mark.parametrize(
    ("subject", "storage_aware", "expected"),
    [
        pytest.param(node("w1", storage_max="400Gi", storage_free="100Gi"), True, 0.75, id="three-quarters-used"),
        pytest.param(node("w1", storage_max="400Gi", storage_free="400Gi"), True, 0.0, id="all-free"),
        pytest.param(node("w1", storage_max="400Gi", storage_free="0"), True, 1.0, id="full"),
        pytest.param(node("w1", storage_max="400Gi", storage_free="500Gi"), True, 0.0,
                     id="free-above-max-clamped"),
        pytest.param(node("w1", storage_free="100Gi"), True, None, id="no-max-capacity-label"),
        pytest.param(node("w1", storage_max="400Gi"), True, None, id="no-capacity-annotation"),
        pytest.param(node("w1"), True, None, id="neither"),
        pytest.param(node("w1", storage_max="0", storage_free="0"), True, None, id="zero-max"),
        pytest.param(node("w1", storage_max="400Gi", storage_free="100Gi"), False, None, id="not-storage-aware"),
    ],
)
def test_storage(subject: Node, storage_aware: bool, expected: float | None) -> None:
    util = node_utilization(subject, [pod("a", "1", "1Gi", "w1")], NOW, storage_aware=storage_aware)
    assert util.storage == (pytest.approx(expected) if expected is not None else None)
    if storage_aware:
        assert storage_utilization(subject) == util.storage


def test_storage_does_not_change_cpu_or_memory() -> None:
    plain = node_utilization(node("w1"), [pod("a", "1", "2Gi", "w1")], NOW)
    with_disk = node_utilization(node("w1", storage_max="400Gi", storage_free="1Gi"), [pod("a", "1", "2Gi", "w1")],
                                 NOW)
    assert (plain.cpu, plain.memory) == (with_disk.cpu, with_disk.memory)
    assert with_disk.value == 0.25  # storage never enters max(cpu, memory)


@pytest.mark.parametrize(
    ("subject", "expected"),
    [
        pytest.param(pod("a", node="w1"), False, id="not-deleted"),
        pytest.param(pod_with("a", node="w1", deleted=NOW - 60), False, id="exactly-grace-plus-slack"),
        pytest.param(pod_with("a", node="w1", deleted=NOW - 61), True, id="past-grace-plus-slack"),
        pytest.param(pod_with("a", node="w1", deleted=NOW - 61, grace_seconds=600), False, id="long-grace"),
    ],
)
def test_long_terminating(subject: Pod, expected: bool) -> None:
    assert is_long_terminating(subject, NOW) is expected

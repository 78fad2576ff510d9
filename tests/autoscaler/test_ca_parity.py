"""Upstream CA parity of one loop (issue 8, items 1 and 10-15), through ``plan``.

Each case is a small cluster and the steady-state decision CA would take on it:
filter-out-schedulable's placements survive into scale-down, the utilization
threshold is ``>``, DaemonSet pods by annotation, DaemonSet owners that must exist,
the system-pod disruption timeout, a zero grace period, and balanced scale-ups sized
by the room of every similar group.
"""

from __future__ import annotations

from typing import Any

import pytest

from autoscaler.scaleup.balancing import split_between
from kube.model import ClusterObjects
from tests.autoscaler.scaledown_helpers import (
    controller,
    group,
    pod_with,
    reasons,
    scaled_cluster,
)
from tests.factories import NOW, node, plan, pod, template

DS_ANNOTATION = {"cluster-autoscaler.kubernetes.io/daemonset-pod": "true"}


def verdict(objects: ClusterObjects, *flags: str) -> dict[str, str]:
    """node -> "removed", "unneeded" or its unremovable reason."""
    down = plan(objects, *flags).scale_down
    out = reasons(down)
    out.update(dict.fromkeys(down.unneeded, "unneeded"))
    out.update(dict.fromkeys(down.removed, "removed"))
    return out


# --- item 1: filter-out-schedulable's placements are kept for scale-down --------------------------------


@pytest.mark.parametrize(("objects", "expected"), [
    pytest.param(scaled_cluster(node("w1"), group("g", "w1"), pod("web", "1", "1Gi")),
                 {"w1": "NoPlaceToMovePods"}, id="only-node-keeps-the-pod-fitted-onto-it"),
    pytest.param(scaled_cluster(node("w1"), node("w2"), group("g", "w1", "w2"), pod("web", "1", "1Gi")),
                 {"w1": "NoPlaceToMovePods", "w2": "removed"}, id="the-other-empty-node-goes"),
    pytest.param(scaled_cluster(node("w1"), node("w2"), group("g", "w1", "w2"), pod("web", "3", "1Gi"),
                                pod("big", "3", "1Gi", "w2")),
                 {"w1": "NotUnderutilized", "w2": "NotUnderutilized"}, id="placement-counts-in-utilization"),
    pytest.param(scaled_cluster(node("w1"), node("w2"), group("g", "w1", "w2"), pod("web", "1", "1Gi", owner=None)),
                 {"w1": "BlockedByPod", "w2": "removed"}, id="placed-pod-goes-through-the-drain-rules"),
])
def test_pending_pods_placed_on_existing_nodes_stay_there(objects: ClusterObjects, expected: dict[str, str]) -> None:
    decision = plan(objects)
    assert decision.scale_up.result == "NotNeeded"
    assert verdict(objects) == expected


# --- item 10: the utilization threshold -------------------------------------------------------------------


@pytest.mark.parametrize(("objects", "flags", "expected"), [
    pytest.param(scaled_cluster(node("w1"), node("w2", "8"), group("g", "w1", "w2"), pod("a", "2", "1Gi", "w1"),
                                pod("busy", "5", "1Gi", "w2")),
                 (), "removed", id="exactly-at-threshold-is-a-candidate"),
    pytest.param(scaled_cluster(node("w1"), node("w2", "8"), group("g", "w1", "w2"), pod("a", "2001m", "1Gi", "w1"),
                                pod("busy", "5", "1Gi", "w2")),
                 (), "NotUnderutilized", id="just-above"),
    pytest.param(scaled_cluster(node("w1"), node("w2"), group("g", "w1", "w2"),
                                pod("ds", "1", "1Gi", "w1", owner=("DaemonSet", "agent"))),
                 ("--scale-down-utilization-threshold=0", "--ignore-daemonsets-utilization=true"), "removed",
                 id="threshold-zero-only-daemonset-pods"),
    pytest.param(scaled_cluster(node("w1"), node("w2"), group("g", "w1", "w2"),
                                pod("ds", "1", "1Gi", "w1", owner=("DaemonSet", "agent"))),
                 ("--scale-down-utilization-threshold=0",), "NotUnderutilized",
                 id="threshold-zero-daemonset-pods-counted"),
    pytest.param(scaled_cluster(node("w1", cpu="0"), node("w2"), group("g", "w1", "w2")), (), "UnexpectedError",
                 id="no-allocatable-cpu"),
])
def test_utilization_threshold(objects: ClusterObjects, flags: tuple[str, ...], expected: str) -> None:
    assert verdict(objects, *flags)["w1"] == expected


# --- items 11, 12, 13, 14: drain rules -----------------------------------------------------------------


def _one_pod(subject: Any, *, owners: bool = True, extra: tuple[Any, ...] = ()) -> ClusterObjects:
    """``subject`` on w1; w2 is busy (kept) but has room for w1's pods."""
    busy = pod("busy", "5", "1Gi", "w2", owner=("ReplicaSet", "busy"))
    extra = (*extra, controller("busy")) if not owners else extra
    return scaled_cluster(node("w1"), node("w2", "8"), group("g", "w1", "w2"), subject, busy, *extra, owners=owners)


HOUR = 3600.0

DRAIN_CASES = [
    pytest.param(_one_pod(pod_with("agent", node="w1", owner=None, annotations=DS_ANNOTATION)), (), "removed",
                 id="daemonset-pod-by-annotation-is-not-moved"),
    pytest.param(_one_pod(pod_with("agent", node="w1", owner=None)), (), "BlockedByPod",
                 id="same-pod-without-annotation-is-not-replicated"),
    pytest.param(_one_pod(pod_with("agent", "3", node="w1", owner=None, annotations=DS_ANNOTATION)),
                 ("--ignore-daemonsets-utilization=true", "--scale-down-utilization-threshold=0"), "removed",
                 id="annotated-pod-left-out-of-utilization"),
    pytest.param(_one_pod(pod("agent", "1", "1Gi", "w1", owner=("DaemonSet", "gone")), owners=False), (),
                 "BlockedByPod", id="daemonset-owner-missing"),
    pytest.param(_one_pod(pod("agent", "1", "1Gi", "w1", owner=("DaemonSet", "gone")), owners=False),
                 ("--skip-nodes-with-custom-controller-pods=false",), "removed",
                 id="daemonset-owner-not-checked-without-the-flag"),
    pytest.param(_one_pod(pod("agent", "1", "1Gi", "w1", owner=("DaemonSet", "agent")),
                          extra=(controller("agent", "DaemonSet"),)), (), "removed", id="daemonset-owner-present"),
    pytest.param(_one_pod(pod_with("dns", node="w1", namespace="kube-system", created=NOW - 2 * HOUR)), (),
                 "removed", id="system-pod-older-than-the-timeout"),
    pytest.param(_one_pod(pod_with("dns", node="w1", namespace="kube-system", created=NOW - 0.5 * HOUR)), (),
                 "BlockedByPod", id="young-system-pod-blocks"),
    pytest.param(_one_pod(pod_with("dns", node="w1", namespace="kube-system", created=NOW - 0.5 * HOUR)),
                 ("--blocking-system-pod-distruption-timeout=10m",), "removed", id="shorter-timeout"),
    pytest.param(_one_pod(pod_with("dns", node="w1", namespace="kube-system")), (), "BlockedByPod",
                 id="system-pod-without-creation-time-blocks"),
    pytest.param(_one_pod(pod_with("dns", node="w1", namespace="kube-system", created=NOW - 2 * HOUR)),
                 ("--skip-nodes-with-system-pods=false",), "removed", id="system-rule-off"),
    pytest.param(_one_pod(pod_with("stuck", node="w1", owner=None, deleted=NOW - 40, grace_seconds=0)), (),
                 "removed", id="grace-zero-is-long-terminating-after-30s"),
    pytest.param(_one_pod(pod_with("stuck", node="w1", owner=None, deleted=NOW - 40)), (), "BlockedByPod",
                 id="absent-grace-is-30s"),
    pytest.param(_one_pod(pod_with("p", node="w1", owner=None, annotations={
        "cluster-autoscaler.kubernetes.io/safe-to-evict": "True"})), (), "BlockedByPod",
                 id="safe-to-evict-is-case-sensitive"),
    pytest.param(_one_pod(pod_with("p", node="w1", annotations={
        "cluster-autoscaler.kubernetes.io/safe-to-evict": "on-completion"})), (), "BlockedByOnCompletionPod",
                 id="on-completion-is-not-not-safe-to-evict"),
    pytest.param(_one_pod(pod_with("p", node="w1", volumes=[{"name": "data", "emptyDir": {}}], annotations={
        "cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes": "cache, data"})), (), "BlockedByPod",
                 id="local-volume-list-is-split-on-commas-only"),
]


@pytest.mark.parametrize(("objects", "flags", "expected"), DRAIN_CASES)
def test_drain_parity(objects: ClusterObjects, flags: tuple[str, ...], expected: str) -> None:
    assert verdict(objects, *flags)["w1"] == expected


def test_blocking_reasons_name_upstreams() -> None:
    objects = _one_pod(pod("agent", "1", "1Gi", "w1", owner=("DaemonSet", "gone")), owners=False)
    down = plan(objects).scale_down
    assert "ControllerNotFound" in next(u.detail for u in down.unremovable if u.node == "w1")


# --- item 15: balancing similar node groups ---------------------------------------------------------------


def _similar_groups(max_a: int, max_b: int, pending: int) -> ClusterObjects:
    pods = [pod(f"p{i}", "3", "1Gi") for i in range(pending)]
    return scaled_cluster(
        node("a-1", labels={"pool": "x"}), node("b-1", labels={"pool": "x"}),
        pod("busy-a", "3", "1Gi", "a-1"), pod("busy-b", "3", "1Gi", "b-1"),
        group("a", "a-1", max_size=max_a, template=template(labels={"pool": "x"})),
        group("b", "b-1", max_size=max_b, template=template(labels={"pool": "x"})),
        *pods,
    )


@pytest.mark.parametrize(("max_a", "max_b", "pending", "expected"), [
    pytest.param(2, 5, 6, {"a": 1, "b": 4}, id="estimate-limited-by-all-similar-groups-room"),
    pytest.param(5, 5, 4, {"a": 2, "b": 2}, id="even-split"),
    pytest.param(10, 10, 3, {"a": 2, "b": 1}, id="odd-split"),
])
def test_balanced_scale_up(max_a: int, max_b: int, pending: int, expected: dict[str, int]) -> None:
    up = plan(_similar_groups(max_a, max_b, pending), "--balance-similar-node-groups=true").scale_up
    assert up.result == "ScaledUp"
    assert {i.group: i.delta for i in up.increases} == expected or (
        sum(i.delta for i in up.increases) == sum(expected.values())
        and sorted(i.delta for i in up.increases) == sorted(expected.values()))


@pytest.mark.parametrize(("groups", "delta", "expected"), [
    pytest.param({"a": (1, 2), "b": (1, 5)}, 6, {"a": 1, "b": 4}, id="capped-by-room"),
    pytest.param({"b": (1, 9), "a": (1, 9)}, 3, {"b": 2, "a": 1}, id="ties-favour-the-chosen-group"),
    pytest.param({"a": (3, 9), "b": (1, 9)}, 3, {"a": 0, "b": 3}, id="smallest-first"),
    pytest.param({"a": (2, 9), "b": (1, 9), "c": (0, 9)}, 4, {"a": 0, "b": 1, "c": 3}, id="three-groups"),
    pytest.param({"a": (9, 9), "b": (1, 9)}, 2, {"a": 0, "b": 2}, id="full-group-skipped"),
])
def test_split_between(groups: dict[str, tuple[int, int]], delta: int, expected: dict[str, int]) -> None:
    assert split_between(groups, delta) == expected


@pytest.mark.parametrize(("value", "expected"), [
    pytest.param("true", "ScaleDownDisabledAnnotation", id="true"),
    pytest.param("True", "removed", id="compared-exactly"),
])
def test_scale_down_disabled_annotation(value: str, expected: str) -> None:
    annotated = node("w1", annotations={"cluster-autoscaler.kubernetes.io/scale-down-disabled": value})
    objects = scaled_cluster(annotated, node("w2", "8"), group("g", "w1", "w2"), pod("busy", "5", "1Gi", "w2"))
    assert verdict(objects)["w1"] == expected


def test_similar_groups_ignore_pod_counts() -> None:
    """Upstream's free resources carry no pod count: DaemonSet pods on one template only do not split them."""
    objects = _similar_groups(5, 5, 4)
    objects.pods.extend(pod(f"ds{i}", None, None, "a-1", owner=("DaemonSet", "agent")) for i in range(8))
    objects.controllers[("DaemonSet", "default", "agent")] = controller("agent", "DaemonSet")
    up = plan(objects, "--balance-similar-node-groups=true").scale_up
    assert sorted(i.delta for i in up.increases) == [2, 2]


@pytest.mark.parametrize(("gpu_request", "cpu", "expected"), [
    pytest.param("1", "100m", "removed", id="half-the-gpus-is-at-threshold"),
    pytest.param("2", "100m", "NotUnderutilized", id="all-gpus-used"),
    pytest.param("0", "3", "removed", id="gpu-node-judged-by-gpu-alone"),
])
def test_gpu_nodes_are_judged_by_gpu_use(gpu_request: str, cpu: str, expected: str) -> None:
    gpu_node = node("w1", extended={"nvidia.com/gpu": "2"})
    busy_gpu_node = node("w2", "8", extended={"nvidia.com/gpu": "4"})
    objects = scaled_cluster(gpu_node, busy_gpu_node, group("g", "w1", "w2"),
                             pod("train", cpu, "1Gi", "w1", extended={"nvidia.com/gpu": gpu_request}),
                             pod("busy", "5", "1Gi", "w2", extended={"nvidia.com/gpu": "3"}))
    assert verdict(objects)["w1"] == expected

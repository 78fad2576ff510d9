"""Per-group autoscaling options win over the flags wherever upstream reads them per group.

Upstream: eligibility reads the group's utilization thresholds and
``ignoredaemonsetsutilization`` (``pkg/core/scaledown/eligibility/eligibility.go``), the
unneeded-node tracker its unneeded and unready times (``pkg/core/scaledown/unneeded/nodes.go``),
clusterstate its max provision time. Here the groups are ``plan``'s ``NodeGroup`` objects
with ``spec.autoscalingOptions``, the form every provider's tags are read into.
"""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from autoscaler.groupconfig import GroupConfig, group_config
from cloudproviders.snapshot import SnapshotNodeGroup
from kube.convert.errors import FieldError
from kube.model import ClusterObjects, Node, Pod
from tests.autoscaler.scaledown_helpers import Remembered, group, loop, reasons, scale_down, scaled_cluster
from tests.factories import NOW, node, node_group, options, pod

MINUTE = 60.0
GPU = {"nvidia.com/gpu": "2"}


def _candidate(w1: Node, pods: tuple[Pod, ...], opts: Mapping[str, object] | None) -> ClusterObjects:
    """``big`` (busy, room for w1's pods) and the candidate ``w1`` in one group with ``opts``."""
    return scaled_cluster(node("big", "16", "64Gi", extended=GPU), pod("busy", "4", "1Gi", "big"),
                          w1, *pods, group("ng", "big", "w1", autoscaling_options=opts))


@pytest.mark.parametrize(
    ("w1", "pods", "opts", "flags", "unneeded"),
    [
        pytest.param(node("w1"), (pod("p", "2400m", "1Gi", "w1"),), None, (), False, id="flag-0.5-keeps-0.6"),
        pytest.param(node("w1"), (pod("p", "2400m", "1Gi", "w1"),), {"scaledownutilizationthreshold": "0.7"},
                     (), True, id="group-0.7-frees-0.6"),
        pytest.param(node("w1"), (pod("p", "1600m", "1Gi", "w1"),), {"scaledownutilizationthreshold": 0.3},
                     (), False, id="group-0.3-keeps-0.4"),
        pytest.param(node("w1"), (pod("p", "1600m", "1Gi", "w1"),), {"ScaleDownUtilizationThreshold": "0.3"},
                     ("--scale-down-utilization-threshold=0.9",), False, id="group-beats-flag-any-case"),
        pytest.param(node("w1", extended=GPU), (pod("p", "100m", "1Gi", "w1", extended={"nvidia.com/gpu": "1"}),),
                     None, (), True, id="gpu-flag-0.5-frees-half"),
        pytest.param(node("w1", extended=GPU), (pod("p", "100m", "1Gi", "w1", extended={"nvidia.com/gpu": "1"}),),
                     {"scaledowngpuutilizationthreshold": "0.4"}, (), False, id="gpu-group-0.4-keeps-half"),
        pytest.param(node("w1", extended=GPU), (pod("p", "100m", "1Gi", "w1", extended={"nvidia.com/gpu": "1"}),),
                     None, ("--scale-down-gpu-utilization-threshold=0.4",), False, id="gpu-flag-0.4-keeps-half"),
        pytest.param(node("w1"), (pod("ds", "2", "1Gi", "w1", owner=("DaemonSet", "ds")),
                                  pod("p", "800m", "1Gi", "w1")),
                     None, (), False, id="daemonset-counted-0.7"),
        pytest.param(node("w1"), (pod("ds", "2", "1Gi", "w1", owner=("DaemonSet", "ds")),
                                  pod("p", "800m", "1Gi", "w1")),
                     {"ignoredaemonsetsutilization": "true"}, (), True, id="group-ignores-daemonsets-0.4"),
        pytest.param(node("w1"), (pod("ds", "2", "1Gi", "w1", owner=("DaemonSet", "ds")),
                                  pod("p", "800m", "1Gi", "w1")),
                     {"ignoredaemonsetsutilization": False}, ("--ignore-daemonsets-utilization",), False,
                     id="group-counts-daemonsets-over-flag"),
    ],
)
def test_utilization_threshold_per_group(w1: Node, pods: tuple[Pod, ...], opts: Mapping[str, object] | None,
                                         flags: tuple[str, ...], unneeded: bool) -> None:
    down = scale_down(_candidate(w1, pods, opts), *flags)
    assert ("w1" in down.unneeded) is unneeded, reasons(down)
    if not unneeded:
        assert reasons(down)["w1"] == "NotUnderutilized"


@pytest.mark.parametrize(
    ("ready", "opts", "flags", "elapsed", "removed"),
    [
        pytest.param(True, None, (), 3 * MINUTE, False, id="flag-10m-waits"),
        pytest.param(True, {"scaledownunneededtime": "2m"}, (), 3 * MINUTE, True, id="group-2m-goes"),
        pytest.param(True, {"scaledownunneededtime": "20m"}, ("--scale-down-unneeded-time=1m",), 15 * MINUTE,
                     False, id="group-20m-over-flag-1m"),
        pytest.param(False, None, (), 6 * MINUTE, False, id="unready-flag-20m-waits"),
        pytest.param(False, {"scaledownunreadytime": "5m"}, (), 6 * MINUTE, True, id="unready-group-5m-goes"),
        pytest.param(False, {"scaledownunreadytime": "-1s"}, (), 600 * MINUTE, False,
                     id="unready-group-negative-never"),
    ],
)
def test_unneeded_and_unready_time_per_group(ready: bool, opts: Mapping[str, object] | None,
                                             flags: tuple[str, ...], elapsed: float, removed: bool) -> None:
    objects = scaled_cluster(node("big", "16", "64Gi"), pod("busy", "9", "1Gi", "big"), node("w1", ready=ready),
                             group("ng", "big", "w1", autoscaling_options=opts))
    memory = Remembered()
    loop(objects, *flags, now=NOW, memory=memory)
    later = loop(objects, *flags, now=NOW + elapsed, memory=memory).scale_down
    assert later.removed == (["w1"] if removed else [])


FLAGS = GroupConfig(utilization_threshold=0.5, gpu_utilization_threshold=0.5, unneeded_seconds=600.0,
                    unready_seconds=1200.0, ignore_daemonsets_utilization=False, max_node_provision_seconds=900.0)


@pytest.mark.parametrize(
    ("opts", "field", "value"),
    [
        pytest.param({}, "utilization_threshold", 0.5, id="none-flags"),
        pytest.param({"scaledownutilizationthreshold": "0.25"}, "utilization_threshold", 0.25, id="utilization"),
        pytest.param({"scaledowngpuutilizationthreshold": "0.9"}, "gpu_utilization_threshold", 0.9, id="gpu"),
        pytest.param({"scaledownunneededtime": "1h"}, "unneeded_seconds", 3600.0, id="unneeded"),
        pytest.param({"scaledownunreadytime": "30s"}, "unready_seconds", 30.0, id="unready"),
        pytest.param({"ignoredaemonsetsutilization": "T"}, "ignore_daemonsets_utilization", True, id="daemonsets"),
        pytest.param({"maxnodeprovisiontime": "5m"}, "max_node_provision_seconds", 300.0, id="provision"),
    ],
)
def test_group_config_reads_each_option(opts: Mapping[str, object], field: str, value: object) -> None:
    spec = node_group("ng", autoscaling_options=opts)
    config = group_config(SnapshotNodeGroup(spec, ()), options())
    assert getattr(config, field) == value
    assert {k: v for k, v in vars_of(config).items() if k != field} == \
        {k: v for k, v in vars_of(FLAGS).items() if k != field}


def vars_of(config: GroupConfig) -> dict[str, object]:
    return {name: getattr(config, name) for name in config.__slots__}


@pytest.mark.parametrize(
    ("opts", "message"),
    [
        pytest.param({"scaledownunneededtime": "soon"}, "spec.autoscalingOptions.scaledownunneededtime", id="duration"),
        pytest.param({"scaledownutilizationthreshold": "half"}, "is not a number", id="number"),
        pytest.param({"ignoredaemonsetsutilization": "yes please"}, "is not a boolean", id="boolean"),
        pytest.param({"scaledownfast": "1"}, "unknown autoscaling option", id="unknown"),
        pytest.param({"scaledownunneededtime": ["2m"]}, "expected a string", id="not-a-string"),
    ],
)
def test_bad_autoscaling_options_name_the_field(opts: Mapping[str, object], message: str) -> None:
    with pytest.raises(FieldError) as err:
        node_group("ng", autoscaling_options=opts)
    assert message in f"{err.value.field}: {err.value.message}"

"""Per-group settings: a group's own autoscaling options over the flags.

Upstream reads these through ``NodeGroup.GetOptions(defaults)`` and the node-group
config processor (``pkg/processors/nodegroupconfig/node_group_config_processor.go``):
eligibility takes the group's utilization thresholds and ``IgnoreDaemonSetsUtilization``
(``pkg/core/scaledown/eligibility/eligibility.go``), the unneeded-node tracker its
unneeded and unready times (``pkg/core/scaledown/unneeded/nodes.go``), clusterstate
its max provision time. An option the group does not set is the flag's value.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

from autoscaler.config import Options
from cloudproviders.interface import GroupOptions, NodeGroup, WithGroupOptions

__all__ = ["GroupConfig", "group_config"]


@dataclass(frozen=True, slots=True)
class GroupConfig:
    """The effective per-group values (CA ``NodeGroupAutoscalingOptions``)."""

    #: ``scaledownutilizationthreshold`` / ``--scale-down-utilization-threshold``.
    utilization_threshold: float
    #: ``scaledowngpuutilizationthreshold`` / ``--scale-down-gpu-utilization-threshold``.
    gpu_utilization_threshold: float
    #: ``scaledownunneededtime`` / ``--scale-down-unneeded-time`` (s).
    unneeded_seconds: float
    #: ``scaledownunreadytime`` / ``--scale-down-unready-time`` (s); negative: never.
    unready_seconds: float
    #: ``ignoredaemonsetsutilization`` / ``--ignore-daemonsets-utilization``.
    ignore_daemonsets_utilization: bool
    #: ``maxnodeprovisiontime`` / ``--max-node-provision-time`` (s).
    max_node_provision_seconds: float


_T = TypeVar("_T", float, bool)


def _pick(own: _T | None, flag: _T) -> _T:
    return flag if own is None else own


def group_config(group: NodeGroup | None, options: Options) -> GroupConfig:
    """The group's options where it sets them, the flags elsewhere (no group: the flags)."""
    own = group.group_options() if isinstance(group, WithGroupOptions) else GroupOptions()
    sd, up = options.scale_down, options.scale_up
    return GroupConfig(
        utilization_threshold=_pick(own.scale_down_utilization_threshold, sd.utilization_threshold),
        gpu_utilization_threshold=_pick(own.scale_down_gpu_utilization_threshold, sd.gpu_utilization_threshold),
        unneeded_seconds=_pick(own.scale_down_unneeded_seconds, sd.unneeded_seconds),
        unready_seconds=_pick(own.scale_down_unready_seconds, sd.unready_seconds),
        ignore_daemonsets_utilization=_pick(own.ignore_daemonsets_utilization, sd.ignore_daemonsets_utilization),
        max_node_provision_seconds=_pick(own.max_node_provision_seconds, up.max_node_provision_seconds),
    )

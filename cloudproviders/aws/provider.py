"""The AWS ``CloudProvider``: static and auto-discovered ASGs behind a refreshed cache.

``refresh()`` (called once per loop) reads every group again when the cache is older
than ``ProviderConfig.refresh_interval_seconds`` (CA refreshes its ASG cache on the same
kind of timer), and for groups with requested-but-not-started instances reads their
scaling activities, so placeholders carry the launch error. A failure to list the groups
raises ``CloudError`` and keeps the previous view whole (never a partial one); a failure to
read the activities leaves the placeholders without an error, as CA assumes the group can
still launch.

``node_group_for`` maps ``spec.providerID`` (``aws:///<zone>/<instance-id>``) through an
instance index; an unknown instance ID triggers one on-demand refresh (a node that
registered after the last refresh), at most once per ``on_demand_min_seconds`` so nodes
outside every group (control plane, unmanaged) do not cause a refresh each. That refresh
updates the known groups only (new or vanished groups wait for the timed one), and its
failure raises ``CloudError`` from ``node_group_for``, as CA's ``NodeGroupForNode`` errors.

A static group (``--nodes``) that AWS does not list is logged and left out. A group named
twice in ``--nodes`` takes the first bounds given, as CA's ``asgCache.register`` keeps the
first registration of an explicitly configured group. Auto-discovery specs are combined
into one filter set (``settings.combine_discovery``), as CA does.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Mapping, Sequence

from cloudproviders.aws.api import AwsApi
from cloudproviders.aws.eks import ManagedNodegroups
from cloudproviders.aws.group import AsgNodeGroup, InstanceTypes
from cloudproviders.aws.settings import AsgDiscovery, combine_discovery
from cloudproviders.aws.state import AsgState, launch_error, parse_provider_id
from cloudproviders.config import ProviderConfig
from cloudproviders.interface import CloudError, NodeGroup
from kube.model import Node

__all__ = ["AwsProvider"]

log = logging.getLogger(__name__)


class AwsProvider:
    """See the module docstring. ``clock`` (monotonic) and ``wall_clock`` (epoch) are injectable."""

    def __init__(self, config: ProviderConfig, api: AwsApi, discovery: Sequence[AsgDiscovery],
                 prices: Mapping[str, float], *, clock: Callable[[], float] = time.monotonic,
                 wall_clock: Callable[[], float] = time.time, on_demand_min_seconds: float = 10.0) -> None:
        self._config = config
        self._api = api
        self._discovery = combine_discovery(discovery)
        self._prices = prices
        self._clock = clock
        self._wall_clock = wall_clock
        self._on_demand_min = on_demand_min_seconds
        self._types = InstanceTypes(api)
        self._nodegroups = ManagedNodegroups(api, clock)
        self._static: dict[str, tuple[int, int]] = {}
        for group in config.static_groups:
            self._static.setdefault(group.name, (group.min_size, group.max_size))
        self._groups: dict[str, AsgNodeGroup] = {}
        self._by_instance: dict[str, AsgNodeGroup] = {}
        self._refreshed_at: float | None = None

    @property
    def name(self) -> str:
        return "aws"

    def node_groups(self) -> Sequence[NodeGroup]:
        return list(self._groups.values())

    def node_group_for(self, node: Node) -> NodeGroup | None:
        instance_id = parse_provider_id(node.provider_id)
        if instance_id is None:
            return None
        group = self._by_instance.get(instance_id)
        if group is None and self._on_demand_allowed():
            log.info("unknown instance, refreshing node groups", extra={"node": node.name, "instance": instance_id})
            self.force_refresh(keep_group_set=True)
            group = self._by_instance.get(instance_id)
        return group

    def refresh(self) -> None:
        """A full refresh when the cache is older than the refresh interval; raises ``CloudError``."""
        now = self._clock()
        if self._refreshed_at is None or now - self._refreshed_at >= self._config.refresh_interval_seconds:
            self.force_refresh()

    def _on_demand_allowed(self) -> bool:
        return self._refreshed_at is None or self._clock() - self._refreshed_at >= self._on_demand_min

    def force_refresh(self, *, keep_group_set: bool = False) -> None:
        """Read every group now (DescribeAutoScalingGroups, then DescribeScalingActivities where needed).

        ``keep_group_set``: update the known groups only, neither adding nor dropping one (an
        on-demand refresh in the middle of a loop must not change the list the loop holds).
        """
        raw = self._api.groups_named(list(self._static)) if self._static else []
        if self._discovery is not None:
            raw.extend(self._api.groups_matching(self._discovery.filters()))
        states: dict[str, AsgState] = {}
        for entry in raw:
            state = AsgState.from_api(entry)
            states.setdefault(state.name, state)
        for missing in sorted(set(self._static) - set(states)):
            log.warning("static node group not found in AWS; ignoring it", extra={"node_group": missing})
        # Errors of failed launches, only for known groups with requested instances that did not
        # start (CA's isNodeGroupAvailable skips a group it has not registered yet).
        for name, state in list(states.items()):
            previous = self._groups.get(name)
            if previous is not None and state.desired > len(state.live_instances()):
                since = previous.scaled_at
                try:
                    error = launch_error(self._api.recent_activities(name), since)
                except CloudError as failure:
                    # CA assumes the group can still launch and makes its placeholders anyway.
                    log.warning("DescribeScalingActivities failed; placeholders without a launch error",
                                extra={"node_group": name, "error": str(failure)})
                    error = None
                if error is not None:
                    states[name] = dataclasses.replace(state, launch_error=error)
        if keep_group_set and self._groups:
            states = {name: states.get(name, group.state) for name, group in self._groups.items()}
        self._install(states)
        self._refreshed_at = self._clock()

    def _install(self, states: Mapping[str, AsgState]) -> None:
        groups: dict[str, AsgNodeGroup] = {}
        ordered = [n for n in self._static if n in states] + sorted(n for n in states if n not in self._static)
        for name in ordered:
            group = self._groups.get(name)
            if group is None:
                group = AsgNodeGroup(states[name], api=self._api, types=self._types, nodegroups=self._nodegroups,
                                     prices=self._prices,
                                     names=self._config.storage, bounds=self._static.get(name),
                                     wall_clock=self._wall_clock)
            else:
                group.update(states[name])
            groups[name] = group
        self._groups = groups
        self._by_instance = {i.instance_id: g for g in groups.values() for i in g.state.instances}


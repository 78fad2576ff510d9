"""One Auto Scaling group as a ``NodeGroup`` (also ``Priced`` and ``WithGroupOptions``).

Semantics follow CA's AWS provider (``cloudprovider/aws/aws_cloud_provider.go``,
``AwsNodeGroup``): ``increase_size`` sets the desired capacity (SetDesiredCapacity);
``delete_nodes`` terminates each named instance with ShouldDecrementDesiredCapacity=True
(TerminateInstanceInAutoScalingGroup), skips one already terminating, and for a
placeholder (requested, never started) only lowers the desired capacity;
``decrease_target_size`` lowers the desired capacity, never below the instances the group
has (read fresh for the check). After each successful call the cached state is updated,
so the loop sees its own action before the next refresh.

The template (``template.py``) is resolved lazily from the launch source (``launch.py``),
``DescribeInstanceTypes`` and, for an EKS managed node group, ``DescribeNodegroup``
(``eks.py``), and cached until the next full refresh; a failure there (or a group without
an availability zone, as in CA's ``getAsgTemplate``) is logged and the group has no cloud
template (None). ``delete_nodes`` makes the checks every provider makes (``deletable.py``).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
from collections.abc import Callable, Mapping, Sequence

from cloudproviders.aws.api import AwsApi
from cloudproviders.aws.eks import ManagedNodegroup, ManagedNodegroups
from cloudproviders.aws.launch import Launch, resolve_launch
from cloudproviders.aws.state import PLACEHOLDER_PREFIX, AsgState, parse_provider_id
from cloudproviders.aws.tags import group_options, labels_from_tags
from cloudproviders.aws.template import InstanceTypeInfo, build_template, static_instance_type
from cloudproviders.deletable import check_deletable
from cloudproviders.interface import CloudError, GroupOptions, Instance, InstanceState, NotFound
from cloudproviders.template_pods import kube_proxy_pod
from kube.model import Node, Pod
from kube.names import StorageNames

__all__ = ["AsgNodeGroup", "InstanceTypes"]

log = logging.getLogger(__name__)


class InstanceTypes:
    """``DescribeInstanceTypes`` results, fetched once per type (they do not change).

    When the call fails (no ``ec2:DescribeInstanceTypes`` permission, say) or AWS does not
    know the type, the shipped static list answers (``instance_types.json``), as CA falls
    back on its static list (``aws_cloud_provider.go``, ``BuildAWS``); a type in neither is
    an error (CA: "uses the unknown EC2 instance type").
    """

    def __init__(self, api: AwsApi) -> None:
        self._api = api
        self._known: dict[str, InstanceTypeInfo] = {}

    def get(self, name: str) -> InstanceTypeInfo:
        found = self._known.get(name)
        if found is None:
            try:
                raw = self._api.instance_types([name]).get(name)
            except CloudError as error:
                log.warning("DescribeInstanceTypes failed; using the static instance type list",
                            extra={"instance_type": name, "error": str(error)})
                raw = None
            found = InstanceTypeInfo.from_api(raw) if raw is not None else static_instance_type(name)
            if found is None:
                raise CloudError(f"unknown EC2 instance type {name!r}")
            self._known[name] = found
        return found


class AsgNodeGroup:
    """See the module docstring; bounds come from ``--nodes`` for static groups, else from the ASG."""

    def __init__(self, state: AsgState, *, api: AwsApi, types: InstanceTypes, nodegroups: ManagedNodegroups,
                 prices: Mapping[str, float], names: StorageNames, bounds: tuple[int, int] | None,
                 wall_clock: Callable[[], float]) -> None:
        self._state = state
        self._api = api
        self._types = types
        self._nodegroups = nodegroups
        self._prices = prices
        self._names = names
        self._bounds = bounds
        self._wall_clock = wall_clock
        self._resolved: Launch | None = None
        self._template: Node | None = None
        #: When this process last changed the desired capacity (scaling activities before it are old news).
        self.scaled_at: dt.datetime | None = None

    # --- cache ------------------------------------------------------------------------------
    @property
    def state(self) -> AsgState:
        return self._state

    def update(self, state: AsgState) -> None:
        """Take a fresh ``DescribeAutoScalingGroups`` view; the template is resolved again when asked."""
        self._state = state
        self._resolved = None
        self._template = None

    # --- NodeGroup ---------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self._state.name

    def min_size(self) -> int:
        return self._bounds[0] if self._bounds is not None else self._state.min_size

    def max_size(self) -> int:
        return self._bounds[1] if self._bounds is not None else self._state.max_size

    def target_size(self) -> int:
        return self._state.desired

    def instances(self) -> Sequence[Instance]:
        return self._state.instance_list()

    def increase_size(self, delta: int) -> None:
        if delta <= 0:
            raise CloudError(f"node group {self.name}: size increase must be positive, got {delta}")
        size = self._state.desired + delta
        if size > self.max_size():
            raise CloudError(f"node group {self.name}: size {size} would be above max {self.max_size()}")
        self._set_desired(size)

    def delete_nodes(self, nodes: Sequence[Node]) -> None:
        members = {i.instance_id: i for i in self._state.instances}
        placeholder = PLACEHOLDER_PREFIX + self.name + "-"
        keys = [parse_provider_id(n.provider_id) or f"no-instance:{n.name}" for n in nodes]
        check_deletable(f"node group {self.name}", nodes, keys, target=self._state.desired, min_size=self.min_size(),
                        is_member=lambda k: k in members or k.startswith(placeholder))
        ids: list[str] = []
        placeholders = 0
        for node, instance_id in zip(nodes, keys, strict=True):
            if instance_id.startswith(placeholder):
                placeholders += 1
            elif members[instance_id].state is InstanceState.DELETING:
                log.info("instance already terminating", extra={"node_group": self.name, "node": node.name})
            else:
                ids.append(instance_id)
        for instance_id in ids:
            self._api.terminate_and_decrement(instance_id)
            self._state = dataclasses.replace(
                self._state, desired=self._state.desired - 1,
                instances=tuple(i for i in self._state.instances if i.instance_id != instance_id))
        if placeholders:
            # Same check as decrease_target_size: never let AWS pick a started instance to drop.
            self.decrease_target_size(-placeholders)

    def decrease_target_size(self, delta: int) -> None:
        if delta >= 0:
            raise CloudError(f"node group {self.name}: size decrease must be negative, got {delta}")
        # Read the group again: had AWS started an instance since the last refresh, lowering the
        # desired capacity would make AWS terminate an instance of its choosing, maybe a node with
        # local data. (A launch between this read and the call below remains possible, as in CA.)
        fresh = self._api.groups_named([self.name])
        if not fresh:
            raise NotFound(f"node group {self.name}: DescribeAutoScalingGroups no longer lists it")
        self._state = dataclasses.replace(AsgState.from_api(fresh[0]), launch_error=self._state.launch_error)
        live = len(self._state.live_instances())
        if self._state.desired + delta < live:
            raise CloudError(f"node group {self.name}: attempt to delete existing instances: target "
                             f"{self._state.desired}, delta {delta}, instances {live}")
        self._set_desired(self._state.desired + delta)

    def _set_desired(self, size: int) -> None:
        self._api.set_desired_capacity(self.name, size)
        self.scaled_at = dt.datetime.fromtimestamp(self._wall_clock(), dt.UTC)
        self._state = dataclasses.replace(self._state, desired=size, launch_error=None)

    # --- template, price, options ---------------------------------------------------------------
    def template_node(self) -> Node | None:
        if self._template is None:
            try:
                self._template = self._build_template()
            except CloudError as error:
                log.warning("no cloud template for node group", extra={"node_group": self.name, "error": str(error)})
                return None
        return self._template

    def template_pods(self) -> tuple[Pod, ...]:
        return (kube_proxy_pod(self.name),)

    def _build_template(self) -> Node:
        if not self._state.zones:
            raise CloudError(f"node group {self.name}: unable to get its first availability zone")
        launch = self._resolve()
        info = self._types.get(launch.instance_type)
        return build_template(self.name, info, zone=self._state.zones[0], tags=self._state.tags, names=self._names,
                              root_volume_bytes=launch.root_volume_bytes, requirements=launch.requirements,
                              eks=self._managed_nodegroup())

    def _managed_nodegroup(self) -> ManagedNodegroup | None:
        """The EKS node group the ASG's tags name (``eks:nodegroup-name``, ``eks:cluster-name``), if any."""
        labels = labels_from_tags(self._state.tags)
        nodegroup, cluster = labels.get("nodegroup-name"), labels.get("cluster-name")
        if not nodegroup or not cluster:
            return None
        return self._nodegroups.get(cluster, nodegroup, group=self.name)

    def price_per_hour(self) -> float | None:
        try:
            return self._prices.get(self._resolve().instance_type)
        except CloudError as error:
            log.warning("no price for node group", extra={"node_group": self.name, "error": str(error)})
            return None

    def group_options(self) -> GroupOptions:
        return group_options(self.name, self._state.tags)

    def _resolve(self) -> Launch:
        """The instance type new instances get (``launch.py``), read once per refresh."""
        if self._resolved is None:
            self._resolved = resolve_launch(self._api, self.name, self._state.launch)
        return self._resolved

"""The cloud provider seam: node groups made of instances the autoscaler can resize.

Modelled on upstream CA's ``cloudprovider.NodeGroup`` where that contract is right,
and narrower where it is not (style.md: "leave behind the 20-method NodeGroup"):

* A group has bounds, a target size, and **instances**: what the cloud runs or is
  creating for it, each named by the provider ID its node will carry in
  ``spec.providerID``. An instance may never become a node (stock-out, quota, a
  boot that hangs); its ``Instance.error`` says why, so the loop can back the
  group off and move on (CA ``clusterstate``: ``handleInstanceCreationErrors``).
* ``increase_size`` raises the target; ``delete_nodes`` deletes named registered
  nodes and lowers the target; ``decrease_target_size`` lowers the target only by
  instances that never registered (CA ``DecreaseTargetSize``: delta < 0, never
  deletes a registered node).
* ``CloudProvider.node_group_for(node)`` maps a node to its group by
  ``spec.providerID`` (or, for ``plan``'s snapshot groups, by name/labels);
  ``refresh()`` is called once per loop before anything else is asked.

Optional capabilities (pricing, per-group options) are protocols of their own.
Errors from any SDK are translated into the ``CloudError`` family in one place per
provider: ``InsufficientCapacity`` / ``QuotaExceeded`` back a group off,
``Transient`` may be retried after ``retry_after`` seconds, ``NotFound`` means the
group or instance is gone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Protocol, runtime_checkable

from kube.model import Node, Pod

__all__ = [
    "CloudError",
    "CloudProvider",
    "GroupOptions",
    "Instance",
    "InstanceError",
    "InstanceErrorClass",
    "InstanceState",
    "InsufficientCapacity",
    "NodeGroup",
    "NotFound",
    "Priced",
    "QuotaExceeded",
    "Transient",
    "WithGroupOptions",
    "price_of",
]


# --- errors ----------------------------------------------------------------------------


class CloudError(Exception):
    """A cloud call failed; the message names the group and the operation."""


class InsufficientCapacity(CloudError):
    """The cloud cannot create instances of this kind right now (a stock-out): back the group off."""


class QuotaExceeded(InsufficientCapacity):
    """An account or project quota forbids more instances: back the group off."""


class NotFound(CloudError):
    """The group or instance does not exist (any more)."""


class Transient(CloudError):
    """Worth retrying after ``retry_after`` seconds (throttling, 5xx, timeouts)."""

    def __init__(self, message: str, retry_after: float = 1.0) -> None:
        super().__init__(message)
        self.retry_after = retry_after


# --- instances -------------------------------------------------------------------------


class InstanceState(Enum):
    """CA's ``cloudprovider.InstanceState``."""

    RUNNING = "Running"
    CREATING = "Creating"
    DELETING = "Deleting"


class InstanceErrorClass(Enum):
    """Why an instance could not be created (CA's ``InstanceErrorClass``, with quota apart)."""

    #: The zone/region has no capacity of this kind (AWS InsufficientInstanceCapacity,
    #: GCE ZONE_RESOURCE_POOL_EXHAUSTED, Azure SkuNotAvailable / AllocationFailed).
    OUT_OF_CAPACITY = "OutOfCapacity"
    #: A quota forbids it (AWS VcpuLimitExceeded, GCE QUOTA_EXCEEDED, Azure OperationNotAllowed).
    QUOTA = "Quota"
    OTHER = "Other"


@dataclass(frozen=True, slots=True)
class InstanceError:
    error_class: InstanceErrorClass
    #: The cloud's own error code, for events and metrics (``InsufficientInstanceCapacity``).
    code: str
    message: str


@dataclass(frozen=True, slots=True)
class Instance:
    #: The provider ID the instance's node carries in ``spec.providerID``
    #: (``aws:///us-east-1a/i-0abc``, ``gce://project/zone/name``, ``azure:///subscriptions/...``).
    id: str
    state: InstanceState
    #: Set when the instance failed to be created; such an instance never registers.
    error: InstanceError | None = None


# --- groups and providers --------------------------------------------------------------


class NodeGroup(Protocol):
    """A set of identical nodes the cloud scales as one (ASG, MIG, VMSS)."""

    @property
    def name(self) -> str: ...

    def min_size(self) -> int: ...

    def max_size(self) -> int: ...

    def target_size(self) -> int:
        """Instances the cloud is asked to run, including ones not registered as nodes yet."""
        ...

    def instances(self) -> Sequence[Instance]:
        """The group's instances as the cloud lists them (registered or not)."""
        ...

    def template_node(self) -> Node | None:
        """What a new node of the group looks like, when the cloud can tell (else None)."""
        ...

    def template_pods(self) -> tuple[Pod, ...]:
        """Pods besides DaemonSet pods that ``template_node`` runs from the start (upstream's
        ``TemplateNodeInfo`` pods: kube-proxy on AWS, GCE and Azure, ``template_pods.py``)."""
        ...

    def increase_size(self, delta: int) -> None:
        """Raise the target size by ``delta`` (> 0); raises ``CloudError``."""
        ...

    def delete_nodes(self, nodes: Sequence[Node]) -> None:
        """Delete these registered members and lower the target accordingly; raises ``CloudError``."""
        ...

    def decrease_target_size(self, delta: int) -> None:
        """Lower the target by ``-delta`` (``delta`` < 0) without deleting any registered node.

        Used for requested instances that never came (CA ``DecreaseTargetSize``). Raises
        ``CloudError`` if that would go below the number of registered nodes.
        """
        ...


@runtime_checkable
class Priced(Protocol):
    """A node group that knows its price (for the price expander and reports)."""

    def price_per_hour(self) -> float | None: ...


def price_of(group: NodeGroup) -> float | None:
    """The group's price per hour, if it knows one (the optional ``Priced`` capability)."""
    return group.price_per_hour() if isinstance(group, Priced) else None


@dataclass(frozen=True, slots=True)
class GroupOptions:
    """Per-group overrides of scale-down flags (CA ``NodeGroupAutoscalingOptions``); None: the flag."""

    scale_down_utilization_threshold: float | None = None
    scale_down_gpu_utilization_threshold: float | None = None
    scale_down_unneeded_seconds: float | None = None
    scale_down_unready_seconds: float | None = None
    #: CA ``ignoredaemonsetsutilization``: leave DaemonSet pods out of this group's utilization.
    ignore_daemonsets_utilization: bool | None = None
    max_node_provision_seconds: float | None = None

    @classmethod
    def of(cls, values: Mapping[str, float | bool]) -> GroupOptions:
        """From field -> value as ``kube.autoscaling_options.parse_option_value`` typed them."""
        return cls(**values)  # type: ignore[arg-type]  # each value was read for its own field


@runtime_checkable
class WithGroupOptions(Protocol):
    """A node group whose cloud carries per-group autoscaling options (CA's option tags)."""

    def group_options(self) -> GroupOptions: ...


class CloudProvider(Protocol):
    @property
    def name(self) -> str: ...

    def node_groups(self) -> Sequence[NodeGroup]: ...

    def node_group_for(self, node: Node) -> NodeGroup | None:
        """The group a node belongs to (by ``spec.providerID``); None: not autoscaled."""
        ...

    def refresh(self) -> None:
        """Bring cached cloud state up to date; called once at the start of every loop.

        Raises ``CloudError`` when the cloud cannot be read; the loop then skips
        rather than deciding on a stale or partial view.
        """
        ...

"""The cloud provider seam: node groups the autoscaler can resize.

Kept narrow on purpose (style.md: "leave behind the 20-method NodeGroup"): a group
reports its bounds, target size, members and template, and can grow or delete
named nodes. Optional capabilities (pricing) are protocols of their own. Errors
from any SDK are translated into ``CloudError`` subclasses in one place per
provider; ``Transient`` says the call may be retried.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from kube.model import Node

__all__ = ["CloudError", "CloudProvider", "InsufficientCapacity", "NodeGroup", "Priced", "Transient", "price_of"]


class CloudError(Exception):
    """A cloud call failed; the message names the group and the operation."""


class InsufficientCapacity(CloudError):
    """The cloud cannot create more instances of this kind right now (back off the group)."""


class Transient(CloudError):
    """Worth retrying after ``retry_after`` seconds (throttling, 5xx)."""

    def __init__(self, message: str, retry_after: float = 1.0) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class NodeGroup(Protocol):
    """A set of identical nodes the cloud scales as one (ASG, MIG, VMSS)."""

    @property
    def name(self) -> str: ...

    def min_size(self) -> int: ...

    def max_size(self) -> int: ...

    def target_size(self) -> int:
        """Nodes the cloud is asked to run, including ones not registered yet."""
        ...

    def node_names(self) -> Sequence[str]:
        """Kubernetes node names of the group's current members."""
        ...

    def template_node(self) -> Node | None:
        """What a new node of the group looks like, when the cloud can tell (else None)."""
        ...

    def increase_size(self, delta: int) -> None:
        """Raise the target size by ``delta`` (> 0); raises ``CloudError``."""
        ...

    def delete_nodes(self, names: Sequence[str]) -> None:
        """Delete these members and lower the target size accordingly; raises ``CloudError``."""
        ...


@runtime_checkable
class Priced(Protocol):
    """A node group that knows its price (for the price expander and reports)."""

    def price_per_hour(self) -> float | None: ...


def price_of(group: NodeGroup) -> float | None:
    """The group's price per hour, if it knows one (the optional ``Priced`` capability)."""
    return group.price_per_hour() if isinstance(group, Priced) else None


class CloudProvider(Protocol):
    @property
    def name(self) -> str: ...

    def node_groups(self) -> Sequence[NodeGroup]: ...

    def node_group_for(self, node: Node) -> NodeGroup | None:
        """The group a node belongs to; None: not autoscaled."""
        ...

"""How a group with a cached instance list lowers its target without touching a running instance.

Shared by the providers whose resize-down may pick any instance (GCE MIGs, Azure scale
sets): instances the cloud has not listed yet go by lowering the target, instances still
being created go by name, failed ones first; a running one never. Upstream: CA's
``DecreaseTargetSize`` of the GCE and Azure providers ("attempt to delete existing nodes").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from cloudproviders.interface import Instance, InstanceState

__all__ = ["Shrink", "plan_shrink"]


@dataclass(frozen=True, slots=True)
class Shrink:
    #: Instances not created yet (unlisted, or listed as creating): the most the target may drop.
    not_created: int
    #: Lower the target by this many, for instances the cloud has not listed yet.
    by_size: int
    #: Delete these creating instances by name, failed ones first.
    by_name: tuple[Instance, ...]


def plan_shrink(target: int, instances: Sequence[Instance], delta: int) -> Shrink:
    """The plan for ``delta`` (< 0); the caller refuses it when ``-delta > not_created``."""
    unlisted = max(0, target - len(instances))
    creating = sorted((i for i in instances if i.state is InstanceState.CREATING), key=lambda i: i.error is None)
    by_size = min(-delta, unlisted)
    return Shrink(unlisted + len(creating), by_size, tuple(creating[: -delta - by_size]))

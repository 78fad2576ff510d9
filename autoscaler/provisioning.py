"""Instances that were asked for: did they become nodes, fail, or take too long?

Upstream ``clusterstate`` (``updateScaleRequests``, ``handleInstanceCreationErrors``,
unregistered nodes and ``--max-node-provision-time``), reduced to what the cloud
seam tells: each group lists its instances by provider ID; an instance whose ID no
node carries in ``spec.providerID`` is not registered yet.

* An instance with an ``InstanceError`` (a stock-out, a quota, anything else) will
  never register: the loop lowers the group's target by it
  (``decrease_target_size``) and backs the group off.
* An instance unregistered for longer than ``--max-node-provision-time`` (or the
  group's own option), counted from the scale-up that asked for it (else from when
  the loop first saw it), is given up on the same way (upstream reverts a timed-out
  scale-up with ``DecreaseTargetSize`` and backs the group off).
* A group whose requested instances have all registered completed its scale-up.

``review_provisioning`` is pure: it reads the cloud's instances and the state the
loop kept, and returns what to do and the next state. The loop acts on it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field

from cloudproviders.interface import InstanceError, InstanceState, NodeGroup

__all__ = ["FailedInstances", "ProvisioningReview", "ProvisioningState", "TimedOut", "review_provisioning"]


@dataclass(frozen=True, slots=True)
class ProvisioningState:
    """What the loop remembers about requested instances between loops."""

    #: instance ID -> when the loop first saw it requested but not registered.
    unregistered_since: Mapping[str, float] = field(default_factory=dict)
    #: group -> when its oldest scale-up not yet complete was made.
    requests: Mapping[str, float] = field(default_factory=dict)

    def requested(self, group: str, now: float) -> ProvisioningState:
        """The state after a successful ``increase_size`` of ``group`` at ``now``."""
        return ProvisioningState(self.unregistered_since, {**self.requests, group: self.requests.get(group, now)})


@dataclass(frozen=True, slots=True)
class FailedInstances:
    group: str
    error: InstanceError
    ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class TimedOut:
    group: str
    ids: tuple[str, ...]
    #: The limit that ran out (s).
    limit: float


@dataclass(frozen=True, slots=True)
class ProvisioningReview:
    failed: tuple[FailedInstances, ...]
    timed_out: tuple[TimedOut, ...]
    #: Groups whose scale-up completed: every requested instance registered.
    completed: tuple[str, ...]
    #: The state for the next loop (failed and timed-out instances dropped, completions cleared).
    state: ProvisioningState


def review_provisioning(groups: Sequence[NodeGroup], registered: Collection[str], state: ProvisioningState,
                        now: float, provision_limit: Callable[[NodeGroup], float]) -> ProvisioningReview:
    """Sort every unregistered instance into failed, timed out or still coming.

    ``registered``: the provider IDs the cluster's nodes carry. ``provision_limit``:
    a group's ``--max-node-provision-time`` in seconds.
    """
    since: dict[str, float] = {}
    failed: list[FailedInstances] = []
    timed_out: list[TimedOut] = []
    completed: list[str] = []
    requests = dict(state.requests)
    for group in groups:
        errors: dict[tuple[object, ...], tuple[InstanceError, list[str]]] = {}
        late: list[str] = []
        coming = 0
        limit = provision_limit(group)
        for instance in group.instances():
            if instance.id in registered or instance.state is InstanceState.DELETING:
                continue
            if instance.error is not None:
                key = (instance.error.error_class, instance.error.code)
                errors.setdefault(key, (instance.error, []))[1].append(instance.id)
                continue
            first = state.unregistered_since.get(instance.id, state.requests.get(group.name, now))
            if now - first > limit:
                late.append(instance.id)
            else:
                since[instance.id] = first
                coming += 1
        failed.extend(FailedInstances(group.name, error, tuple(ids)) for error, ids in errors.values())
        if late:
            timed_out.append(TimedOut(group.name, tuple(late), limit))
        if errors or late:
            requests.pop(group.name, None)
        elif group.name in requests and coming == 0:
            completed.append(group.name)
            del requests[group.name]
    return ProvisioningReview(tuple(failed), tuple(timed_out), tuple(completed), ProvisioningState(since, requests))

"""The scheduled pods grouped per node, kept from loop to loop and patched where pods changed.

A loop reads the cluster's pods as one list (the live adapter's caches, the emulator's
store). When it holds the same objects as last loop's, last loop's index is this loop's.
When a few pods were replaced in place (a status or label update arrives as a new object
at the same position) or added at the end, only the nodes they run on are regrouped: the
other nodes keep their very lists, so what later stages keep per node (utilization,
scale-down verdicts) is still valid for them by identity. Anything else (pods removed,
moved to another node, started or finished, with host ports or anti-affinity) rebuilds
the index from the list, as the first loop does.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass

from kube.model import Pod

__all__ = ["PodIndex", "index_pods"]

#: More changed positions than this rebuild the index (a patch is for a loop's churn).
_MAX_PATCHED = 2_000


@dataclass(frozen=True, slots=True)
class PodIndex:
    """The cluster's scheduled pods grouped per node, as one loop derived them from ``objects.pods``.

    Read-only once built (the lists are shared with the next loop while ``pods`` is unchanged).
    """

    #: The pod list it was built from, and the expendable-priority cutoff it applied.
    pods: list[Pod]
    cutoff: int
    #: Scheduled, non-terminal, non-expendable pods, in ``pods`` order.
    scheduled: list[Pod]
    by_node: dict[str, list[Pod]]
    #: node -> summed (CPU, memory, ephemeral-storage) requests of its pods.
    totals: dict[str, tuple[int, int, int]]
    #: Scheduled pods with host ports, and with required anti-affinity, in ``pods`` order.
    ports: list[Pod]
    anti_affinity: list[Pod]
    #: Nodes with a pod being deleted (their utilization and drain read the clock).
    deleting: frozenset[str] = frozenset()
    #: For each position of ``pods``, its position in ``scheduled`` (-1: not scheduled).
    positions: tuple[int, ...] = ()


def _counted(pod: Pod, cutoff: int) -> bool:
    """Scheduled, not terminal, not expendable: a pod the index groups."""
    return bool(pod.node_name) and not pod.is_terminal and pod.priority >= cutoff


def _special(pod: Pod) -> bool:
    sched = pod.scheduling
    return bool(sched.host_ports or sched.anti_affinity)


def _totals(on: list[Pod]) -> tuple[int, int, int]:
    reqs = [p.requests for p in on]
    return sum(r.cpu for r in reqs), sum(r.memory for r in reqs), sum(r.ephemeral_storage for r in reqs)


def index_pods(pods: list[Pod], cutoff: int, previous: PodIndex | None = None) -> PodIndex:
    """Group the scheduled pods per node: last loop's index when ``pods`` holds the same objects,
    patched when a few were replaced in place or appended, rebuilt otherwise."""
    if previous is not None and previous.cutoff == cutoff:
        old = previous.pods
        if len(old) == len(pods) and all(map(operator.is_, old, pods)):
            return previous
        patched = _patch(previous, pods) if len(pods) >= len(old) and previous.positions else None
        if patched is not None:
            return patched
    return _build(pods, cutoff)


def _build(pods: list[Pod], cutoff: int) -> PodIndex:
    scheduled: list[Pod] = []
    by_node: dict[str, list[Pod]] = {}
    ports: list[Pod] = []
    anti: list[Pod] = []
    deleting: set[str] = set()
    positions: list[int] = []
    for pod in pods:
        name = pod.node_name
        if not name or pod.is_terminal or pod.priority < cutoff:  # expendable pods are not counted
            positions.append(-1)
            continue
        positions.append(len(scheduled))
        scheduled.append(pod)
        on = by_node.get(name)
        if on is None:
            on = by_node[name] = []
        on.append(pod)
        sched = pod.scheduling
        if sched.host_ports:
            ports.append(pod)
        if sched.anti_affinity:
            anti.append(pod)
        if pod.deleted is not None:
            deleting.add(name)
    totals = {name: _totals(on) for name, on in by_node.items()}
    # A copy: the caller's list may be refilled in place before the next loop compares it.
    return PodIndex(list(pods), cutoff, scheduled, by_node, totals, ports, anti, frozenset(deleting),
                    tuple(positions))


def _patch(previous: PodIndex, pods: list[Pod]) -> PodIndex | None:
    """``previous`` with the pods replaced in place or appended since; None when that is not all."""
    old, cutoff = previous.pods, previous.cutoff
    changed = [i for i, (a, b) in enumerate(zip(old, pods, strict=False)) if a is not b]  # pods may be longer
    if len(changed) + len(pods) - len(old) > _MAX_PATCHED:
        return None
    scheduled = list(previous.scheduled)
    positions = list(previous.positions)
    lists: dict[str, list[Pod]] = {}  # the affected nodes' lists, copied before any change

    def node_list(name: str) -> list[Pod]:
        on = lists.get(name)
        if on is None:
            on = lists[name] = list(previous.by_node.get(name, ()))
        return on

    for i in changed:
        was, now = old[i], pods[i]
        if _special(was) or _special(now):
            return None
        counted = _counted(was, cutoff)
        if counted != _counted(now, cutoff):
            return None
        if not counted:
            continue
        if was.node_name != now.node_name:
            return None
        on = node_list(now.node_name)
        on[next(k for k, p in enumerate(on) if p is was)] = now
        scheduled[positions[i]] = now
    for pod in pods[len(old):]:
        if _special(pod):
            return None
        if not _counted(pod, cutoff):
            positions.append(-1)
            continue
        if pod.node_name not in previous.by_node:
            return None  # a node's first pod: the grouping's order of nodes would differ
        positions.append(len(scheduled))
        scheduled.append(pod)
        node_list(pod.node_name).append(pod)
    by_node = {**previous.by_node, **lists}
    totals = {**previous.totals, **{name: _totals(on) for name, on in lists.items()}}
    deleting = {name for name in previous.deleting if name not in lists}
    deleting.update(name for name, on in lists.items() if any(p.deleted is not None for p in on))
    return PodIndex(list(pods), cutoff, scheduled, by_node, totals, previous.ports, previous.anti_affinity,
                    frozenset(deleting), tuple(positions))

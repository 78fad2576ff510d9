"""What removing a node disrupts, and the order it sets (``--scale-down-order=disruption-cost``).

Upstream CA walks candidates empty-first, then in an order that is effectively arbitrary;
where the rest of the cluster can absorb only some of them, that order decides how many
bytes of local volumes are snapshotted and moved, how long drains take, and how many
stateful pods restart. Storage-aware, the cheaper go first:

* the predicted unpin time: bytes of migratable local volumes pinned to the node over
  ``--storage-unpin-throughput``;
* the pods that restart: ``RESTART_SECONDS`` each, so a node of many pods costs more;
* ``autoscaler.storage.dev/disruption-cost`` on the node: seconds an operator adds (or,
  negative, takes away);
* ties: the restarting pods' priorities, then their ``controller.kubernetes.io/pod-deletion-cost``
  (Kubernetes' own scale-in preference), then the node's name, so equal costs keep the same
  order from loop to loop.

Empty nodes still come first, as upstream. Among candidates that can all go nothing
changes; the drain deadline of each chosen node follows its predicted unpin time
(``drain_deadline``).

Stable from loop to loop without memory: the cost order is a function of what the loop
sees, equal costs broken by name, so the same cluster gives the same order every loop and a
node's place changes only when its cost does (which also keeps the removal pass replayable,
``replay.py``). Upstream steadies its arbitrary order by putting last loop's unneeded nodes
first (``processors/scaledowncandidates/previouscandidates``); the upstream order here is by
name, stable by itself, and does not model that step.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from autoscaler.config import Options, ScaleDownOrder
from autoscaler.scaledown.eligibility import Candidate
from kube.model import Node, Pod

__all__ = ["MAX_DOUBLINGS", "RESTART_SECONDS", "SAFETY_FACTOR", "DisruptionCost", "disruption_cost",
           "drain_deadline", "ordered"]

#: What one restarting pod weighs, in seconds of disruption (a stateful pod's restart and
#: catch-up); it makes pod count the measure between nodes with equal bytes to unpin.
RESTART_SECONDS = 10.0
#: Drains get this many times their predicted unpin time before they are given up.
SAFETY_FACTOR = 2.0
#: Until a drain has been watched (``throughput.py``) the throughput is the flag's guess, not a
#: measurement: deadlines from it get this many times more room, so a driver up to
#: ``SAFETY_FACTOR x PRIOR_MARGIN`` (8x) slower than the flag says fails no first drain (a stuck
#: one is held that much longer; once a drain is observed its throughput sets the deadlines).
PRIOR_MARGIN = 4.0
#: A node's failed deletions double its next deadline at most this many times (x16).
MAX_DOUBLINGS = 4


@dataclass(frozen=True, slots=True, order=True)
class DisruptionCost:
    """The removal cost of one node; compares in the order candidates are taken."""

    seconds: float
    priority: int
    deletion_cost: int
    unpin_bytes: int
    pods: int


def _restarting(pods: Sequence[Pod]) -> list[Pod]:
    return [p for p in pods if not p.is_daemonset and not p.is_mirror and not p.is_terminal]


def disruption_cost(node: Node | None, pods: Sequence[Pod], unpin_bytes: int, options: Options) -> DisruptionCost:
    restarting = _restarting(pods)
    seconds = unpin_bytes / options.scale_down.unpin_bytes_per_second + RESTART_SECONDS * len(restarting)
    if node is not None:
        seconds += node.disruption_cost
    return DisruptionCost(round(seconds, 3), sum(p.priority for p in restarting),
                          sum(p.deletion_cost for p in restarting), unpin_bytes, len(restarting))


def ordered(candidates: Sequence[Candidate], nodes: Mapping[str, Node], pods_by_node: Mapping[str, Sequence[Pod]],
            unpin_bytes: Mapping[str, int], options: Options) -> list[Candidate]:
    """The candidates in the order the pass simulates and deletes them: empty first, then by ``--scale-down-order``."""
    if options.scale_down_order is ScaleDownOrder.UPSTREAM:
        return sorted(candidates, key=lambda c: (not c.looks_empty, c.name))

    def key(c: Candidate) -> tuple[bool, DisruptionCost, str]:
        cost = disruption_cost(nodes.get(c.name), pods_by_node.get(c.name, ()), unpin_bytes.get(c.name, 0), options)
        return not c.looks_empty, cost, c.name

    return sorted(candidates, key=key)


def drain_deadline(unpin_bytes: int, options: Options, *, bytes_per_second: float | None = None,
                   failures: int = 0, grace: float = 0.0) -> float:
    """Seconds a drain may take: predicted unpin time x ``SAFETY_FACTOR``, at least ``--max-pod-eviction-time``.

    ``bytes_per_second``: the throughput observed on earlier drains (``throughput.py``);
    None: none observed, ``--storage-unpin-throughput`` with ``PRIOR_MARGIN``.
    ``grace``: the longest termination grace of the pods to move (the driver can unpin a
    volume only once the pod using it is gone, so that time comes before the unpin's).
    ``failures``: the node's deletions that failed in a row. Each doubles the allowance (up to
    ``MAX_DOUBLINGS``), as upstream doubles a node group's backoff after each failed scale-up
    (``utils/backoff/exponential_backoff.go``): a driver slower than predicted unpins all of a
    volume or nothing (a cancelled snapshot starts over), so the same deadline would fail the
    same node at every attempt.
    """
    sd = options.scale_down
    if not unpin_bytes:
        return sd.max_pod_eviction_seconds
    rate = sd.unpin_bytes_per_second / PRIOR_MARGIN if bytes_per_second is None else bytes_per_second
    allowance = SAFETY_FACTOR * float(2 ** min(max(failures, 0), MAX_DOUBLINGS))
    return max(sd.max_pod_eviction_seconds, grace + allowance * unpin_bytes / rate)

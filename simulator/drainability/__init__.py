"""Which pods of a node scale-down must move, and which pod, if any, forbids removing it.

Upstream CA's ``simulator/drainability``. The scale-down planner builds one
``DrainContext`` per loop and calls ``drain_node`` for each candidate node; pods in
``NodeDrain.to_move`` then need a new home in the simulation, and a ``blocked`` node is
unremovable with reason ``BlockedByPod`` (plan-contract). After choosing a node, the
planner spends the PDB budget with ``ctx.pdbs.remove(drain.to_move)``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from kube.model import Pod
from simulator.drainability.base import (
    DRAIN,
    UNDEFINED,
    BlockingReason,
    DrainContext,
    Outcome,
    OutcomeKind,
    Rule,
)
from simulator.drainability.pdb import PdbTracker, is_guard_pod
from simulator.drainability.rules import DEFAULT_RULES

__all__ = [
    "DEFAULT_RULES",
    "DRAIN",
    "UNDEFINED",
    "BlockingReason",
    "DrainContext",
    "NodeDrain",
    "Outcome",
    "OutcomeKind",
    "PdbTracker",
    "Rule",
    "classify_pod",
    "drain_node",
    "is_guard_pod",
]


def classify_pod(ctx: DrainContext, pod: Pod, rules: Sequence[Rule] = DEFAULT_RULES) -> Outcome:
    """The first rule's verdict that is not UNDEFINED; DRAIN when no rule has one."""
    for rule in rules:
        outcome = rule.drainable(ctx, pod)
        if outcome.kind is not OutcomeKind.UNDEFINED:
            return outcome
    return DRAIN


@dataclass(frozen=True, slots=True)
class NodeDrain:
    """A node's pods sorted by what removing the node does to them.

    When ``blocked`` is set the lists are empty: as upstream, classification stops at
    the first blocking pod, since the node is unremovable whatever the rest say.
    """

    #: Evicted and rescheduled: the simulation must find each a node.
    to_move: tuple[Pod, ...] = ()
    #: Storage guard pods: evicted during actuation, never rescheduled.
    guards: tuple[Pod, ...] = ()
    #: DaemonSet pods: deleted with the node, never rescheduled.
    daemon: tuple[Pod, ...] = ()
    #: Mirror and long-terminating pods: left alone.
    skipped: tuple[Pod, ...] = ()
    #: ``safe-to-evict: "on-completion"`` pods: left to finish; the node waits for them
    #: (upstream's ``PodMoveInfo.OnCompletionPods``).
    on_completion: tuple[Pod, ...] = ()
    #: The first pod, in the node's pod order, that forbids the removal, and why.
    blocked: tuple[Pod, Outcome] | None = None

    @property
    def removable(self) -> bool:
        return self.blocked is None


def drain_node(ctx: DrainContext, pods: Iterable[Pod], rules: Sequence[Rule] = DEFAULT_RULES) -> NodeDrain:
    """Classify every pod of one node with ``rules``; the PDB budget is read, not spent."""
    to_move: list[Pod] = []
    guards: list[Pod] = []
    daemon: list[Pod] = []
    skipped: list[Pod] = []
    waiting: list[Pod] = []
    for pod in pods:
        outcome = classify_pod(ctx, pod, rules)
        kind = outcome.kind
        if kind is OutcomeKind.DRAIN:
            to_move.append(pod)
        elif kind is OutcomeKind.BLOCK:
            return NodeDrain(blocked=(pod, outcome))
        elif kind is OutcomeKind.DAEMON:
            daemon.append(pod)
        elif kind is OutcomeKind.GUARD:
            guards.append(pod)
        elif kind is OutcomeKind.WAIT:
            waiting.append(pod)
        else:
            skipped.append(pod)
    return NodeDrain(tuple(to_move), tuple(guards), tuple(daemon), tuple(skipped), on_completion=tuple(waiting))

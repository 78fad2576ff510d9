"""The vocabulary of drainability: what a rule may say about a pod, and what it may read.

A drain rule looks at one pod on a node that scale-down considers removing and answers
with an ``Outcome``: move it (DRAIN), forget it (SKIP), delete it with the node but never
reschedule it (DAEMON, GUARD), wait for it to finish (WAIT), refuse the whole node (BLOCK), or "not mine" (UNDEFINED).
``DrainContext`` is everything a rule may consult; it is built once per loop by the
scale-down planner. The rules themselves are in ``rules.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Protocol

from kube.model import Controller, LabelSelector, Pod
from simulator.drainability.pdb import PdbTracker, is_guard_pod

__all__ = [
    "DRAIN",
    "UNDEFINED",
    "BlockingReason",
    "DrainContext",
    "Outcome",
    "OutcomeKind",
    "Rule",
]


class OutcomeKind(Enum):
    #: The rule has no opinion; the next rule decides.
    UNDEFINED = "Undefined"
    #: Evict, and find the pod a new node in the simulation.
    DRAIN = "Drain"
    #: Ignore: not evicted by us and not rescheduled (mirror pods, pods already going away).
    SKIP = "Skip"
    #: Block the node's removal; ``Outcome.reason`` says why.
    BLOCK = "Block"
    #: A DaemonSet pod. Upstream reports these as drainable and then sets them apart: they
    #: are deleted with the node but never rescheduled, since the DaemonSet runs one
    #: per node anyway. A kind of its own saves every caller from re-checking the owner.
    DAEMON = "Daemon"
    #: A storage guard pod (storage-semantics 3.4): not rescheduled, its PDB not
    #: consulted, yet evicted during actuation, where its PDB makes the eviction wait
    #: until the storage driver has unpinned the node's volumes.
    GUARD = "Guard"
    #: Left to finish where it runs (``safe-to-evict: "on-completion"``): neither evicted
    #: nor rescheduled, and the node may not go while it runs (upstream's
    #: ``drainability.WaitForCompletion``; the planner reports ``BlockedByOnCompletionPod``).
    WAIT = "WaitForCompletion"


class BlockingReason(Enum):
    """Why a pod blocks its node's removal; values are upstream CA's names (plan-contract)."""

    NO_REASON = "NoReason"
    CONTROLLER_NOT_FOUND = "ControllerNotFound"
    MIN_REPLICAS_REACHED = "MinReplicasReached"
    NOT_REPLICATED = "NotReplicated"
    LOCAL_STORAGE_REQUESTED = "LocalStorageRequested"
    NOT_SAFE_TO_EVICT_ANNOTATION = "NotSafeToEvictAnnotation"
    UNMOVABLE_KUBE_SYSTEM_POD = "UnmovableKubeSystemPod"
    NOT_ENOUGH_PDB = "NotEnoughPdb"
    UNEXPECTED_ERROR = "UnexpectedError"


@dataclass(frozen=True, slots=True)
class Outcome:
    """One rule's verdict on one pod. ``reason`` is set exactly when ``kind`` is BLOCK."""

    kind: OutcomeKind
    reason: BlockingReason | None = None
    #: For people: which volume, which PDB, which controller.
    detail: str = ""

    @staticmethod
    def block(reason: BlockingReason, detail: str) -> Outcome:
        return Outcome(OutcomeKind.BLOCK, reason, detail)

    @property
    def blocks(self) -> bool:
        return self.kind is OutcomeKind.BLOCK


UNDEFINED = Outcome(OutcomeKind.UNDEFINED)
DRAIN = Outcome(OutcomeKind.DRAIN)


@dataclass(frozen=True, slots=True)
class DrainContext:
    """What the rules may read, fixed for one loop (the PDB budgets excepted, see ``PdbTracker``).

    The option fields mirror ``ScaleDownOptions`` (``--skip-nodes-with-*``,
    ``--min-replica-count``); the simulator may not import the loop's configuration,
    so the planner copies them in.
    """

    #: The loop's single clock reading, seconds since the epoch.
    now: float
    #: (kind, namespace, name) -> controller, as in ``ClusterObjects.controllers``.
    controllers: Mapping[tuple[str, str, str], Controller]
    #: Disruptions left per PDB; shared and consumed across the nodes of one pass.
    #: Built with the same ``guard`` (None when not storage-aware).
    pdbs: PdbTracker
    skip_system_pods: bool = True
    skip_local_storage: bool = True
    skip_custom_controller_pods: bool = True
    min_replica_count: int = 0
    #: ``--blocking-system-pod-distruption-timeout`` (s): a kube-system pod without a PDB
    #: that is older than this no longer blocks its node.
    system_pod_timeout: float = 3600.0
    #: Selector of the storage guard pods; None when there are none.
    guard: LabelSelector | None = None
    #: ``--storage-aware=false`` makes guard pods ordinary pods, as upstream sees them.
    storage_aware: bool = True

    def __post_init__(self) -> None:
        # The rules and the tracker must agree on who is a guard, or a guard's PDB
        # would block in one place and be ignored in the other.
        expected = self.guard if self.storage_aware else None
        if self.pdbs.guard != expected:
            raise ValueError("the PdbTracker's guard must be the context's (None when not storage-aware)")

    def is_guard(self, pod: Pod) -> bool:
        return self.storage_aware and is_guard_pod(self.guard, pod)


class Rule(Protocol):
    """One drainability check (upstream's ``Rule{Name; Drainable}``)."""

    @property
    def name(self) -> str: ...

    def drainable(self, ctx: DrainContext, pod: Pod) -> Outcome:
        """The verdict on ``pod``, or ``UNDEFINED`` to leave it to the next rule."""
        ...

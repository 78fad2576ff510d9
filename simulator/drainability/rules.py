"""Upstream CA's drain rules, one small class each, in upstream's order.

``DEFAULT_RULES`` is the chain scale-down runs on every pod of a candidate node; the
first rule with an opinion wins (see ``classify_pod``). Rules read their switches from
the ``DrainContext`` and answer UNDEFINED when switched off, so the chain is one
constant rather than rebuilt from options each loop.

Order matters and follows upstream: pods that are going away anyway come first (mirror,
long-terminating), then this project's guard pods, then the legacy controller check,
then what makes a pod movable outright (DaemonSet, safe-to-evict=true, terminal), and
only then what blocks (not replicated, kube-system, safe-to-evict=false, local
storage, PDB). So ``safe-to-evict: "true"`` overrides local storage and a missing
controller does not, as upstream.

Upstream's OnCompletion rule (``safe-to-evict: "on-completion"``) comes after Terminal:
such a pod is waited for, never evicted or rescheduled, and its node is held back until
it finishes (``simulator/drainability/rules/oncompletion/rule.go``).
"""

from __future__ import annotations

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

__all__ = [
    "DEFAULT_RULES",
    "LONG_TERMINATING_EXTRA_SECONDS",
    "DaemonSet",
    "Guard",
    "LocalStorage",
    "LongTerminating",
    "Mirror",
    "NotSafeToEvict",
    "OnCompletion",
    "Pdb",
    "ReplicaCount",
    "Replicated",
    "SafeToEvict",
    "System",
    "Terminal",
]

#: Upstream's ``PodLongTerminatingExtraThreshold``: slack past the grace period before a
#: deleted pod counts as stuck rather than shutting down.
LONG_TERMINATING_EXTRA_SECONDS = 30.0

#: Owner kinds upstream trusts to recreate a pod when ``--skip-nodes-with-custom-controller-pods``
#: is on. Deployments own ReplicaSets, so their pods arrive here as ReplicaSet-owned.
REPLICATED_KINDS = frozenset({"ReplicationController", "ReplicaSet", "StatefulSet", "Job"})

SYSTEM_NAMESPACE = "kube-system"

_SKIP = Outcome(OutcomeKind.SKIP)
_DAEMON = Outcome(OutcomeKind.DAEMON)
_GUARD = Outcome(OutcomeKind.GUARD)
_WAIT = Outcome(OutcomeKind.WAIT)


class Mirror:
    """Static pods seen through their API mirror: the kubelet owns them, eviction is moot."""

    name = "Mirror"

    def drainable(self, ctx: DrainContext, pod: Pod) -> Outcome:
        return _SKIP if pod.is_mirror else UNDEFINED


class LongTerminating:
    """Pods deleted longer ago than their grace period (+30 s): stuck, nothing to move.

    A pod deleted more recently is still in its shutdown and goes through the other
    rules like any pod; its replacement needs room somewhere.
    """

    name = "LongTerminating"

    def drainable(self, ctx: DrainContext, pod: Pod) -> Outcome:
        if pod.deleted is None:
            return UNDEFINED
        if pod.deleted + pod.grace_seconds + LONG_TERMINATING_EXTRA_SECONDS < ctx.now:
            return _SKIP
        return UNDEFINED


class Guard:
    """Storage guard pods (storage-semantics 3.4), only when storage-aware.

    A guard exists on every node with local volumes and is protected by a PDB with no
    disruption allowed until the storage driver has unpinned the node's volumes. Checked
    before anything that could block (PDB, not replicated, kube-system, local storage),
    because otherwise that PDB alone would make every such node unremovable, which is
    the opposite of its purpose: it does not forbid scale-down, it makes actuation wait.
    The guard is not rescheduled either: the driver starts one per node.
    """

    name = "Guard"

    def drainable(self, ctx: DrainContext, pod: Pod) -> Outcome:
        return _GUARD if ctx.is_guard(pod) else UNDEFINED


class ReplicaCount:
    """Legacy controller checks, only with ``--skip-nodes-with-custom-controller-pods``.

    The controller that would recreate the pod must exist in the snapshot, and
    ReplicationControllers and ReplicaSets must ask for at least ``--min-replica-count``
    replicas. As upstream, StatefulSets and Jobs are only checked for existence, and
    StatefulSets of API groups other than ``apps`` (e.g. OpenKruise) are not checked at
    all: upstream has no lister for them. A DaemonSet pod (owner or annotation) whose
    owner is an ``apps`` DaemonSet needs that DaemonSet to exist; other owners of
    DaemonSet pods are not checked (upstream's replicacount rule).
    """

    name = "ReplicaCount"

    def drainable(self, ctx: DrainContext, pod: Pod) -> Outcome:
        owner = pod.owner
        if not ctx.skip_custom_controller_pods or owner is None:
            return UNDEFINED
        kind = owner.kind
        if kind == "DaemonSet" or (pod.daemonset_annotation and kind != "ReplicationController"):
            if kind != "DaemonSet" or _api_group(owner.api_version) not in ("", "apps"):
                return UNDEFINED
            if ("DaemonSet", pod.namespace, owner.name) not in ctx.controllers:
                return Outcome.block(
                    BlockingReason.CONTROLLER_NOT_FOUND,
                    f"DaemonSet {pod.namespace}/{owner.name} of {pod.ref} is not in the snapshot",
                )
            return UNDEFINED
        if kind not in REPLICATED_KINDS:
            return UNDEFINED
        if kind == "StatefulSet" and _api_group(owner.api_version) not in ("", "apps"):
            return UNDEFINED
        controller = ctx.controllers.get((kind, pod.namespace, owner.name))
        if controller is None:
            return Outcome.block(
                BlockingReason.CONTROLLER_NOT_FOUND,
                f"{kind} {pod.namespace}/{owner.name} of {pod.ref} is not in the snapshot",
            )
        if (
            kind in ("ReplicationController", "ReplicaSet")
            and controller.replicas is not None
            and controller.replicas < ctx.min_replica_count
        ):
            return Outcome.block(
                BlockingReason.MIN_REPLICAS_REACHED,
                f"{kind} {pod.namespace}/{owner.name} of {pod.ref} has {controller.replicas} replicas,"
                f" fewer than --min-replica-count={ctx.min_replica_count}",
            )
        return UNDEFINED


def _api_group(api_version: str) -> str:
    # "apps/v1" -> "apps"; core "v1" and an unknown (empty) version -> "". An unknown
    # version is treated as apps, since the converter may not have recorded it.
    return api_version.split("/", 1)[0] if "/" in api_version else ""


class DaemonSet:
    """DaemonSet pods: deleted with the node, never rescheduled (the DaemonSet runs one per node)."""

    name = "DaemonSet"

    def drainable(self, ctx: DrainContext, pod: Pod) -> Outcome:
        return _DAEMON if pod.is_daemonset else UNDEFINED


class SafeToEvict:
    """``safe-to-evict: "true"``: the owner vouches for the pod; no blocking rule applies."""

    name = "SafeToEvict"

    def drainable(self, ctx: DrainContext, pod: Pod) -> Outcome:
        return DRAIN if pod.safe_to_evict is True else UNDEFINED


class Terminal:
    """Pods that will never run again: nothing can be lost by evicting them.

    Upstream's ``IsPodTerminal``: Failed, or Succeeded with ``restartPolicy`` Never or
    OnFailure (with Always the kubelet would start it again).
    """

    name = "Terminal"

    def drainable(self, ctx: DrainContext, pod: Pod) -> Outcome:
        terminal = pod.phase == "Failed" or (pod.phase == "Succeeded" and pod.restart_policy in ("Never", "OnFailure"))
        return DRAIN if terminal else UNDEFINED


class OnCompletion:
    """``safe-to-evict: "on-completion"``: the pod finishes on its own, and its node waits for it."""

    name = "OnCompletion"

    def drainable(self, ctx: DrainContext, pod: Pod) -> Outcome:
        return _WAIT if pod.evict_on_completion else UNDEFINED


class Replicated:
    """A pod nobody would recreate blocks its node (``NotReplicated``).

    Any controller counts, unless ``--skip-nodes-with-custom-controller-pods`` narrows
    it to the kinds upstream knows. Missing controller objects are ReplicaCount's
    concern (it runs earlier, under the same flag), so they are not looked up again.
    """

    name = "Replicated"

    def drainable(self, ctx: DrainContext, pod: Pod) -> Outcome:
        owner = pod.owner
        replicated = owner is not None
        if owner is not None and ctx.skip_custom_controller_pods:
            replicated = owner.kind in REPLICATED_KINDS
        if replicated:
            return UNDEFINED
        if owner is None:
            detail = f"{pod.ref} has no controller"
        else:
            detail = f"{pod.ref} is owned by {owner.kind} {owner.name}, not a known controller kind"
        return Outcome.block(BlockingReason.NOT_REPLICATED, detail)


class System:
    """kube-system pods without a PDB, with ``--skip-nodes-with-system-pods``.

    Upstream's reading: a PDB on a system pod is the owner's statement that it may be
    disrupted; without one, moving cluster plumbing is not the autoscaler's call, until
    the pod is older than ``--blocking-system-pod-distruption-timeout`` (CA >= 1.33):
    then it is moved like any pod. A pod without a creation time keeps blocking.
    """

    name = "System"

    def drainable(self, ctx: DrainContext, pod: Pod) -> Outcome:
        if not ctx.skip_system_pods or pod.namespace != SYSTEM_NAMESPACE:
            return UNDEFINED
        if ctx.pdbs.matching(pod):
            return UNDEFINED
        if pod.created is not None and ctx.now > pod.created + ctx.system_pod_timeout:
            return DRAIN
        return Outcome.block(
            BlockingReason.UNMOVABLE_KUBE_SYSTEM_POD, f"{pod.ref} is a kube-system pod without a PDB"
        )


class NotSafeToEvict:
    """``safe-to-evict: "false"``: the owner forbids eviction by the autoscaler."""

    name = "NotSafeToEvict"

    def drainable(self, ctx: DrainContext, pod: Pod) -> Outcome:
        if pod.safe_to_evict is False:
            return Outcome.block(
                BlockingReason.NOT_SAFE_TO_EVICT_ANNOTATION, f"{pod.ref} is annotated safe-to-evict=false"
            )
        return UNDEFINED


class LocalStorage:
    """hostPath and disk-backed emptyDir volumes, with ``--skip-nodes-with-local-storage``.

    Their data dies with the node. Volumes named in ``safe-to-evict-local-volumes`` are
    declared disposable. PVCs of the migratable local provisioner are not in
    ``Pod.local_volumes``: they move with the pod (storage-semantics 3.2).
    """

    name = "LocalStorage"

    def drainable(self, ctx: DrainContext, pod: Pod) -> Outcome:
        if not ctx.skip_local_storage or not pod.local_volumes:
            return UNDEFINED
        blocking = [
            f"{name} ({source.value})"
            for name, source in pod.local_volumes
            if name not in pod.safe_to_evict_local_volumes
        ]
        if not blocking:
            return UNDEFINED
        return Outcome.block(
            BlockingReason.LOCAL_STORAGE_REQUESTED, f"{pod.ref} has local storage: {', '.join(blocking)}"
        )


class Pdb:
    """A PDB covering the pod with no disruption left in this pass blocks the node.

    Only the "none left" case blocks here; whether all of a node's pods fit the budget
    together is ``PdbTracker.can_remove``/``in_parallel``, as upstream.
    """

    name = "Pdb"

    def drainable(self, ctx: DrainContext, pod: Pod) -> Outcome:
        pdb = ctx.pdbs.blocking_pdb(pod)
        if pdb is None:
            return UNDEFINED
        return Outcome.block(
            BlockingReason.NOT_ENOUGH_PDB,
            f"{pod.ref} is covered by PDB {pdb.ref} with {ctx.pdbs.remaining(pdb)} disruptions left",
        )


DEFAULT_RULES: tuple[Rule, ...] = (
    Mirror(),
    LongTerminating(),
    Guard(),
    ReplicaCount(),
    DaemonSet(),
    SafeToEvict(),
    Terminal(),
    OnCompletion(),
    Replicated(),
    System(),
    NotSafeToEvict(),
    LocalStorage(),
    Pdb(),
)

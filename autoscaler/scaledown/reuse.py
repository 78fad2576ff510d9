"""Incremental scale-down: the last removal pass is kept while nothing it read has changed.

The removal pass (``planner._per_node_pass``, ``cluster_wide.plan_cluster_wide``) is a
pure function of the loop's context: the cluster objects (of the pods, the scheduled
ones and the pending ones filter-out-schedulable fitted onto nodes), the nodes' groups and
readiness, the upcoming template copies in the snapshot, the groups' sizes and prices,
the options, the ordered candidates and the nodes holding pinned local volumes, and
``now``, which it reads only to tell long-terminating pods (a pod's deletion time plus
its grace period plus a margin). ``PassInputs`` captures all of it; when this loop's
inputs match the last recorded ones, the last verdicts are this loop's verdicts, and
the pass is not run. When only per-node inputs changed (``changed_nodes``), the
verdicts that still stand are replayed and the rest simulated (``replay.py``); each
candidate's ``Step`` records what that needs: how far into the node order it looked,
where its pods landed, which pod found no place.

"Matches" is identity first: the live adapter's caches and the emulator keep the same
frozen object while it is unchanged, so comparing 300,000 pods is one pass of ``is``
over two lists. Objects that are rebuilt every loop (a PDB's status, a namespace's
labels, the upcoming template copies) fall back to ``==``, which on frozen dataclasses
compares every field. Order matters (it decides first-fit placements), so lists and
dicts compare in order. A pass that hit ``--scale-down-simulation-timeout`` is not
kept: its verdicts depend on the clock.

The record lives in ``ScaleDownMemory.last_pass``; the planner returns the record to
keep in its ``ScaleDownPlan`` and only the loop stores it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from autoscaler.config import Options
from autoscaler.context import LoopContext, same, shallow_copy
from autoscaler.scaledown.eligibility import Candidate
from autoscaler.scaledown.types import RemovalCandidate, Unremovable
from cloudproviders.interface import price_of
from kube.model import ClusterObjects, Pod
from simulator.drainability.rules import LONG_TERMINATING_EXTRA_SECONDS as DRAIN_EXTRA
from simulator.drainability.rules import SYSTEM_NAMESPACE
from simulator.utilization import LONG_TERMINATING_EXTRA_SECONDS as UTIL_EXTRA

__all__ = ["ALL", "PassInputs", "PassRecord", "Step", "changed_nodes", "pass_inputs", "reusable", "same"]

#: ClusterObjects fields the removal pass does not read (the pass is unaffected by them). Of the
#: pods it reads each node's (``LoopContext.pods_by_node``, the snapshot: the scheduled ones and
#: the pending ones filter-out-schedulable fitted there), kept in ``PassInputs.by_node``, with
#: those placements in ``PassInputs.placed``; other pending pods do not change a removal verdict.
_NOT_READ = frozenset({"warnings", "priority_config", "pods"})


@dataclass(frozen=True, slots=True)
class PassInputs:
    """Everything one removal pass read, held by reference (compared with ``same``)."""

    options: Options
    #: The ClusterObjects fields, in declaration order (see ``_NOT_READ``).
    objects: tuple[object, ...]
    #: (node, group, readiness, waiting for storage) per node of the cluster state.
    states: tuple[tuple[object, ...], ...]
    #: The snapshot's nodes past the live ones (upcoming template copies), with their pods and roles.
    added: tuple[tuple[object, ...], ...]
    #: (name, target size, min size, price) per group.
    groups: tuple[tuple[object, ...], ...]
    #: (name, group, looks empty) of the candidates, in the pass's order.
    candidates: tuple[tuple[str, str, bool], ...]
    local_volumes: dict[str, list[str]]
    mode: str
    #: Pending pods filter-out-schedulable fitted onto nodes (they count as running there).
    placed: tuple[tuple[Pod, str], ...] = ()
    #: The snapshot's live nodes in index order (``Step.reach`` indexes them).
    names: tuple[str, ...] = ()
    #: Each node's pods as the pass read them (scheduled ones and placed pending ones).
    by_node: dict[str, list[Pod]] = dataclasses.field(default_factory=dict)
    #: Whether a pass over these inputs may be replayed in part (``replay.py``): no pod with
    #: required anti-affinity runs (its domain reaches past any node index) and no claim is
    #: ReadWriteOncePod (its users are cluster-wide).
    per_node: bool = False


@dataclass(frozen=True, slots=True)
class PassRecord:
    """One pass's inputs and its verdicts, in the order the pass produced them."""

    inputs: PassInputs
    #: When the pass ran, and the instants at which a scheduled pod becomes long-terminating.
    now: float
    flips: tuple[float, ...]
    removable: tuple[RemovalCandidate, ...]
    unremovable: tuple[Unremovable, ...]
    #: Per candidate, in the pass's order, what a later pass needs to replay it (per-node mode only).
    steps: tuple[Step, ...] | None = None
    #: How many leading candidates this pass replayed from the one before instead of simulating.
    replayed: int = 0


#: ``Step.reach`` of a verdict that depends on every node.
ALL = 2**62


@dataclass(frozen=True, slots=True)
class Step:
    """One candidate's verdict in a pass, and what its simulation looked at."""

    candidate: tuple[str, str, bool]
    verdict: RemovalCandidate | Unremovable
    #: The node index each moved pod was placed on, in the order they were moved.
    dests: tuple[int, ...] = ()
    #: Whether the verdict came from simulating the removal (not local volumes, a budget, the time limit).
    simulated: bool = True
    #: The moving pod (its index in moving order) that found no place; -1 when none failed.
    failed: int = -1
    #: Whether a placement depended on pods on other nodes (affinity, spread, anti-affinity anywhere).
    elsewhere: bool = False

    @property
    def reach(self) -> int:
        """The highest node index the verdict depends on: first fit depends on the nodes up to
        the one chosen (-1: no other node, e.g. a drain rule); ``ALL`` when a pod found no
        place or its placement depended on pods elsewhere."""
        if self.failed >= 0 or self.elsewhere:
            return ALL
        return max(self.dests, default=-1)


#: The ClusterObjects fields in ``PassInputs.objects``, in order.
_OBJECT_FIELDS = tuple(f.name for f in dataclasses.fields(ClusterObjects) if f.name not in _NOT_READ)


def pass_inputs(sim: LoopContext, ordered: list[Candidate], local_volumes: dict[str, list[str]]) -> PassInputs:
    objects = sim.objects
    # Copies of the containers: a cluster API may refill the same list or dict in place.
    fields = tuple(shallow_copy(getattr(objects, f.name)) for f in dataclasses.fields(objects)
                   if f.name not in _NOT_READ)
    snap = sim.snapshot
    added = tuple((snap.nodes[i], snap.roles[i], tuple(snap.pods_on[i])) for i in range(snap.base_count, snap.count))
    cluster_wide = sim.options.scale_down.mode == "cluster-wide"
    groups = tuple((name, g.target_size(), g.min_size(), price_of(g) if cluster_wide else None)
                   for name, g in sim.state.groups.items())
    return PassInputs(
        options=sim.options,
        objects=fields,
        states=tuple((s.node, s.group, s.readiness, s.waiting_for_storage) for s in sim.state.nodes),
        added=added,
        groups=groups,
        candidates=tuple((c.name, c.group, c.looks_empty) for c in ordered),
        local_volumes=local_volumes,
        mode=str(sim.options.scale_down.mode),
        placed=sim.placed,
        names=tuple(snap.nodes[i].name for i in range(snap.base_count)),
        by_node=dict(sim.pods_by_node),
        per_node=not snap.anti_affinity_pods and not sim.volumes.has_rwop_claims,
    )


def termination_flips(sim: LoopContext) -> tuple[float, ...]:
    """The instants at which a verdict of the pass can change with time alone.

    When each scheduled pod being deleted turns long-terminating (utilization and drain
    rules), and when each kube-system pod becomes old enough to be moved
    (``--blocking-system-pod-distruption-timeout``, the ``System`` drain rule).
    """
    timeout = sim.options.scale_down.blocking_system_pod_disruption_seconds
    flips: set[float] = set()
    for pods in sim.pods_by_node.values():
        for p in pods:
            if p.deleted is not None:
                flips.add(p.deleted + p.grace_seconds + UTIL_EXTRA)
                flips.add(p.deleted + p.grace_seconds + DRAIN_EXTRA)
            if p.namespace == SYSTEM_NAMESPACE and p.created is not None:
                flips.add(p.created + timeout)
    return tuple(sorted(flips))


def reusable(record: PassRecord | None, inputs: PassInputs, now: float) -> bool:
    """Whether ``record``'s verdicts are the verdicts a pass over ``inputs`` at ``now`` would reach."""
    if record is None or not _same_setting(record, inputs, now):
        return False
    old = record.inputs
    if not same(old.candidates, inputs.candidates) or not same(old.local_volumes, inputs.local_volumes):
        return False
    if not same(old.states, inputs.states) or not same(old.by_node, inputs.by_node):
        return False
    return same(old.objects, inputs.objects) and same(old.placed, inputs.placed)


def _same_setting(record: PassRecord, inputs: PassInputs, now: float) -> bool:
    """What every reuse needs unchanged: options, mode, groups, upcoming nodes, and no time flip."""
    old = record.inputs
    if not (old.options is inputs.options or old.options == inputs.options) or old.mode != inputs.mode:
        return False
    if not same(old.groups, inputs.groups) or not same(old.added, inputs.added):
        return False
    return not _flipped(record, now)


def _flipped(record: PassRecord, now: float) -> bool:
    """Whether a flip instant of the recorded pods lies between the record's ``now`` and this one."""
    lo, hi = min(record.now, now), max(record.now, now)
    return any(lo <= t < hi for t in record.flips)


def changed_nodes(record: PassRecord | None, inputs: PassInputs, now: float) -> set[str] | None:
    """The live nodes whose own inputs changed since ``record``; None when a change is not per node.

    Per node: the Node and its state (group, readiness), its pods (scheduled and placed),
    its pinned local volumes. Everything else the pass reads (options, groups, the other
    objects, upcoming nodes, time flips) must be unchanged, or the whole pass runs again;
    the candidates' order is compared step by step by the replay (``replay.py``).
    """
    if record is None or record.steps is None or not _same_setting(record, inputs, now):
        return None
    old = record.inputs
    if not (old.per_node and inputs.per_node) or old.names != inputs.names:
        return None
    nodes_at = _OBJECT_FIELDS.index("nodes")
    if not same(old.objects[:nodes_at] + old.objects[nodes_at + 1:],
                inputs.objects[:nodes_at] + inputs.objects[nodes_at + 1:]):
        return None
    changed: set[str] = set()
    old_states = {state[0].name: state for state in old.states}  # type: ignore[attr-defined]
    for state in inputs.states:
        name = state[0].name  # type: ignore[attr-defined]
        before = old_states.pop(name, None)
        if before is None or not same(before, state):
            changed.add(name)
    changed.update(old_states)
    for name in old.by_node.keys() | inputs.by_node.keys():
        if not same(old.by_node.get(name), inputs.by_node.get(name)):
            changed.add(name)
    for name in old.local_volumes.keys() | inputs.local_volumes.keys():
        if old.local_volumes.get(name) != inputs.local_volumes.get(name):
            changed.add(name)
    live = set(inputs.names)
    if not changed <= live:
        return None  # pods or state of a node the snapshot does not hold: not a per-node change
    return changed

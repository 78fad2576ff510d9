"""Per pod and per node verdicts, read from one loop's decision (never re-derived).

A pod is ``TriggersScaleUp`` iff the plan's ``triggeredBy`` has it, ``NoScaleUp`` iff
its ``stillUnschedulable`` has it (with the same per-group reasons), ``Fits*Node`` iff
filter-out-schedulable placed it; a node is ``Removable`` iff the plan removed it,
``Unneeded`` iff it is unneeded but not removed, ``Unremovable`` iff the plan says so,
with the same reason. Only pods and nodes the loop did not consider get a reason of
explain's own (``NotConsidered``, ``NotCandidate``), naming why the loop skipped them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from app.explain.storage import StorageFacts, StoragePlugins
from autoscaler.config import Options
from autoscaler.context import is_expendable
from autoscaler.runonce import LoopDecision, NodeReport
from autoscaler.scaledown.cost import drain_deadline
from autoscaler.scaledown.types import RemovalCandidate, Unremovable, UnremovableReason
from kube.model import ClusterObjects, Pod

__all__ = ["GroupAnswer", "NodeExplanation", "PodExplanation", "PodMove", "explain_nodes", "explain_pods",
           "node_verdicts", "storage_details"]


@dataclass(frozen=True, slots=True)
class GroupAnswer:
    node_group: str
    fits: bool
    reason: str = ""
    plugin: str = ""
    objects: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class PodExplanation:
    pod: str
    verdict: str
    node: str | None = None
    node_group: str | None = None
    reason: str = ""
    node_groups: tuple[GroupAnswer, ...] = ()


@dataclass(frozen=True, slots=True)
class PodMove:
    pod: str
    destination: str | None
    blocker: str | None
    unpin_bytes: int


@dataclass(frozen=True, slots=True)
class NodeExplanation:
    node: str
    verdict: str
    reason: str = ""
    detail: str = ""
    node_group: str | None = None
    utilization: dict[str, float] = field(default_factory=dict)
    threshold: float = 0.0
    pods: tuple[PodMove, ...] = ()
    bytes_to_unpin: int = 0
    #: Removable and unneeded nodes: the predicted unpin time of ``bytes_to_unpin`` and the drain
    #: deadline it gives (s, ``autoscaler/scaledown/cost.py``); None for the others.
    unpin_seconds: float | None = None
    drain_deadline_seconds: float | None = None


def _not_considered(pod: Pod, decision: LoopDecision, options: Options) -> str:
    """Why the loop's scale-up did not look at a pod (the filters of ``pending_pods``)."""
    if pod.node_name:
        return f"scheduled on node {pod.node_name}"
    if pod.is_terminal:
        return "the pod has finished"
    if pod.deleted is not None:
        return "the pod is being deleted"
    if pod.is_daemonset:
        return "a DaemonSet pod: new nodes get their own"
    if is_expendable(pod, options):
        return (f"expendable: priority {pod.priority} is below --expendable-pods-priority-cutoff "
                f"({options.scale_up.expendable_priority_cutoff})")
    delay = options.scale_up.new_pod_scale_up_delay
    if pod.created is not None and decision.now - pod.created < delay:
        return f"younger than --new-pod-scale-up-delay ({delay:g}s)"
    return "not marked unschedulable by the scheduler yet (PodScheduled=False, reason Unschedulable)"


def explain_pods(decision: LoopDecision, objects: ClusterObjects, options: Options,
                 pods: list[Pod]) -> list[PodExplanation]:
    up = decision.scale_up
    facts = StorageFacts.of(objects, options.storage)
    triggered = {p.ref for p in up.triggered_by}
    placed = {pod.ref: node for pod, node in up.placed}
    existing = {p.ref for p in up.fits_existing}
    upcoming = {p.ref for p in up.fits_upcoming}
    out = []
    for pod in pods:
        ref = pod.ref
        if ref in triggered:
            answer = GroupAnswer(up.chosen or "", True)
            out.append(PodExplanation(ref, "TriggersScaleUp", node_group=up.chosen, node_groups=(answer,)))
        elif ref in existing or ref in upcoming:
            verdict = "FitsExistingNode" if ref in existing else "FitsUpcomingNode"
            out.append(PodExplanation(ref, verdict, node=placed.get(ref)))
        elif ref in up.still_unschedulable:
            out.append(PodExplanation(ref, "NoScaleUp", node_groups=_refusals(pod, decision, facts),
                                      reason="no node group can take it now"))
        else:
            out.append(PodExplanation(ref, "NotConsidered", reason=_not_considered(pod, decision, options)))
    return out


def _refusals(pod: Pod, decision: LoopDecision, facts: StorageFacts) -> tuple[GroupAnswer, ...]:
    up = decision.scale_up
    lines = up.still_unschedulable[pod.ref]
    detail = up.refusals.get(pod.ref, {})
    answers = []
    for group, reason in sorted(lines.items()):
        refusal = detail.get(group)
        plugin = refusal.plugin if refusal is not None else ""
        objects: tuple[str, ...] = ()
        notes: tuple[str, ...] = ()
        if plugin in StoragePlugins:
            found, said = facts.claim_objects(pod)
            objects, notes = tuple(found), tuple(said)
        answers.append(GroupAnswer(group, False, reason, plugin, objects, notes))
    return tuple(answers)


def storage_details(decision: LoopDecision, objects: ClusterObjects, options: Options) -> dict[str, str]:
    """pod ref -> one line naming the objects behind its storage refusals (for NotTriggerScaleUp events)."""
    up = decision.scale_up
    storage_refused = [ref for ref, by_group in up.refusals.items()
                       if ref in up.still_unschedulable and any(r.plugin in StoragePlugins for r in by_group.values())]
    if not storage_refused:
        return {}
    facts = StorageFacts.of(objects, options.storage)
    by_ref = {p.ref: p for p in objects.pods if p.ref in set(storage_refused)}
    out = {}
    for ref in storage_refused:
        pod = by_ref.get(ref)
        if pod is None:
            continue
        found, notes = facts.claim_objects(pod)
        out[ref] = "; ".join(notes) if notes else ", ".join(found)
    return out


def _candidates(decision: LoopDecision) -> dict[str, RemovalCandidate]:
    down = decision.scale_down
    found = {c.node: c for c in down.to_delete}
    if down.last_pass is not None:
        for cand in down.last_pass.removable:
            found.setdefault(cand.node, cand)
    return found


#: Unremovable reasons about the node's pods: only these list them.
_POD_REASONS = frozenset({UnremovableReason.NO_PLACE_TO_MOVE_PODS, UnremovableReason.BLOCKED_BY_POD,
                          UnremovableReason.NODE_HAS_LOCAL_VOLUMES})

#: The pod an unremovable node's detail names ("pod ns/x: NotReplicated", "no place to move pod ns/x").
_NAMED_POD = re.compile(r"\bpod ([^\s:]+)")


def _moves(cand: RemovalCandidate | None, pods: list[Pod], detail: str, node: str,
           facts: StorageFacts) -> tuple[PodMove, ...]:
    """Each pod's destination (removable nodes) or blocker (the pod the plan's detail names)."""
    moving = cand.drain.to_move if cand is not None else tuple(pods)
    named = _NAMED_POD.search(detail)
    blocking = named.group(1) if named else None
    out = []
    for pod in moving:
        destination = cand.destinations.get(pod.ref) if cand is not None else None
        out.append(PodMove(pod.ref, destination, detail if pod.ref == blocking else None,
                           facts.unpin_bytes(pod, node)))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class _Verdicts:
    """One loop's scale-down verdicts by node: the plan's lists, read once."""

    removed: frozenset[str]
    unneeded: frozenset[str]
    unremovable: dict[str, Unremovable]
    waiting: str
    skipped: str

    @classmethod
    def of(cls, decision: LoopDecision) -> _Verdicts:
        down = decision.scale_down
        return cls(frozenset(down.removed), frozenset(down.unneeded), {u.node: u for u in down.unremovable},
                   down.waiting or "not unneeded long enough yet", down.skipped_because)

    def classify(self, name: str, known: bool) -> tuple[str, str, str]:
        """(verdict, reason, detail) of one node; Removable and Unneeded before Unremovable, as plan lists them."""
        if name in self.removed:
            return "Removable", "", ""
        if name in self.unneeded:
            return "Unneeded", self.waiting, ""
        kept = self.unremovable.get(name)
        if kept is not None:
            return "Unremovable", str(kept.reason), kept.detail
        why = self.skipped or ("not a scale-down candidate this loop" if known else "no such node in the cluster")
        return "NotCandidate", why, ""


def node_verdicts(decision: LoopDecision) -> dict[str, str]:
    """node -> one line of its scale-down verdict (the ``--explain-node-annotation`` value)."""
    verdicts = _Verdicts.of(decision)
    out = {}
    for report in decision.nodes:
        verdict, reason, detail = verdicts.classify(report.name, True)
        out[report.name] = ": ".join(part for part in (verdict, reason, detail) if part)
    return out


def _utilization(report: NodeReport | None) -> dict[str, float]:
    if report is None:
        return {}
    util = {"cpu": round(report.utilization.cpu, 4), "memory": round(report.utilization.memory, 4)}
    if report.utilization.storage is not None:
        util["storage"] = round(report.utilization.storage, 4)
    return util


def explain_nodes(decision: LoopDecision, objects: ClusterObjects, options: Options,
                  names: list[str]) -> list[NodeExplanation]:
    facts = StorageFacts.of(objects, options.storage)
    verdicts = _Verdicts.of(decision)
    candidates = _candidates(decision)
    unpin_bytes = decision.scale_down.unpin_bytes  # the planner's own count (cost.py)
    # The throughput the plan's drain deadlines assumed (the flag for a one-off decision).
    observed = decision.scale_down.unpin_bytes_per_second
    rate = observed or options.scale_down.unpin_bytes_per_second
    reports = {n.name: n for n in decision.nodes}
    wanted = set(names)
    pods_by_node: dict[str, list[Pod]] = {}
    for pod in objects.pods:
        if pod.node_name in wanted and not pod.is_terminal:
            pods_by_node.setdefault(pod.node_name, []).append(pod)
    out = []
    for name in names:
        report = reports.get(name)
        verdict, reason, detail = verdicts.classify(name, report is not None)
        answer = NodeExplanation(name, verdict, reason, detail, report.group if report else None,
                                 _utilization(report), options.scale_down.utilization_threshold)
        if verdict in ("Removable", "Unneeded"):
            moves = _moves(candidates.get(name), pods_by_node.get(name, []), "", name, facts)
            unpin = unpin_bytes.get(name, 0)
            answer = replace(answer, pods=moves, bytes_to_unpin=unpin, unpin_seconds=round(unpin / rate, 1),
                             drain_deadline_seconds=round(drain_deadline(unpin, options, bytes_per_second=observed), 1))
        elif verdict == "Unremovable":
            # Pods matter where they are the reason; a node kept for its utilization or its
            # group's bounds lists none (at 5,000 nodes that would be every pod of the cluster).
            pods = pods_by_node.get(name, []) if reason in _POD_REASONS else []
            answer = replace(answer, pods=_moves(None, pods, detail, name, facts),
                             bytes_to_unpin=unpin_bytes.get(name, 0))
        out.append(answer)
    return out

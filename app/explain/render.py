"""``explain``'s output: JSON for tools (version 1), text for people."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from app.explain.storage import size
from app.explain.verdicts import NodeExplanation, PodExplanation

__all__ = ["to_json", "to_text"]


def _pod(e: PodExplanation) -> dict[str, Any]:
    return {"pod": e.pod, "verdict": e.verdict, "node": e.node, "nodeGroup": e.node_group, "reason": e.reason,
            "nodeGroups": [{"nodeGroup": g.node_group, "fits": g.fits, "reason": g.reason, "plugin": g.plugin,
                            "objects": list(g.objects), "notes": list(g.notes)} for g in e.node_groups]}


def _node(e: NodeExplanation) -> dict[str, Any]:
    return {"node": e.node, "verdict": e.verdict, "reason": e.reason, "detail": e.detail, "nodeGroup": e.node_group,
            "utilization": e.utilization, "threshold": e.threshold,
            "pods": [{"pod": m.pod, "destination": m.destination, "blocker": m.blocker, "unpinBytes": m.unpin_bytes}
                     for m in e.pods],
            "bytesToUnpin": e.bytes_to_unpin, "predictedUnpinSeconds": e.unpin_seconds,
            "drainDeadlineSeconds": e.drain_deadline_seconds}


def to_json(pods: Sequence[PodExplanation], nodes: Sequence[NodeExplanation]) -> dict[str, Any]:
    return {"version": 1, "pods": [_pod(e) for e in pods], "nodes": [_node(e) for e in nodes]}


def _pod_text(e: PodExplanation) -> list[str]:
    head = {"TriggersScaleUp": f"triggers a scale-up of {e.node_group}",
            "FitsExistingNode": f"fits existing node {e.node}",
            "FitsUpcomingNode": f"fits upcoming node {e.node}",
            "NoScaleUp": "no node group can take it",
            "NotConsidered": f"not considered: {e.reason}"}[e.verdict]
    lines = [f"pod/{e.pod}: {e.verdict}: {head}"]
    for g in e.node_groups:
        if g.fits:
            continue
        lines.append(f"  {g.node_group}: {g.reason} [{g.plugin}]")
        lines.extend(f"    {obj}" for obj in g.objects)
        lines.extend(f"    - {note}" for note in g.notes)
    return lines


def _node_text(e: NodeExplanation) -> list[str]:
    util = ", ".join(f"{k} {v:.0%}" for k, v in e.utilization.items())
    why = f": {e.reason}" if e.reason else ""
    lines = [f"node/{e.node}: {e.verdict}{why}" + (f" ({e.detail})" if e.detail else "")]
    if util:
        lines.append(f"  utilization {util} (threshold {e.threshold:.0%})")
    for m in e.pods:
        where = f"-> {m.destination}" if m.destination else (f"blocked: {m.blocker}" if m.blocker else "")
        unpin = f", unpins {size(m.unpin_bytes)}" if m.unpin_bytes else ""
        lines.append(f"  {m.pod} {where}{unpin}".rstrip())
    if e.bytes_to_unpin:
        lines.append(f"  bytes to unpin: {size(e.bytes_to_unpin)}")
    if e.drain_deadline_seconds is not None:
        lines.append(f"  predicted unpin time {e.unpin_seconds:g}s, drain deadline {e.drain_deadline_seconds:g}s")
    return lines


def to_text(pods: Sequence[PodExplanation], nodes: Sequence[NodeExplanation]) -> str:
    lines: list[str] = []
    for pod in pods:
        lines.extend(_pod_text(pod))
    for node in nodes:
        lines.extend(_node_text(node))
    return "\n".join(lines) + "\n" if lines else "nothing to explain\n"

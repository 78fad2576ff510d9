"""``--dry-run``: the decision alone, with the memory a real loop keeps, and what it would do.

A dry run is a shadow beside a running Cluster Autoscaler: it decides every loop as
the live loop would and changes nothing (the guarded seams refuse every change), under
a Lease and a status ConfigMap of its own (``app.run.flagtable``: ``storage-autoscaler-
shadow`` and ``storage-autoscaler-shadow-status`` unless given), so it never takes CA's
Lease or overwrites CA's status. Events: those CA puts on its status ConfigMap go on the
shadow's own ConfigMap, never CA's; those on pods and nodes (which belong to neither)
are written too, each message prefixed ``(dry run)``, so an operator sees what the
shadow would have done where CA's own events appear.

It keeps what the library loop keeps between iterations (``autoscaler.loop``): how long
each node has been unneeded and the last removal pass. Without that memory no node
would ever be unneeded long enough and a shadow would never show a scale-down while
``--scale-down-unneeded-time`` is above zero. ``would_do`` is its per-loop line: what a
real loop would change now, and which unneeded nodes it would remove, and when.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from app.run.seams import GuardedCluster, GuardedProvider
from autoscaler.config import Options
from autoscaler.flagspec import go_duration
from autoscaler.runonce import LoopDecision, run_once
from autoscaler.scaledown.types import ScaleDownMemory
from autoscaler.templates import TemplateNode

__all__ = ["DryRun", "would_do"]


@dataclass(slots=True)
class DryRun:
    """The decision alone, with the memory the real loop keeps (unneeded-since times, templates)."""

    cluster: GuardedCluster
    provider: GuardedProvider
    options: Options
    memory: ScaleDownMemory = field(default_factory=ScaleDownMemory)
    templates: dict[str, TemplateNode] = field(default_factory=dict)

    def decide(self, now: float) -> LoopDecision:
        objects = self.cluster.list_objects()
        decision = run_once(objects, self.provider, self.options, now, memory=self.memory,
                            template_cache=self.templates)
        # As Autoscaler.run_once: the plan carries this loop's unneeded times for the next.
        self.memory = dataclasses.replace(self.memory, unneeded_since=decision.scale_down.unneeded_since,
                                          last_pass=decision.scale_down.last_pass)
        return decision


def _removal_reason(ready: bool, empty: bool) -> str:
    return "unready" if not ready else "empty" if empty else "underutilized"


def would_do(decision: LoopDecision, options: Options) -> str:
    """One line: the scale-up and removals a real loop would make now, and the nodes waiting to go."""
    parts: list[str] = []
    for inc in decision.scale_up.increases:
        parts.append(f"would scale up {inc.group} {inc.new_size - inc.delta}->{inc.new_size} "
                     f"for {len(decision.scale_up.triggered_by)} pending pod(s)")
    down = decision.scale_down
    chosen = {c.node for c in down.to_delete}
    for cand in down.to_delete:
        parts.append(f"would remove node {cand.node} of {cand.group} ({_removal_reason(cand.ready, cand.empty)}, "
                     f"{len(cand.drain.to_move)} pod(s) to move)")
    for node in down.unneeded:
        if node not in chosen:
            parts.append(_waiting(node, decision, options))
    return "; ".join(parts) if parts else "would change nothing"


def _waiting(node: str, decision: LoopDecision, options: Options) -> str:
    """An unneeded node not removed now: for how long, and when it would be (or why not yet)."""
    down = decision.scale_down
    since = down.unneeded_since.get(node, decision.now)
    left = max(0.0, since + options.scale_down.unneeded_seconds - decision.now)
    text = f"node {node} unneeded for {go_duration(round(decision.now - since))}"
    if left:
        return f"{text}, removable in {go_duration(round(left))}"
    return f"{text}, held back: {down.waiting or down.skipped_because or 'not chosen this loop'}"

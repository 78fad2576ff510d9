"""Partial reuse of the last removal pass: which recorded verdicts still stand, and how to go on.

When only per-node inputs changed since the last pass (``reuse.changed_nodes``), its
steps are walked in order with the set of *changed* node indices:

* a step whose candidate is at the same place, on an unchanged node, and that looked no
  further into the node order than the first changed node stands as it is;
* a removal that looked further is replayed with checks: each pod must fit no changed
  node before its destination, and its destination if that changed
  (``RemovalPass.replay``); a "no place to move pod" verdict is confirmed when the
  failing pod fits no changed node (``RemovalPass.replay_failure``). Every unchanged
  node is as the last pass saw it, so first fit would decide the same;
* any other candidate is simulated again, and the walk goes on when the new verdict
  leaves the pass's shared state as the old one did (``absorb``): both unremovable
  (nothing was committed), or both removable moving the same pods, each matched by the
  same PDBs as before (the same budgets spent). The nodes its old and new pods landed on join the changed set.
  Otherwise the walk ends and the rest of the pass is simulated.

Steps whose placement depended on pods on other nodes (affinity, spread) are never
taken as they are; a pass with anti-affinity pods anywhere, or ReadWriteOncePod claims,
is not replayed at all (``PassInputs.per_node``).
"""

from __future__ import annotations

from collections.abc import Callable

from autoscaler.scaledown.eligibility import Candidate
from autoscaler.scaledown.reuse import Step
from autoscaler.scaledown.types import RemovalCandidate, Unremovable
from kube.model import Pod

__all__ = ["Replay"]


class Replay:
    """The last pass's steps and the changed node indices; the walk's only state."""

    def __init__(self, steps: tuple[Step, ...], changed: set[int]) -> None:
        self.steps = steps
        self._changed = changed
        self.changed: tuple[int, ...] = tuple(sorted(changed))

    def step(self, position: int, cand: Candidate) -> Step | None:
        """The recorded step of the same candidate at the same place, if there is one."""
        if position >= len(self.steps):
            return None
        step = self.steps[position]
        return step if step.candidate == (cand.name, cand.group, cand.looks_empty) else None

    def checks(self, step: Step, index: int) -> tuple[int, ...] | None:
        """How ``step`` may be reused: ``()`` as it is, the changed nodes to check, or None (simulate)."""
        if index in self._changed or not step.simulated:
            return None
        if not self.changed or step.reach < self.changed[0]:
            return ()
        if step.elsewhere:
            return None
        if isinstance(step.verdict, RemovalCandidate) or step.failed >= 0:
            return self.changed
        return None

    def absorb(self, old: Step, new: RemovalCandidate | Unremovable, new_dests: tuple[int, ...],
               same_budgets: Callable[[Pod, Pod], bool]) -> bool:
        """Whether the walk may go on after simulating a candidate again (see the module's docstring).

        ``same_budgets(a, b)``: pods ``a`` and ``b`` are matched by the same PDBs.
        """
        if isinstance(old.verdict, Unremovable):
            return isinstance(new, Unremovable)
        if isinstance(new, Unremovable):
            return False
        before, after = old.verdict.drain.to_move, new.drain.to_move
        if len(before) != len(after) or any(
                a.ref != b.ref or not same_budgets(a, b) for a, b in zip(before, after, strict=True)):
            return False  # other pods, or pods of other PDBs: other budgets spent
        grown = self._changed | set(old.dests) | set(new_dests)
        if len(grown) != len(self._changed):
            self._changed = grown
            self.changed = tuple(sorted(grown))
        return True

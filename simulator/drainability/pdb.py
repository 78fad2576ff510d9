"""PodDisruptionBudgets as a budget that scale-down spends node by node.

Built once per loop from the snapshot's PDBs. The drain rules ask it whether a pod may
be disrupted at all; the scale-down planner, after deciding a node can go, spends the
budget for that node's pods (``remove``) so the next node sees what is left. This is
upstream CA's ``RemainingPdbTracker``. ``fork``/``revert``/``commit`` let a planner try
a node and take the spending back if the node turns out to be unremovable.

Storage guard pods (storage-semantics 3.4) are invisible here: their PDB exists to hold
the eviction back until the storage driver has unpinned the volumes, which actuation
waits for; counting it in planning would make every node with local volumes unremovable.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from kube.model import LabelSelector, Pod, PodDisruptionBudget

__all__ = ["PdbTracker", "is_guard_pod"]


def is_guard_pod(guard: LabelSelector | None, pod: Pod) -> bool:
    """Whether ``pod`` matches the guard selector; an empty selector means "no guards".

    The empty selector matches every pod, so a blank guard flag would otherwise make
    every pod an unchecked, never-moved guard.
    """
    return guard is not None and bool(guard.requirements) and guard.matches(pod.labels)


class PdbTracker:
    """Disruptions still allowed per PDB, consumed as pods are planned for eviction.

    Not thread-safe; one tracker belongs to one planning pass.
    """

    __slots__ = ("_by_namespace", "_guard", "_index", "_pdbs", "_remaining", "_saved")

    def __init__(self, pdbs: Iterable[PodDisruptionBudget], guard: LabelSelector | None = None) -> None:
        self._pdbs: tuple[PodDisruptionBudget, ...] = tuple(pdbs)
        self._remaining: list[int] = [p.disruptions_allowed for p in self._pdbs]
        self._index: dict[tuple[str, str], int] = {(p.namespace, p.name): i for i, p in enumerate(self._pdbs)}
        # PDBs only select pods of their own namespace; indexing by it keeps a
        # 150,000-pod pass from testing every PDB against every pod.
        self._by_namespace: dict[str, list[int]] = {}
        for i, p in enumerate(self._pdbs):
            if p.selector is not None:  # a PDB without a selector selects nothing
                self._by_namespace.setdefault(p.namespace, []).append(i)
        self._guard = guard
        self._saved: list[list[int]] = []

    @property
    def pdbs(self) -> tuple[PodDisruptionBudget, ...]:
        return self._pdbs

    @property
    def guard(self) -> LabelSelector | None:
        return self._guard

    def remaining(self, pdb: PodDisruptionBudget) -> int:
        """Disruptions ``pdb`` still allows in this pass; negative once overspent."""
        return self._remaining[self._index[(pdb.namespace, pdb.name)]]

    def _matching(self, pod: Pod) -> list[int]:
        indices = self._by_namespace.get(pod.namespace)
        if not indices or is_guard_pod(self._guard, pod):
            return []
        out = []
        for i in indices:
            selector = self._pdbs[i].selector
            if selector is not None and selector.matches(pod.labels):
                out.append(i)
        return out

    def matching(self, pod: Pod) -> list[PodDisruptionBudget]:
        """PDBs covering ``pod`` (none for guard pods)."""
        return [self._pdbs[i] for i in self._matching(pod)]

    def blocking_pdb(self, pod: Pod) -> PodDisruptionBudget | None:
        """The first PDB covering ``pod`` with no disruption left, if any."""
        for i in self._matching(pod):
            if self._remaining[i] < 1:
                return self._pdbs[i]
        return None

    def can_remove(self, pods: Sequence[Pod]) -> tuple[bool, PodDisruptionBudget | None]:
        """Whether ``pods`` may all be evicted, and if not the PDB that forbids it.

        As upstream, a PDB forbids only when it has no disruption left at all. More
        matching pods than disruptions left is allowed: actuation evicts them one at a
        time, retrying refused evictions, while the first ones come back up elsewhere
        (``in_parallel`` tells the planner when that is the case).
        """
        for pod in pods:
            blocking = self.blocking_pdb(pod)
            if blocking is not None:
                return False, blocking
        return True, None

    def in_parallel(self, pods: Sequence[Pod]) -> bool:
        """Whether every PDB has enough disruptions left to evict ``pods`` at once.

        Upstream marks a node whose drain must wait on a PDB "risky"; planners may use
        this to prefer other nodes.
        """
        wanted: dict[int, int] = {}
        for pod in pods:
            for i in self._matching(pod):
                wanted[i] = wanted.get(i, 0) + 1
        return all(count <= self._remaining[i] for i, count in wanted.items())

    def remove(self, pods: Iterable[Pod]) -> None:
        """Spend one disruption of every PDB covering each pod (the node was chosen)."""
        for pod in pods:
            for i in self._matching(pod):
                self._remaining[i] -= 1

    def fork(self) -> None:
        """Remember the budgets so a later ``revert`` can restore them; forks nest."""
        self._saved.append(list(self._remaining))

    def revert(self) -> None:
        """Restore the budgets to the last ``fork`` and forget it."""
        if not self._saved:
            raise RuntimeError("PdbTracker.revert() without fork()")
        self._remaining = self._saved.pop()

    def commit(self) -> None:
        """Keep the spending since the last ``fork`` and forget it."""
        if not self._saved:
            raise RuntimeError("PdbTracker.commit() without fork()")
        self._saved.pop()

    def copy(self) -> PdbTracker:
        """An independent tracker with the same budgets left (no pending forks)."""
        clone = PdbTracker((), self._guard)
        clone._pdbs = self._pdbs
        clone._index = self._index
        clone._by_namespace = self._by_namespace
        clone._remaining = list(self._remaining)
        return clone

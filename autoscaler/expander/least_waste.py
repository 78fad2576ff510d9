"""The ``least-waste`` expander: prefer the options that leave the least capacity idle.

Upstream ``expander/waste``: for ``N`` new nodes of the group's template, each of
CPU and memory contributes ``(capacity * N - requested) / (capacity * N)``, where
capacity is the template's *capacity* (not allocatable) and requested is the sum
over the option's pods. The lowest sum wins; exact ties are all kept.

Storage extension (``storage-semantics.md`` 2.5, beyond the thesis): when the
autoscaler is storage-aware and the group's local disk size is known, unused local
storage is a third term, computed the same way from the bytes the option's pods
provision (``ExpansionOption.local_bytes``). A group with no known disk size gets
no storage term: it scores as upstream would, which also means it is not charged
for idle disk when compared with a group whose disk size is known.
"""

from __future__ import annotations

from collections.abc import Sequence

from autoscaler.expander.base import ExpanderContext, ExpansionOption
from kube.model import UNBOUNDED_BYTES, Node

__all__ = ["LeastWasteFilter", "local_capacity", "waste_score"]


def _unused_fraction(per_node: int, node_count: int, requested: int) -> float:
    available = per_node * node_count
    if available <= 0:
        # Nothing offered in this dimension (or no node added): nothing to waste,
        # and a zero division must not decide the choice.
        return 0.0
    return (available - requested) / available


def local_capacity(template: Node) -> int | None:
    """The local disk of one new node of this template, if known: positive and finite.

    The max-capacity label (the disk's total, like ``capacity`` for CPU) comes first;
    the template's free bytes (set from that label when sanitized) stand in for it.
    ``UNBOUNDED_BYTES`` means nothing is known, and zero means the driver does not
    run in the group: neither is a size to measure waste against.
    """
    for candidate in (template.max_local_bytes, template.free_local_bytes):
        if candidate is not None and 0 < candidate < UNBOUNDED_BYTES:
            return candidate
    return None


def waste_score(option: ExpansionOption, ctx: ExpanderContext) -> float:
    """Idle fraction of CPU plus memory (plus local storage, when it counts) of the option's new nodes."""
    capacity = option.template.capacity
    cpu = sum(pod.requests.cpu for pod in option.pods)
    memory = sum(pod.requests.memory for pod in option.pods)
    score = _unused_fraction(capacity.cpu, option.node_count, cpu)
    score += _unused_fraction(capacity.memory, option.node_count, memory)
    if ctx.storage_aware and option.storage_known:
        disk = local_capacity(option.template)
        if disk is not None:
            score += _unused_fraction(disk, option.node_count, option.local_bytes)
    return score


class LeastWasteFilter:
    """Keeps the options with the lowest ``waste_score``."""

    name: str = "least-waste"

    def best_options(self, options: Sequence[ExpansionOption], ctx: ExpanderContext) -> list[ExpansionOption]:
        if not options:
            return []
        scores = [waste_score(option, ctx) for option in options]
        lowest = min(scores)
        return [option for option, score in zip(options, scores, strict=True) if score == lowest]

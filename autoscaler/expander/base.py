"""The expander seam: choose among scale-up options (upstream ``expander.Filter``).

A filter narrows a list of options to the best ones by its own measure; filters
chain as ``--expander=a,b`` does upstream, and a seeded random choice breaks the
final tie.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from kube.model import Node, Pod

__all__ = ["ExpanderContext", "ExpansionOption", "Filter"]


@dataclass(frozen=True, slots=True)
class ExpansionOption:
    """Adding ``node_count`` nodes of ``group`` would let ``pods`` run."""

    group: str
    node_count: int
    pods: tuple[Pod, ...]
    #: The sanitized template node of the group (free local bytes = the new node's disk).
    template: Node
    price_per_hour: float | None = None
    #: Whether the template's local capacity is known (False: unbounded, nothing known).
    storage_known: bool = False
    #: Total bytes of new local volumes the option's pods provision (least-waste's storage term).
    local_bytes: int = 0


@dataclass(slots=True)
class ExpanderContext:
    """What expanders may read besides the options."""

    storage_aware: bool = True
    #: Nodes in the cluster now (the price expander's preferred node size depends on it).
    cluster_node_count: int = 0
    #: The priority expander's ``priorities`` YAML, if configured.
    priority_config: str | None = None
    rng: random.Random = field(default_factory=lambda: random.Random(0))
    #: Things the expanders want said (e.g. a priority config that does not parse).
    warnings: list[str] = field(default_factory=list)


class Filter(Protocol):
    """One expander strategy: keep the best of ``options`` (never an empty list from a non-empty one)."""

    name: str

    def best_options(self, options: Sequence[ExpansionOption], ctx: ExpanderContext) -> list[ExpansionOption]: ...

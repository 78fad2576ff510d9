"""Expander chains: ``--expander=a,b`` as upstream's chain strategy.

Filters run in order, each narrowing what the previous one kept; as soon as one
option remains it is the choice. Whatever ties survive the last filter are broken
by a random pick from ``ctx.rng``. The scale-up planner builds one chain from the
validated ``--expander`` names and calls ``Chain.choose`` once per decision.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from autoscaler.expander.base import ExpanderContext, ExpansionOption, Filter
from autoscaler.expander.least_nodes import LeastNodesFilter
from autoscaler.expander.least_waste import LeastWasteFilter
from autoscaler.expander.most_pods import MostPodsFilter
from autoscaler.expander.price import PriceFilter
from autoscaler.expander.priority import PriorityFilter
from autoscaler.expander.random_choice import RandomFilter

__all__ = ["FILTERS", "Chain", "build_chain"]

#: Expander name (as in ``--expander``) -> factory of its filter.
FILTERS: dict[str, Callable[[], Filter]] = {
    "random": RandomFilter,
    "most-pods": MostPodsFilter,
    "least-waste": LeastWasteFilter,
    "least-nodes": LeastNodesFilter,
    "price": PriceFilter,
    "priority": PriorityFilter,
}


@dataclass(frozen=True, slots=True)
class Chain:
    """Filters applied in order, then a random tie-break."""

    filters: tuple[Filter, ...]

    def choose(self, options: Sequence[ExpansionOption], ctx: ExpanderContext) -> ExpansionOption | None:
        """The option to scale up, or None when there is none."""
        remaining = list(options)
        for expander in self.filters:
            if len(remaining) <= 1:
                break
            narrowed = expander.best_options(remaining, ctx)
            # A filter must not discard every option (the Filter contract); if one
            # did, deciding from what it was given beats not scaling up at all.
            if narrowed:
                remaining = narrowed
        if not remaining:
            return None
        if len(remaining) == 1:
            return remaining[0]
        return ctx.rng.choice(remaining)


def build_chain(names: Sequence[str]) -> Chain:
    """The chain for these expander names; raises ``ValueError`` naming an unknown one."""
    filters: list[Filter] = []
    for name in names:
        factory = FILTERS.get(name)
        if factory is None:
            raise ValueError(f"unknown expander {name!r} (known: {', '.join(FILTERS)})")
        filters.append(factory())
    return Chain(filters=tuple(filters))

"""The ``least-nodes`` expander: prefer the options adding the fewest nodes (upstream ``leastnodes``)."""

from __future__ import annotations

from collections.abc import Sequence

from autoscaler.expander.base import ExpanderContext, ExpansionOption

__all__ = ["LeastNodesFilter"]


class LeastNodesFilter:
    """Keeps every option with the smallest positive ``node_count``.

    An option that adds no node schedules nothing new, so it must not win by
    default; only when every option adds zero nodes are they all kept.
    """

    name: str = "least-nodes"

    def best_options(self, options: Sequence[ExpansionOption], ctx: ExpanderContext) -> list[ExpansionOption]:
        adding = [option for option in options if option.node_count > 0]
        if not adding:
            return list(options)
        fewest = min(option.node_count for option in adding)
        return [option for option in adding if option.node_count == fewest]

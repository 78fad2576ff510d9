"""The ``most-pods`` expander: prefer the options scheduling the most pods (upstream ``mostpods``)."""

from __future__ import annotations

from collections.abc import Sequence

from autoscaler.expander.base import ExpanderContext, ExpansionOption

__all__ = ["MostPodsFilter"]


class MostPodsFilter:
    """Keeps every option that helps as many pending pods as the best one."""

    name: str = "most-pods"

    def best_options(self, options: Sequence[ExpansionOption], ctx: ExpanderContext) -> list[ExpansionOption]:
        if not options:
            return []
        most = max(len(option.pods) for option in options)
        return [option for option in options if len(option.pods) == most]

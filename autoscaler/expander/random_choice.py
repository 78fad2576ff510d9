"""The ``random`` expander: pick one option at random (upstream ``expander/random``).

Also the chain's final tie-breaker. The generator comes from the context, so a
seeded run (``--random-seed``) makes the same choice every time.
"""

from __future__ import annotations

from collections.abc import Sequence

from autoscaler.expander.base import ExpanderContext, ExpansionOption

__all__ = ["RandomFilter"]


class RandomFilter:
    """Keeps exactly one option, drawn with ``ctx.rng``."""

    name: str = "random"

    def best_options(self, options: Sequence[ExpansionOption], ctx: ExpanderContext) -> list[ExpansionOption]:
        if not options:
            return []
        return [ctx.rng.choice(options)]

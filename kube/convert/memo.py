"""Bounded memo tables owned by one converter.

Snapshots repeat the same request strings, timestamps, owners and scheduling
constraints many times, so a converter remembers them. A process that converts
watch events for weeks must not grow, so every table has a bound and is cleared
when it reaches it (cheaper than LRU bookkeeping on the hot path, and a cleared
table refills with the values still in use).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from kube.featuregates import FeatureGates
from kube.model import OwnerRef, PodScheduling, Resources

__all__ = ["DEFAULT_BOUND", "Memo", "Memos"]

K = TypeVar("K")
V = TypeVar("V")

DEFAULT_BOUND = 50_000


class Memo(dict[K, V], Generic[K, V]):
    """A dict that empties itself before it would exceed ``bound`` entries."""

    def __init__(self, bound: int = DEFAULT_BOUND) -> None:
        super().__init__()
        self.bound = bound

    def put(self, key: K, value: V) -> V:
        if len(self) >= self.bound:
            self.clear()
        self[key] = value
        return value


def _memo() -> Memo[Any, Any]:
    return Memo()


@dataclass
class Memos:
    """The tables of one converter (one per kind of repeated value)."""

    times: Memo[str, float] = field(default_factory=_memo)
    requests: Memo[tuple[Any, ...], Resources] = field(default_factory=_memo)
    scheduling: Memo[Any, PodScheduling] = field(default_factory=_memo)
    owners: Memo[tuple[Any, ...], OwnerRef] = field(default_factory=_memo)
    #: The feature gates objects are read under (``--feature-gates``): a memoized value
    #: depends on them, so they belong to the same converter as the tables.
    gates: FeatureGates = field(default_factory=FeatureGates)

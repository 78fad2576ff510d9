"""``--node-group-auto-discovery=label:k=v[,k=v][,min=N][,max=M]``: scale sets found by their tags.

As upstream CA's ``cloudprovider/azure/azure_autodiscovery.go`` and
``azure_manager.go`` (``getFilteredScaleSets``):

* a spec is ``label:`` then ``key=value`` pairs, none empty; ``min`` and ``max`` are not
  tags but the bounds of every scale set the spec selects (integers >= 0, max >= min);
  anything else is refused at start-up;
* a scale set is selected when it carries the tags of **every** spec, and then its
  bounds are its own ``min``/``max`` tags, else the highest ``min`` and the lowest
  ``max`` the specs give; a scale set whose tags are not integers, or without bounds
  from either source, or with max below min, is skipped (logged by the provider).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from cloudproviders.config import CloudConfigError

__all__ = ["LabelDiscovery", "discovered_bounds", "parse_auto_discovery"]

#: Go's ``strconv.Atoi``: an optional sign, then decimal digits.
_INT = re.compile(r"^[+-]?[0-9]+$")


@dataclass(frozen=True, slots=True)
class LabelDiscovery:
    tags: tuple[tuple[str, str], ...]
    min_size: int | None = None
    max_size: int | None = None

    def selects(self, tags: Mapping[str, str]) -> bool:
        return bool(self.tags) and all(tags.get(key) == value for key, value in self.tags)


def _size(spec: str, key: str, value: str) -> int:
    if not _INT.match(value) or int(value) < 0:
        raise CloudConfigError(f"--node-group-auto-discovery: {spec!r}: {key}={value!r} is not a number of nodes "
                               "(an integer >= 0)")
    return int(value)


def parse_auto_discovery(spec: str) -> LabelDiscovery:
    """One ``label:`` spec; ``CloudConfigError`` names the part upstream would refuse."""
    parts = spec.split(":")
    if len(parts) != 2 or parts[0] != "label":
        raise CloudConfigError(f"--node-group-auto-discovery: {spec!r}: Azure expects "
                               "label:key=value[,key=value][,min=N][,max=M]")
    tags: list[tuple[str, str]] = []
    bounds: dict[str, int] = {}
    for pair in parts[1].split(","):
        key_value = pair.split("=")
        if len(key_value) != 2 or not key_value[0] or not key_value[1]:
            raise CloudConfigError(f"--node-group-auto-discovery: {spec!r}: {pair!r} is not key=value "
                                   "(both non-empty)")
        key, value = key_value
        if key in ("min", "max"):
            bounds[key] = _size(spec, key, value)
        else:
            tags.append((key, value))
    low, high = bounds.get("min"), bounds.get("max")
    if low is not None and high is not None and high < low:
        raise CloudConfigError(f"--node-group-auto-discovery: {spec!r}: max {high} is below min {low}")
    return LabelDiscovery(tuple(tags), low, high)


def _bound(tags: Mapping[str, str], key: str, from_specs: int | None) -> int | str:
    """The scale set's bound, or why it has none."""
    if key in tags:
        text = tags[key]
        return int(text) if _INT.match(text) else f"tag {key}={text!r} is not an integer"
    return from_specs if from_specs is not None else f"no {key} tag and no {key}= in the discovery spec"


def discovered_bounds(tags: Mapping[str, str], specs: Sequence[LabelDiscovery]) -> tuple[int, int] | str | None:
    """(min, max) of a selected scale set; a reason when it is selected but skipped; None when not selected."""
    if not specs or not all(spec.selects(tags) for spec in specs):
        return None
    lows = [s.min_size for s in specs if s.min_size is not None]
    highs = [s.max_size for s in specs if s.max_size is not None]
    low = _bound(tags, "min", max(lows) if lows else None)
    if isinstance(low, str):
        return low
    if low < 0:
        return f"min {low} is negative"
    high = _bound(tags, "max", min(highs) if highs else None)
    if isinstance(high, str):
        return high
    if high < low:
        return f"max {high} is below min {low}"
    return low, high

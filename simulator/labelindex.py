"""Which base nodes of a snapshot carry which label values, as boolean masks.

The predicate checker's static filters (node selector, required node affinity, PV node
affinity, allowedTopologies) become one mask per requirement, cached, and ANDed/ORed per
selector: testing a pod against every node costs a few vector operations.
"""

from __future__ import annotations

import numpy as np

from kube.model import NodeSelector, Requirement
from simulator.snapshot import BoolArray, ClusterSnapshot

__all__ = ["LabelIndex"]


class LabelIndex:
    """Which base nodes carry which label values, for vectorized selector masks."""

    def __init__(self, snapshot: ClusterSnapshot) -> None:
        self.snapshot = snapshot
        self.size = snapshot.base_count
        self._by_key: dict[str, dict[str, list[int]]] = {}
        self._req_cache: dict[Requirement, BoolArray] = {}

    def _values(self, key: str) -> dict[str, list[int]]:
        values = self._by_key.get(key)
        if values is None:
            values = {}
            nodes = self.snapshot.nodes
            if key == "metadata.name":
                for idx in range(self.size):
                    values.setdefault(nodes[idx].name, []).append(idx)
            else:
                for idx in range(self.size):
                    value = nodes[idx].labels.get(key)
                    if value is not None:
                        values.setdefault(value, []).append(idx)
            self._by_key[key] = values
        return values

    def requirement(self, req: Requirement) -> BoolArray:
        cached = self._req_cache.get(req)
        if cached is not None:
            return cached
        values = self._values(req.key)
        mask = np.zeros(self.size, np.bool_)
        op = req.operator
        if op in ("In", "NotIn"):
            for value in req.values:
                idxs = values.get(value)
                if idxs:
                    mask[idxs] = True
            if op == "NotIn":
                mask = ~mask
        elif op in ("Exists", "DoesNotExist"):
            for idxs in values.values():
                mask[idxs] = True
            if op == "DoesNotExist":
                mask = ~mask
        else:
            for value, idxs in values.items():
                if req.matches({req.key: value}):
                    mask[idxs] = True
        self._req_cache[req] = mask
        return mask

    def selector(self, selector: NodeSelector) -> BoolArray:
        mask = np.zeros(self.size, np.bool_)
        for term in selector.terms:
            if term.error is not None or (not term.requirements and not term.fields):
                continue
            term_mask = np.ones(self.size, np.bool_)
            for req in term.requirements:
                term_mask &= self.requirement(req)
            for req in term.fields:
                term_mask &= self.requirement(req)
            mask |= term_mask
        return mask

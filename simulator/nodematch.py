"""Which nodes a node selector selects, indexed by label for the common ``In`` terms."""

from __future__ import annotations

from collections.abc import Iterable

from kube.model import Node, NodeSelector, NodeSelectorTerm

__all__ = ["NodeMatcher"]


class NodeMatcher:
    """Which nodes a node selector selects, with a label index for the common ``In`` terms.

    Built once per pass over many PVs: testing every PV against every node would be
    quadratic on a large cluster.
    """

    def __init__(self, nodes: Iterable[Node]) -> None:
        self._nodes = list(nodes)
        self._by_label: dict[str, dict[str, list[Node]]] = {}

    def _with_label(self, key: str, value: str) -> list[Node]:
        index = self._by_label.get(key)
        if index is None:
            index = self._by_label[key] = {}
            for node in self._nodes:
                if key == "metadata.name":
                    index.setdefault(node.name, []).append(node)
                else:
                    label = node.labels.get(key)
                    if label is not None:
                        index.setdefault(label, []).append(node)
        return index.get(value, [])

    def _candidates(self, term: NodeSelectorTerm) -> list[Node]:
        """Nodes that can match ``term``: those of its narrowest ``In`` requirement."""
        best: list[Node] | None = None
        for req in (*term.requirements, *term.fields):
            if req.operator != "In":
                continue
            found: list[Node] = []
            for value in req.values:
                found.extend(self._with_label(req.key, value))
            if best is None or len(found) < len(best):
                best = found
        return self._nodes if best is None else best

    def only_match(self, selector: NodeSelector | None) -> str | None:
        """The name of the one node ``selector`` selects; None when it selects none or several.

        A PV whose required node affinity selects exactly one node is pinned to it,
        whatever the label key (``kubernetes.io/hostname``, ``topology.topolvm.io/node``,
        ``openebs.io/nodename``, ...): its data lives there (storage-semantics 3.6).
        """
        if selector is None or not selector.terms:
            return None
        found: str | None = None
        for term in selector.terms:
            for node in self._candidates(term):
                if node.name != found and term.matches(node.labels, node.name):
                    if found is not None:
                        return None
                    found = node.name
        return found

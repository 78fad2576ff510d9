"""Nodes an object the live view could not read might hold data on (storage-semantics 3.8).

The converter refuses an object the live view then drops (``kube/unreadable.py`` keeps
what it could still read). Such an object never makes a node removable:

* a pod: the node it runs on;
* a PersistentVolume: every node whose name or any label value is one of the strings
  its node affinity names (read leniently, so a zone-wide affinity keeps the zone);
  an affinity that cannot be read at all could name any node, so scale-down is held;
* a claim: its PV is readable but looks unbound, so the nodes that PV's affinity
  selects are kept.

The scale-down planner keeps these nodes (``NodeHasLocalVolumes``, naming the object)
and the actuator's last look calls a deletion off for them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from kube.model import ClusterObjects, Node, Unreadable

__all__ = ["UnreadableProtection", "unreadable_protection"]


@dataclass(frozen=True, slots=True)
class UnreadableProtection:
    #: node -> the unreadable objects that could hold data there (``Kind/ns/name (could not be read)``).
    nodes: dict[str, list[str]] = field(default_factory=dict)
    #: Objects that could pin any node: scale-down waits until they are read.
    hold: tuple[str, ...] = ()

    @property
    def hold_reason(self) -> str:
        return ("an object the autoscaler cannot read could pin any node, scale-down waits until it can: "
                + ", ".join(self.hold[:5]))


def _label(ref: str) -> str:
    return f"{ref} (could not be read)"


def _pv_nodes(values: frozenset[str], nodes: Iterable[Node]) -> list[str]:
    return [n.name for n in nodes if n.name in values or any(v in values for v in n.labels.values())]


def _claim_nodes(objects: ClusterObjects, claim: tuple[str, str], nodes: Iterable[Node]) -> list[str]:
    out: list[str] = []
    for pv in objects.volumes.values():
        if pv.claim == claim and pv.node_affinity is not None and pv.node_affinity.terms:
            out.extend(n.name for n in nodes if pv.node_affinity.matches(n.labels, n.name))
    return out


def _nodes_of(item: Unreadable, objects: ClusterObjects, nodes: list[Node]) -> list[str] | None:
    """The nodes ``item`` could pin; None: any node."""
    if item.kind == "Pod":
        return [item.node_name] if item.node_name else []
    if item.kind == "PersistentVolume":
        return None if item.affinity_values is None else _pv_nodes(item.affinity_values, nodes)
    if item.kind == "PersistentVolumeClaim" and item.claim is not None:
        return _claim_nodes(objects, item.claim, nodes)
    return []


def unreadable_protection(objects: ClusterObjects) -> UnreadableProtection:
    if not objects.unreadable:
        return UnreadableProtection()
    protected: dict[str, list[str]] = {}
    hold: list[str] = []
    for item in sorted(objects.unreadable, key=lambda u: u.ref):
        names = _nodes_of(item, objects, objects.nodes)
        if names is None:
            hold.append(item.ref)
            continue
        for name in dict.fromkeys(names):
            protected.setdefault(name, []).append(_label(item.ref))
    return UnreadableProtection(protected, tuple(hold))

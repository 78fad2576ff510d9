"""Pods in topology domains: kube-scheduler's InterPodAffinity and PodTopologySpread.

``pod_topology`` does what those plugins' PreFilter does once per pod (which domains
hold pods matching the pod's terms, which existing pods' anti-affinity the pod would
break, how many matching pods each spread domain holds); ``topology_reason`` is their
Filter on one node. The predicate checker (``predicates.py``) calls both.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from kube.model import Pod, PodAffinityTerm, SpreadConstraint, Taint, Toleration
from simulator.snapshot import ClusterSnapshot

__all__ = ["PodTopology", "pod_topology", "term_matches", "tolerated", "topology_reason", "untolerated_taint"]


def tolerated(taint: Taint, tolerations: tuple[Toleration, ...]) -> bool:
    return any(t.tolerates(taint) for t in tolerations)


def untolerated_taint(taints: tuple[Taint, ...], tolerations: tuple[Toleration, ...]) -> Taint | None:
    for taint in taints:
        if taint.effect in ("NoSchedule", "NoExecute") and not tolerated(taint, tolerations):
            return taint
    return None


def _namespaces_match(term: PodAffinityTerm, namespace: str, ns_labels: Mapping[str, Mapping[str, str]],
                      incoming: bool) -> bool:
    """Whether a term's namespaces (list or selector) include ``namespace``.

    kube-scheduler turns the incoming pod's non-empty namespace selectors into a list of
    the namespaces that exist and match (``mergeAffinityTermNamespacesIfNotEmpty``), so
    for ``incoming`` terms a namespace absent from the snapshot matches only ``{}``. An
    existing pod's terms are matched against the labels of the incoming pod's namespace,
    empty when it is absent.
    """
    if namespace in term.namespaces:
        return True
    selector = term.namespace_selector
    if selector is None:
        return False
    if selector.everything:
        return True
    labels = ns_labels.get(namespace)
    if labels is None:
        if incoming:
            return False
        labels = {}
    return selector.matches(labels)


def term_matches(term: PodAffinityTerm, pod: Pod, ns_labels: Mapping[str, Mapping[str, str]],
                 incoming: bool = True) -> bool:
    """Does ``pod`` match an (anti-)affinity term's selector and namespaces?

    ``incoming``: the term is the pod being scheduled's own (see ``_namespaces_match``).
    """
    if term.selector is None or not _namespaces_match(term, pod.namespace, ns_labels, incoming):
        return False
    return term.selector.matches(pod.labels)


@dataclass(slots=True)
class PodTopology:
    """Per-call view of pods in topology domains, for affinity and spread checks."""

    affinity_domains: list[tuple[str, set[str] | None]]  # (key, values with a match) None: self-match
    anti_domains: list[tuple[str, set[str]]]
    existing_anti: list[tuple[str, set[str]]]
    spread: list[tuple[SpreadConstraint, dict[str, int], int, bool]]


def pod_topology(snap: ClusterSnapshot, ns: Mapping[str, Mapping[str, str]], pod: Pod,
             affinity_fails: Callable[[int], bool]) -> PodTopology:
    """Domains that pods already occupy, for this pod's (anti-)affinity and spread.

    As kube-scheduler's InterPodAffinity PreFilter: an existing pod counts for the
    affinity terms only if it matches **all** of them; the first pod of a group may
    go anywhere its terms' topology keys exist when no pod matches them all and it
    matches them all itself. Anti-affinity terms count pods term by term.
    ``affinity_fails(idx)``: the pod's node selector/affinity rejects node ``idx``
    (spread's ``nodeAffinityPolicy: Honor``).
    """
    sched = pod.scheduling
    terms = sched.affinity
    found: list[set[str]] = [set() for _ in terms]
    counted = False
    if terms:
        for idx, other in snap.iter_pods():
            if all(term_matches(t, other, ns) for t in terms):
                labels = snap.nodes[idx].labels
                for k, term in enumerate(terms):
                    value = labels.get(term.topology_key)
                    if value is not None:
                        found[k].add(value)
                        counted = True
    affinity: list[tuple[str, set[str] | None]] = [(t.topology_key, found[k]) for k, t in enumerate(terms)]
    if terms and not counted and all(term_matches(t, pod, ns) for t in terms):
        affinity = [(key, None) for key, _ in affinity]
    anti: list[tuple[str, set[str]]] = []
    for term in sched.anti_affinity:
        domains: set[str] = set()
        for idx, other in snap.iter_pods():
            if term_matches(term, other, ns):
                value = snap.nodes[idx].labels.get(term.topology_key)
                if value is not None:
                    domains.add(value)
        anti.append((term.topology_key, domains))
    existing: dict[str, set[str]] = {}
    for idx, other in snap.anti_affinity_pods:
        if not snap.enabled[idx]:
            continue
        for term in other.scheduling.anti_affinity:
            if term_matches(term, pod, ns, incoming=False):
                value = snap.nodes[idx].labels.get(term.topology_key)
                if value is not None:
                    existing.setdefault(term.topology_key, set()).add(value)
    spread = [_spread_counts(snap, pod, c, sched.spread, affinity_fails) for c in sched.spread]
    return PodTopology(affinity, anti, list(existing.items()), spread)


def _spread_counts(snap: ClusterSnapshot, pod: Pod, c: SpreadConstraint, constraints: tuple[SpreadConstraint, ...],
                   affinity_fails: Callable[[int], bool]) -> tuple[SpreadConstraint, dict[str, int], int, bool]:
    """Matching pods per domain of one constraint (kube-scheduler's PodTopologySpread PreFilter).

    A node counts only if it has every constraint's topology key and passes the
    constraint's node inclusion policies; terminating pods and pods of other
    namespaces are not counted.
    """
    counts: dict[str, int] = {}
    keys = [other.topology_key for other in constraints]
    for idx in range(snap.count):
        if not snap.enabled[idx]:
            continue
        node = snap.nodes[idx]
        labels = node.labels
        if any(key not in labels for key in keys):
            continue
        value = labels[c.topology_key]
        if c.node_affinity_policy == "Honor" and affinity_fails(idx):
            continue
        if c.node_taints_policy == "Honor" and untolerated_taint(node.taints, pod.scheduling.tolerations):
            continue
        count = counts.get(value, 0)
        if c.selector is not None:
            for other in snap.pods_on[idx]:
                if other.deleted is None and other.namespace == pod.namespace and c.selector.matches(other.labels):
                    count += 1
        counts[value] = count
    minimum = min(counts.values()) if counts else 0
    if len(counts) < c.min_domains:
        minimum = 0
    self_match = c.selector is not None and c.selector.matches(pod.labels)
    return c, counts, minimum, self_match


REASON_SPREAD = "node(s) didn't match pod topology spread constraints"


def topology_reason(labels: Mapping[str, str], topo: PodTopology) -> tuple[str, str] | None:
    """(plugin, reason) of the first failure on a node with these labels, or None.

    PodTopologySpread, then InterPodAffinity (the pod's affinity, its anti-affinity,
    existing pods' anti-affinity): kube-scheduler's plugin order and Filter order.
    """
    for c, counts, minimum, self_match in topo.spread:
        value = labels.get(c.topology_key)
        if value is None:
            return "PodTopologySpread", REASON_SPREAD + " (missing required label)"
        if counts.get(value, 0) + int(self_match) - minimum > c.max_skew:
            return "PodTopologySpread", REASON_SPREAD
    for key, affinity_domains in topo.affinity_domains:
        value = labels.get(key)
        if value is None or (affinity_domains is not None and value not in affinity_domains):
            return "InterPodAffinity", "node(s) didn't match pod affinity rules"
    for key, domains in topo.anti_domains:
        if labels.get(key) in domains:
            return "InterPodAffinity", "node(s) didn't match pod anti-affinity rules"
    for key, domains in topo.existing_anti:
        if labels.get(key) in domains:
            return "InterPodAffinity", "node(s) didn't satisfy existing pods anti-affinity rules"
    return None

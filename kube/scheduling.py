"""Scheduling constraints in the model: selectors, taints and tolerations, pod affinity, spread.

Part of the model (``kube.model`` re-exports every name here): what kube-scheduler's
filters read from pods and nodes besides resources and volumes, converted once at the
edge. ``PodScheduling`` is interned by the converter, so pods with the same
constraints share one instance.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = [
    "EMPTY_SCHEDULING",
    "HOSTNAME_LABEL",
    "HostPort",
    "LabelSelector",
    "NodeSelector",
    "NodeSelectorTerm",
    "PodAffinityTerm",
    "PodScheduling",
    "Requirement",
    "SpreadConstraint",
    "Taint",
    "Toleration",
    "parse_int64",
]

HOSTNAME_LABEL = "kubernetes.io/hostname"

_INT64 = re.compile(r"[+-]?[0-9]+")


def parse_int64(text: str) -> int | None:
    """Go's ``strconv.ParseInt(text, 10, 64)``: no spaces, no underscores, in range."""
    if not _INT64.fullmatch(text):
        return None
    value = int(text)
    return value if -(2**63) <= value < 2**63 else None


@dataclass(frozen=True, slots=True)
class Requirement:
    """One label requirement, as in node selector terms and label selectors."""

    key: str
    operator: str  # In, NotIn, Exists, DoesNotExist, Gt, Lt
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.operator
        if op == "In":
            return labels.get(self.key) in self.values
        if op == "NotIn":
            return labels.get(self.key) not in self.values
        if op == "Exists":
            return self.key in labels
        if op == "DoesNotExist":
            return self.key not in labels
        if op not in ("Gt", "Lt"):
            return False  # an operator the API machinery does not know selects nothing
        value = labels.get(self.key)
        if value is None or len(self.values) != 1:
            return False
        have, want = parse_int64(value), parse_int64(self.values[0])
        if have is None or want is None:
            return False
        return have > want if op == "Gt" else have < want


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    """Requirements ANDed; ``fields`` holds ``metadata.name`` requirements."""

    requirements: tuple[Requirement, ...] = ()
    fields: tuple[Requirement, ...] = ()
    #: Why the API machinery would refuse to parse the term (then it selects nothing,
    #: as component-helpers' lazy-error node selector does), or None.
    error: str | None = None

    def matches(self, labels: Mapping[str, str], node_name: str) -> bool:
        if self.error is not None or (not self.requirements and not self.fields):
            return False  # an empty or unparsable term selects nothing (upstream nodeaffinity)
        if not all(r.matches(labels) for r in self.requirements):
            return False
        return all(r.matches({"metadata.name": node_name}) for r in self.fields)


@dataclass(frozen=True, slots=True)
class NodeSelector:
    """Terms ORed: a node matches if any term matches."""

    terms: tuple[NodeSelectorTerm, ...]

    def matches(self, labels: Mapping[str, str], node_name: str) -> bool:
        return any(t.matches(labels, node_name) for t in self.terms)


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """``matchLabels`` and ``matchExpressions`` ANDed; the empty selector matches all."""

    requirements: tuple[Requirement, ...] = ()
    #: Why ``metav1.LabelSelectorAsSelector`` would fail on it (then it matches nothing), or None.
    error: str | None = None

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.error is not None:
            return False
        return all(r.matches(labels) for r in self.requirements)

    @property
    def everything(self) -> bool:
        """The empty selector ``{}``: every object (not the absent one, which is nothing)."""
        return self.error is None and not self.requirements


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str
    effect: str  # NoSchedule, PreferNoSchedule, NoExecute


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str
    operator: str  # Equal, Exists; Gt, Lt (feature gate TaintTolerationComparisonOperators)
    value: str
    effect: str  # "" matches every effect
    #: Whether ``Gt``/``Lt`` compare (the gate was on when the toleration was read);
    #: off, they tolerate nothing, as kube-scheduler's ``ToleratesTaint`` with the gate off.
    compare: bool = False

    def tolerates(self, taint: Taint) -> bool:
        """``k8s.io/api/core/v1/toleration.go`` ``ToleratesTaint``: effect, key, then the operator."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        if self.operator in ("Equal", ""):
            return self.value == taint.value
        if self.operator in ("Gt", "Lt") and self.compare:
            return _compare(self.operator, self.value, taint.value)
        return False  # an operator the API does not know (or a gated one) tolerates nothing


#: Upstream ``compareNumericValues``: a canonical int64 (no sign but ``-``, no leading zero, no ``-0``).
_CANONICAL_INT = re.compile(r"-?[1-9][0-9]{0,18}|0")


def _integer(text: str) -> int | None:
    if not _CANONICAL_INT.fullmatch(text):
        return None
    value = int(text)
    return value if -(2**63) <= value < 2**63 else None


def _compare(operator: str, toleration_value: str, taint_value: str) -> bool:
    """``Gt``: the taint's value is greater than the toleration's; ``Lt``: smaller. Non-integers: no."""
    mine, theirs = _integer(toleration_value), _integer(taint_value)
    if mine is None or theirs is None:
        return False
    return theirs > mine if operator == "Gt" else theirs < mine


@dataclass(frozen=True, slots=True)
class HostPort:
    protocol: str
    ip: str
    port: int

    def conflicts(self, other: HostPort) -> bool:
        if self.port <= 0 or self.port != other.port or self.protocol != other.protocol:
            return False
        # Upstream HostPortInfo: only 0.0.0.0 (or no IP) binds every address; "::" is one IP.
        wildcard = ("", "0.0.0.0")
        return self.ip in wildcard or other.ip in wildcard or self.ip == other.ip


@dataclass(frozen=True, slots=True)
class PodAffinityTerm:
    selector: LabelSelector | None
    #: Namespaces the selector applies to; empty with no namespace selector = the pod's own.
    namespaces: frozenset[str]
    namespace_selector: LabelSelector | None
    topology_key: str


@dataclass(frozen=True, slots=True)
class SpreadConstraint:
    """A ``DoNotSchedule`` topology spread constraint (soft ones do not filter)."""

    max_skew: int
    topology_key: str
    selector: LabelSelector | None
    min_domains: int
    #: Honor (default) or Ignore: whether the pod's node affinity limits the domains counted.
    node_affinity_policy: str
    #: Ignore (default) or Honor: whether tainted nodes the pod does not tolerate count.
    node_taints_policy: str


@dataclass(frozen=True, slots=True)
class PodScheduling:
    """What the scheduler's filters read from a pod besides requests and volumes.

    Interned by the converter: pods with the same constraints share one instance,
    which makes the equivalence of pods a cheap identity check.
    """

    node_selector: tuple[tuple[str, str], ...] = ()
    required_affinity: NodeSelector | None = None
    tolerations: tuple[Toleration, ...] = ()
    host_ports: tuple[HostPort, ...] = ()
    affinity: tuple[PodAffinityTerm, ...] = ()
    anti_affinity: tuple[PodAffinityTerm, ...] = ()
    spread: tuple[SpreadConstraint, ...] = ()
    #: Set when a pod (anti-)affinity or topology spread selector cannot be parsed:
    #: kube-scheduler then refuses the pod on every node.
    parse_error: str | None = None
    #: (field, what) for values the API server may hold that are read leniently here
    #: (an operator, effect or policy of a newer version, a gated operator): warnings.
    notes: tuple[tuple[str, str], ...] = ()

    @property
    def has_pod_constraints(self) -> bool:
        return bool(self.affinity or self.anti_affinity or self.spread)


EMPTY_SCHEDULING = PodScheduling()

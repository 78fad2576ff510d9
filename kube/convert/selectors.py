"""Label and node selectors, and pod (anti-)affinity terms.

Operators and their values are checked as the API server validates them
(``k8s.io/apimachinery/pkg/apis/meta/v1/validation`` and ``core/v1/validation``):
``In``/``NotIn`` need values, ``Exists``/``DoesNotExist`` take none, ``Gt``/``Lt``
(node selectors only) take one integer.
"""

from __future__ import annotations

from kube.convert.errors import FieldError
from kube.convert.fields import as_list, as_map, as_str, describe, string_map
from kube.model import LabelSelector, NodeSelector, NodeSelectorTerm, PodAffinityTerm, Requirement

__all__ = ["affinity_terms", "label_selector", "node_selector", "parse_label_selector_string", "requirements"]

_LABEL_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
_NODE_OPERATORS = (*_LABEL_OPERATORS, "Gt", "Lt")


def requirements(raw: object, field: str, *, node: bool = True) -> tuple[Requirement, ...]:
    """``matchExpressions``: a list of ``{key, operator, values}``."""
    out = []
    allowed = _NODE_OPERATORS if node else _LABEL_OPERATORS
    for i, expr in enumerate(as_list(raw, field)):
        f = f"{field}[{i}]"
        expr = as_map(expr, f)
        key = as_str(expr.get("key"), f"{f}.key")
        if not key:
            raise FieldError(f"{f}.key", "required")
        op = expr.get("operator")
        if op not in allowed:
            raise FieldError(f"{f}.operator", f"unknown operator {describe(op)} (one of {', '.join(allowed)})")
        values = as_list(expr.get("values"), f"{f}.values")
        for j, value in enumerate(values):
            as_str(value, f"{f}.values[{j}]")
        if op in ("In", "NotIn") and not values:
            raise FieldError(f"{f}.values", f"required for operator {op}")
        if op in ("Exists", "DoesNotExist") and values:
            raise FieldError(f"{f}.values", f"must be empty for operator {op}")
        if op in ("Gt", "Lt") and (len(values) != 1 or not (values[0].isascii() and values[0].lstrip("-").isdigit())):
            raise FieldError(f"{f}.values", f"operator {op} takes exactly one integer value")
        out.append(Requirement(key, str(op), tuple(values)))
    return tuple(out)


def node_selector(raw: object, field: str) -> NodeSelector | None:
    if raw is None:
        return None
    raw = as_map(raw, field)
    terms = []
    for i, term in enumerate(as_list(raw.get("nodeSelectorTerms"), f"{field}.nodeSelectorTerms")):
        f = f"{field}.nodeSelectorTerms[{i}]"
        term = as_map(term, f)
        terms.append(
            NodeSelectorTerm(
                requirements(term.get("matchExpressions"), f"{f}.matchExpressions"),
                requirements(term.get("matchFields"), f"{f}.matchFields"),
            )
        )
    return NodeSelector(tuple(terms))


def label_selector(raw: object, field: str) -> LabelSelector | None:
    if raw is None:
        return None
    if type(raw) is not dict:
        raise FieldError(field, f"expected a label selector (a map), got {describe(raw)}")
    labels = string_map(raw.get("matchLabels"), f"{field}.matchLabels")
    reqs = [Requirement(k, "In", (v,)) for k, v in sorted(labels.items())]
    reqs.extend(requirements(raw.get("matchExpressions"), f"{field}.matchExpressions", node=False))
    return LabelSelector(tuple(reqs))


def parse_label_selector_string(text: str) -> LabelSelector:
    """``app=x,tier!=y,env`` (equality-based selectors, as flags take them)."""
    reqs = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        if "!=" in part:
            key, value = part.split("!=", 1)
            reqs.append(Requirement(key.strip(), "NotIn", (value.strip(),)))
        elif "=" in part:
            key, value = part.split("==", 1) if "==" in part else part.split("=", 1)
            reqs.append(Requirement(key.strip(), "In", (value.strip(),)))
        elif part.startswith("!"):
            reqs.append(Requirement(part[1:].strip(), "DoesNotExist"))
        else:
            reqs.append(Requirement(part, "Exists"))
    return LabelSelector(tuple(reqs))


def affinity_terms(raw: object, namespace: str, field: str) -> tuple[PodAffinityTerm, ...]:
    out = []
    for i, term in enumerate(as_list(raw, field)):
        f = f"{field}[{i}]"
        term = as_map(term, f)
        ns_sel = label_selector(term.get("namespaceSelector"), f"{f}.namespaceSelector")
        raw_namespaces = as_list(term.get("namespaces"), f"{f}.namespaces")
        namespaces = frozenset(as_str(n, f"{f}.namespaces[{j}]") for j, n in enumerate(raw_namespaces))
        if not namespaces and ns_sel is None:
            namespaces = frozenset((namespace,))
        topology_key = as_str(term.get("topologyKey"), f"{f}.topologyKey")
        if not topology_key:
            raise FieldError(f"{f}.topologyKey", "required")
        out.append(
            PodAffinityTerm(label_selector(term.get("labelSelector"), f"{f}.labelSelector"), namespaces, ns_sel,
                            topology_key)
        )
    return tuple(out)

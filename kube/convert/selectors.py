"""Label and node selectors, and pod (anti-)affinity terms.

Operators and their values are checked as the API server validates them
(``k8s.io/apimachinery/pkg/apis/meta/v1/validation`` and ``core/v1/validation``):
``In``/``NotIn`` need values, ``Exists``/``DoesNotExist`` take none, ``Gt``/``Lt``
(node selectors only) take one integer.
"""

from __future__ import annotations

from collections.abc import Iterable

from kube.convert.errors import FieldError
from kube.convert.fields import as_list, as_map, as_str, describe, required_str, string_map
from kube.convert.labelsyntax import field_requirement_error, requirement_error
from kube.model import LabelSelector, NodeSelector, NodeSelectorTerm, PodAffinityTerm, Requirement

__all__ = ["affinity_error", "affinity_terms", "label_selector", "node_selector", "parse_label_selector_string",
           "requirements"]

_LABEL_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
_NODE_OPERATORS = (*_LABEL_OPERATORS, "Gt", "Lt")


def requirements(raw: object, field: str) -> tuple[Requirement, ...]:
    """``matchExpressions``: a list of ``{key, operator, values}``.

    Only the structure is bad input here (types, an operator that is not a string).
    What the API machinery refuses in well-formed requirements (keys and values that
    are not label syntax, values given to ``Exists``, none to ``In``, ``Gt`` in a label
    selector, ...) is kube-scheduler semantics: ``labelsyntax.requirement_error``.
    """
    out = []
    for i, expr in enumerate(as_list(raw, field)):
        f = f"{field}[{i}]"
        expr = as_map(expr, f)
        key = as_str(expr.get("key"), f"{f}.key")
        op = expr.get("operator")
        if type(op) is not str:
            # A string operator this version does not know is kept: the requirement is then
            # refused as labels.NewRequirement refuses it (``labelsyntax``), matching nothing.
            raise FieldError(f"{f}.operator", f"unknown operator {describe(op)} (one of {', '.join(_NODE_OPERATORS)})")
        values = as_list(expr.get("values"), f"{f}.values")
        for j, value in enumerate(values):
            as_str(value, f"{f}.values[{j}]")
        out.append(Requirement(key, str(op), tuple(values)))
    return tuple(out)


def node_selector(raw: object, field: str, notes: list[tuple[str, str]] | None = None) -> NodeSelector | None:
    """A required node affinity; ``notes`` receives operators this version does not know (kept, matching nothing)."""
    if raw is None:
        return None
    raw = as_map(raw, field)
    terms = []
    for i, term in enumerate(as_list(raw.get("nodeSelectorTerms"), f"{field}.nodeSelectorTerms")):
        f = f"{field}.nodeSelectorTerms[{i}]"
        term = as_map(term, f)
        exprs = requirements(term.get("matchExpressions"), f"{f}.matchExpressions")
        fields = requirements(term.get("matchFields"), f"{f}.matchFields")
        # What labels.NewRequirement refuses makes the term match no node (not bad input).
        errors = [requirement_error(r, label_selector=False) for r in exprs]
        errors += [field_requirement_error(r) for r in fields]
        error = next((e for e in errors if e is not None), None)
        if notes is not None:
            notes.extend((f"{f}.{part}[{j}].operator", f"unknown operator {r.operator!r} (one of "
                                                       f"{', '.join(_NODE_OPERATORS)} here): the term selects no node")
                         for part, reqs in (("matchExpressions", exprs), ("matchFields", fields))
                         for j, r in enumerate(reqs) if r.operator not in _NODE_OPERATORS)
        terms.append(NodeSelectorTerm(exprs, fields, error))
    return NodeSelector(tuple(terms))


def label_selector(raw: object, field: str) -> LabelSelector | None:
    if raw is None:
        return None
    if type(raw) is not dict:
        raise FieldError(field, f"expected a label selector (a map), got {describe(raw)}")
    labels = string_map(raw.get("matchLabels"), f"{field}.matchLabels")
    reqs = [Requirement(k, "In", (v,)) for k, v in sorted(labels.items())]
    reqs.extend(requirements(raw.get("matchExpressions"), f"{field}.matchExpressions"))
    # What labels.NewRequirement refuses makes the selector select nothing (not bad input).
    error = next((e for e in (requirement_error(r, label_selector=True) for r in reqs) if e is not None), None)
    return LabelSelector(tuple(reqs), error)


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
    """Required (anti-)affinity terms; ``affinity_error`` says whether kube-scheduler can parse them."""
    out = []
    for i, term in enumerate(as_list(raw, field)):
        f = f"{field}[{i}]"
        term = as_map(term, f)
        ns_sel = label_selector(term.get("namespaceSelector"), f"{f}.namespaceSelector")
        raw_namespaces = as_list(term.get("namespaces"), f"{f}.namespaces")
        namespaces = frozenset(as_str(n, f"{f}.namespaces[{j}]") for j, n in enumerate(raw_namespaces))
        if not namespaces and ns_sel is None:
            namespaces = frozenset((namespace,))
        topology_key = required_str(term.get("topologyKey"), f"{f}.topologyKey")
        out.append(
            PodAffinityTerm(label_selector(term.get("labelSelector"), f"{f}.labelSelector"), namespaces, ns_sel,
                            topology_key)
        )
    return tuple(out)


def affinity_error(terms: Iterable[PodAffinityTerm]) -> str | None:
    """The first unparsable label or namespace selector of the terms, if any."""
    for term in terms:
        for selector in (term.selector, term.namespace_selector):
            if selector is not None and selector.error is not None:
                return selector.error
    return None

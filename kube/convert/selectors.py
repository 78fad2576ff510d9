"""Label and node selectors, and pod (anti-)affinity terms."""

from __future__ import annotations

from collections.abc import Iterable

from kube.convert.errors import FieldError, Json
from kube.convert.labelsyntax import field_requirement_error, requirement_error
from kube.model import LabelSelector, NodeSelector, NodeSelectorTerm, PodAffinityTerm, Requirement

__all__ = ["affinity_error", "affinity_terms", "label_selector", "node_selector", "parse_label_selector_string",
           "requirements"]


def requirements(raw: Iterable[Json] | None, field: str) -> tuple[Requirement, ...]:
    out = []
    for i, expr in enumerate(raw or ()):
        op = expr.get("operator")
        if op not in ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"):
            raise FieldError(f"{field}[{i}].operator", f"unknown operator {op!r}")
        values = tuple(str(v) for v in (expr.get("values") or ()))
        out.append(Requirement(str(expr.get("key", "")), op, values))
    return tuple(out)


def node_selector(raw: Json | None, field: str) -> NodeSelector | None:
    if raw is None:
        return None
    terms = []
    for i, term in enumerate(raw.get("nodeSelectorTerms") or ()):
        exprs = requirements(term.get("matchExpressions"), f"{field}.nodeSelectorTerms[{i}].matchExpressions")
        fields = requirements(term.get("matchFields"), f"{field}.nodeSelectorTerms[{i}].matchFields")
        errors = [requirement_error(r, label_selector=False) for r in exprs]
        errors += [field_requirement_error(r) for r in fields]
        error = next((e for e in errors if e is not None), None)
        terms.append(NodeSelectorTerm(exprs, fields, error))
    return NodeSelector(tuple(terms))


def label_selector(raw: Json | None, field: str) -> LabelSelector | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise FieldError(field, f"expected a label selector, got {raw!r}")
    reqs = [Requirement(str(k), "In", (str(v),)) for k, v in sorted((raw.get("matchLabels") or {}).items())]
    reqs.extend(requirements(raw.get("matchExpressions"), f"{field}.matchExpressions"))
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


def affinity_terms(raw: Iterable[Json] | None, namespace: str, field: str) -> tuple[PodAffinityTerm, ...]:
    """Required (anti-)affinity terms; ``affinity_error`` says whether kube-scheduler can parse them."""
    out = []
    for i, term in enumerate(raw or ()):
        f = f"{field}[{i}]"
        ns_sel = label_selector(term.get("namespaceSelector"), f"{f}.namespaceSelector")
        namespaces = frozenset(term.get("namespaces") or ())
        if not namespaces and ns_sel is None:
            namespaces = frozenset((namespace,))
        topology_key = term.get("topologyKey")
        if not topology_key:
            raise FieldError(f"{f}.topologyKey", "required")
        out.append(
            PodAffinityTerm(label_selector(term.get("labelSelector"), f"{f}.labelSelector"), namespaces, ns_sel,
                            str(topology_key))
        )
    return tuple(out)




def affinity_error(terms: Iterable[PodAffinityTerm]) -> str | None:
    """The first unparsable label or namespace selector of the terms, if any."""
    for term in terms:
        for selector in (term.selector, term.namespace_selector):
            if selector is not None and selector.error is not None:
                return selector.error
    return None

"""Patch semantics and selectors the fake API server needs (a small, documented subset).

* merge patch (RFC 7386) and the strategic merge patch as the client sends it for
  nodes: maps merge, ``null`` deletes, lists are replaced whole. (A real strategic
  merge would merge ``taints`` by key; the adapter always sends the whole list, so
  replacing is the same result for it.)
* JSON patch (RFC 6902): ``add``, ``remove``, ``replace``, ``test``.
* label selectors (``matchLabels`` and ``matchExpressions``) for PodDisruptionBudgets.
"""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["PatchError", "apply_json_patch", "apply_merge_patch", "selector_matches"]


class PatchError(Exception):
    """The patch cannot be applied (HTTP 422, or 409 for a failed ``test``)."""

    def __init__(self, message: str, conflict: bool = False) -> None:
        super().__init__(message)
        self.conflict = conflict


def apply_merge_patch(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = apply_merge_patch(result.get(key), value)
    return result


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def _parent(doc: Any, path: str) -> tuple[Any, str]:
    tokens = [_unescape(t) for t in path.split("/")[1:]]
    if not tokens:
        raise PatchError("a JSON patch path must not be empty")
    node = doc
    for token in tokens[:-1]:
        node = node[int(token)] if isinstance(node, list) else node[token]
    return node, tokens[-1]


def apply_json_patch(doc: Any, ops: Any) -> Any:
    if not isinstance(ops, list):
        raise PatchError("a JSON patch is a list of operations")
    result = copy.deepcopy(doc)
    for op in ops:
        try:
            parent, last = _parent(result, str(op["path"]))
            kind = op["op"]
            if kind == "test":
                current = parent[int(last)] if isinstance(parent, list) else parent.get(last)
                if current != op.get("value"):
                    raise PatchError(f"test of {op['path']} failed", conflict=True)
            elif kind == "remove":
                if isinstance(parent, list):
                    del parent[int(last)]
                else:
                    del parent[last]
            elif kind in ("add", "replace"):
                value = copy.deepcopy(op["value"])
                if isinstance(parent, list):
                    if last == "-":
                        parent.append(value)
                    elif kind == "add":
                        parent.insert(int(last), value)
                    else:
                        parent[int(last)] = value
                else:
                    if kind == "replace" and last not in parent:
                        raise PatchError(f"replace of missing {op['path']}")
                    parent[last] = value
            else:
                raise PatchError(f"unsupported JSON patch op {kind!r}")
        except (KeyError, IndexError, ValueError, TypeError) as exc:
            raise PatchError(f"cannot apply {op!r}: {exc}") from None
    return result


def _expression(labels: dict[str, str], expr: dict[str, Any]) -> bool:
    key, operator, values = expr.get("key", ""), expr.get("operator", ""), expr.get("values") or []
    if operator == "In":
        return labels.get(key) in values
    if operator == "NotIn":
        return labels.get(key) not in values
    if operator == "Exists":
        return key in labels
    if operator == "DoesNotExist":
        return key not in labels
    return False


def selector_matches(selector: dict[str, Any] | None, labels: dict[str, str]) -> bool:
    """A ``LabelSelector``: None selects nothing, ``{}`` selects everything (policy/v1)."""
    if selector is None:
        return False
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    return all(_expression(labels, e) for e in selector.get("matchExpressions") or [])

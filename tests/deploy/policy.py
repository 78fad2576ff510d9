"""NetworkPolicy semantics the manifest tests need: label selectors, and who a policy admits."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any

Json = dict[str, Any]


def selects(selector: Json, labels: Mapping[str, str]) -> bool:
    """A LabelSelector (matchLabels, matchExpressions with In/NotIn/Exists/DoesNotExist) on ``labels``."""
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for expr in selector.get("matchExpressions") or ():
        key, op, values = expr["key"], expr["operator"], expr.get("values") or []
        present = key in labels
        ok = {"In": present and labels[key] in values, "NotIn": not present or labels[key] not in values,
              "Exists": present, "DoesNotExist": not present}[op]
        if not ok:
            return False
    return True


def admits(policy: Json, port: str, *, pod: Mapping[str, str] | None = None,
           namespace: Mapping[str, str] | None = None, ip: str | None = None) -> bool:
    """Whether ``policy`` lets a peer in on the named ``port``: a pod of the policy's namespace
    with labels ``pod``, any pod of a namespace labelled ``namespace``, or an address ``ip``."""
    for rule in policy["spec"].get("ingress") or ():
        if rule.get("ports") and not any(p.get("port") == port for p in rule["ports"]):
            continue
        for peer in rule.get("from") or ():
            if "ipBlock" in peer:
                if ip is not None and ipaddress.ip_address(ip) in ipaddress.ip_network(peer["ipBlock"]["cidr"]):
                    return True
            elif "namespaceSelector" in peer:
                if namespace is not None and selects(peer["namespaceSelector"], namespace) \
                        and selects(peer.get("podSelector") or {}, pod or {}):
                    return True
            elif pod is not None and namespace is None and selects(peer["podSelector"], pod):
                return True
    return False

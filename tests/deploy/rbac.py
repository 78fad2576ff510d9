"""RBAC as data: expand rules to grants, and map API requests to what they need.

Shared by the manifest test (rules against the adapter's list of calls) and the
end-to-end test (every request the fake API server saw against the rendered rules).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

__all__ = ["Grant", "grants", "needed"]

Json = dict[str, Any]


@dataclass(frozen=True, slots=True, order=True)
class Grant:
    """One permission: API group, resource (with subresource), verb, and a name ("" = any)."""

    group: str
    resource: str
    verb: str
    name: str = ""


def grants(rules: Iterable[Json]) -> set[Grant]:
    """Every (group, resource, verb, name) the rules allow, one per combination."""
    out: set[Grant] = set()
    for rule in rules:
        names = rule.get("resourceNames") or [""]
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                for verb in rule["verbs"]:
                    out.update(Grant(group, resource, verb, name) for name in names)
    return out


_PATH = re.compile(r"^/(?:api/v1|apis/(?P<group>[^/]+)/[^/]+)(?:/namespaces/(?P<ns>[^/]+))?"
                   r"/(?P<resource>[^/]+)(?:/(?P<name>[^/]+))?(?:/(?P<sub>[^/]+))?$")
_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


def needed(method: str, path: str, query: dict[str, str]) -> tuple[str, Grant]:
    """(namespace or "", the grant) a request needs, as the API server's authorizer sees it."""
    match = _PATH.match(path)
    if match is None:
        raise ValueError(f"not a resource path: {path}")
    resource = match["resource"]
    name = match["name"] or ""
    if match["sub"]:
        resource = f"{resource}/{match['sub']}"
    if method == "GET":
        watching = query.get("watch") in ("1", "true")
        verb = "get" if name else "watch" if watching else "list"
        selector = query.get("fieldSelector", "")
        if not name and selector.startswith("metadata.name="):
            name = selector.removeprefix("metadata.name=")
    else:
        verb = _VERBS[method]
    if verb == "create" and not match["sub"]:
        name = ""  # create cannot be limited by name
    return match["ns"] or "", Grant(match["group"] or "", resource, verb, name)


def allowed(grant: Grant, available: set[Grant]) -> bool:
    return grant in available or Grant(grant.group, grant.resource, grant.verb) in available

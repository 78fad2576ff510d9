"""The ClusterRole and Role grant exactly what the live adapter calls: nothing missing, nothing more.

``CLUSTER_CALLS`` and ``NAMESPACE_CALLS`` list the (API group, resource, verb, name) the
adapter (``kubeapi/``) calls: its informers' LIST and WATCH (``kubeapi/kinds.py``) and its
actions (``kubeapi/acting.py``, ``kubeapi/events.py``, ``kubeapi/leader.py``); the adapter
exports no such list, so it is kept here, read from that code. The end-to-end test checks the
other direction at the wire: every request the fake API server saw is allowed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.deploy.kustomize import render
from tests.deploy.rbac import Grant, grants, needed

Json = dict[str, Any]

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"

_WATCHED = [
    ("", "nodes"), ("", "pods"), ("", "persistentvolumeclaims"), ("", "persistentvolumes"), ("", "namespaces"),
    ("", "replicationcontrollers"), ("storage.k8s.io", "storageclasses"), ("storage.k8s.io", "csinodes"),
    ("storage.k8s.io", "csidrivers"), ("storage.k8s.io", "csistoragecapacities"),
    ("storage.k8s.io", "volumeattachments"),
    ("policy", "poddisruptionbudgets"), ("apps", "replicasets"), ("apps", "statefulsets"),
    ("apps", "deployments"), ("apps", "daemonsets"), ("batch", "jobs"),
]

#: Cluster-wide: the informers, taints (GET then PUT of a node, as CA), evictions, events.
#: No pod deletion: nothing calls it (drains evict).
CLUSTER_CALLS = {
    *(Grant(group, resource, verb) for group, resource in _WATCHED for verb in ("list", "watch")),
    Grant("", "nodes", "get"), Grant("", "nodes", "update"),
    Grant("", "pods/eviction", "create"), Grant("", "events", "create"), Grant("", "events", "patch"),
}
#: In --namespace: the status ConfigMap (GET then PUT, or POST), the priority expander's
#: ConfigMap, the leader Lease; CA's names and a --dry-run shadow's own.
NAMESPACE_CALLS = {
    Grant("", "configmaps", "create"),
    *(Grant("", "configmaps", verb, name) for verb in ("get", "update")
      for name in ("cluster-autoscaler-status", "storage-autoscaler-shadow-status")),
    Grant("", "configmaps", "list", "cluster-autoscaler-priority-expander"),
    Grant("", "configmaps", "watch", "cluster-autoscaler-priority-expander"),
    Grant("coordination.k8s.io", "leases", "create"),
    *(Grant("coordination.k8s.io", "leases", verb, name) for verb in ("get", "update")
      for name in ("cluster-autoscaler", "storage-autoscaler-shadow")),
}


def _rules(kind: str) -> list[Json]:
    (role,) = [o for o in render(DEPLOY / "overlays" / "eks") if o["kind"] == kind]
    rules: list[Json] = role["rules"]
    return rules


@pytest.mark.parametrize(("kind", "expected"), [
    pytest.param("ClusterRole", CLUSTER_CALLS, id="cluster-role"),
    pytest.param("Role", NAMESPACE_CALLS, id="role"),
])
def test_rules_grant_exactly_the_adapters_calls(kind: str, expected: set[Grant]) -> None:
    granted = grants(_rules(kind))
    assert sorted(expected - granted) == [], "calls the role does not allow"
    assert sorted(granted - expected) == [], "grants no call needs"


@pytest.mark.parametrize("kind", ["ClusterRole", "Role"])
def test_no_wildcards(kind: str) -> None:
    for rule in _rules(kind):
        for key in ("apiGroups", "resources", "verbs", "resourceNames"):
            assert "*" not in rule.get(key, []), f"{kind}: wildcard in {key}"
        assert "nonResourceURLs" not in rule


@pytest.mark.parametrize(("method", "path", "query", "expected"), [
    pytest.param("GET", "/api/v1/pods", {"watch": "1"}, ("", Grant("", "pods", "watch")), id="watch"),
    pytest.param("GET", "/apis/storage.k8s.io/v1/csinodes", {}, ("", Grant("storage.k8s.io", "csinodes", "list")),
                 id="list"),
    pytest.param("POST", "/api/v1/namespaces/db/pods/kafka-0/eviction", {},
                 ("db", Grant("", "pods/eviction", "create", "kafka-0")), id="eviction"),
    pytest.param("GET", "/api/v1/namespaces/kube-system/configmaps",
                 {"fieldSelector": "metadata.name=cluster-autoscaler-priority-expander"},
                 ("kube-system", Grant("", "configmaps", "list", "cluster-autoscaler-priority-expander")),
                 id="list-by-name"),
    pytest.param("PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/cluster-autoscaler", {},
                 ("kube-system", Grant("coordination.k8s.io", "leases", "update", "cluster-autoscaler")),
                 id="lease-update"),
    pytest.param("POST", "/api/v1/namespaces/default/events", {}, ("default", Grant("", "events", "create")),
                 id="event"),
])
def test_requests_map_to_the_grants_they_need(method: str, path: str, query: dict[str, str],
                                              expected: tuple[str, Grant]) -> None:
    assert needed(method, path, query) == expected

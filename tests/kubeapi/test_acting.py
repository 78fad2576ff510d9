"""Acting at the wire: taints with conflicts, evictions against PDBs, Events, the status ConfigMap."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.request import Request, urlopen

import pytest

from kube.clusterapi import ClusterAPIError, Eviction, NotFound, TransientAPIError
from kube.model import Taint
from kube.names import CA_DELETION_CANDIDATE_TAINT, CA_TO_BE_DELETED_TAINT
from kubeapi import STATUS_CONFIGMAP, KubeClusterAPI, NotLeader
from tests.factories import node_json, pod_json
from tests.fakeapi import FakeAPIServer
from tests.kubeapi.conftest import connect, eventually

TO_BE_DELETED = Taint(CA_TO_BE_DELETED_TAINT, "1700000000", "NoSchedule")


def _taint_keys(api: FakeAPIServer, node: str) -> list[str]:
    return [t["key"] for t in api.state.get("Node", node).get("spec", {}).get("taints") or []]


def _pdb(name: str, app: str, allowed: int) -> dict[str, Any]:
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"app": app}}, "minAvailable": 1},
            "status": {"disruptionsAllowed": allowed}}


@pytest.mark.parametrize(("faults", "patches"), [
    pytest.param([], 1, id="first-try"),
    pytest.param([409], 2, id="conflict-then-success"),
    pytest.param([409, 409, 409], 4, id="three-conflicts"),
    pytest.param([500, 503], 3, id="5xx-retried"),
    pytest.param([429], 2, id="throttled-retried"),
])
def test_taint_retries_conflicts_and_transient_errors(api: FakeAPIServer, cluster: KubeClusterAPI,
                                                      faults: list[int], patches: int) -> None:
    api.state.put(node_json("n0", taints=[{"key": "other", "effect": "NoSchedule"}]))
    for code in faults:
        api.fail(r"/api/v1/nodes/n0$", code, method="PUT")
    cluster.taint_node("n0", TO_BE_DELETED)
    assert _taint_keys(api, "n0") == ["other", CA_TO_BE_DELETED_TAINT]
    assert len(api.requests("PUT", "/nodes/n0")) == patches
    eventually(lambda: cluster.list_objects().nodes[0].has_taint(CA_TO_BE_DELETED_TAINT), what="taint in cache")


def test_a_concurrent_write_is_a_real_conflict(api: FakeAPIServer, cluster: KubeClusterAPI) -> None:
    """The update carries the resourceVersion read: the fake answers 409 when the node moved on."""
    api.state.put(node_json("n0"))
    stale = api.state.get("Node", "n0")
    api.state.put(node_json("n0", cpu="8"))  # someone else writes
    body = json.dumps(stale).encode()
    request = Request(f"{api.url}/api/v1/nodes/n0", body, method="PUT", headers={"Content-Type": "application/json"})
    with pytest.raises(Exception, match="409"):
        urlopen(request, timeout=2)
    cluster.taint_node("n0", TO_BE_DELETED)  # the adapter re-reads and succeeds
    assert _taint_keys(api, "n0") == [CA_TO_BE_DELETED_TAINT]


def test_taint_and_untaint_are_idempotent(api: FakeAPIServer, cluster: KubeClusterAPI) -> None:
    api.state.put(node_json("n0"))
    cluster.taint_node("n0", TO_BE_DELETED)
    cluster.taint_node("n0", TO_BE_DELETED)
    cluster.taint_node("n0", Taint(CA_DELETION_CANDIDATE_TAINT, "1", "PreferNoSchedule"))
    assert _taint_keys(api, "n0") == [CA_TO_BE_DELETED_TAINT, CA_DELETION_CANDIDATE_TAINT]
    cluster.untaint_node("n0", CA_TO_BE_DELETED_TAINT)
    cluster.untaint_node("n0", CA_TO_BE_DELETED_TAINT)
    assert _taint_keys(api, "n0") == [CA_DELETION_CANDIDATE_TAINT]
    assert len(api.requests("PUT", "/nodes/n0")) == 3, "no-ops make no write"


def test_taint_of_a_missing_node_is_not_found(cluster: KubeClusterAPI) -> None:
    with pytest.raises(NotFound, match="node gone"):
        cluster.taint_node("gone", TO_BE_DELETED)


def test_persistent_5xx_is_raised_as_transient_and_counted(api: FakeAPIServer, cluster: KubeClusterAPI) -> None:
    api.state.put(node_json("n0"))
    api.fail(r"/api/v1/nodes/n0$", 500, times=10, method="GET")
    with pytest.raises(TransientAPIError, match="HTTP 500"):
        cluster.taint_node("n0", TO_BE_DELETED)
    assert cluster.acting.failures["taint"] == 1
    assert len(api.requests("GET", "/nodes/n0")) == 3, "RetryPolicy.attempts"


def test_timeouts_are_retried(api: FakeAPIServer, cluster: KubeClusterAPI) -> None:
    api.state.put(node_json("n0"))
    api.fail(r"/api/v1/nodes/n0$", "timeout", method="GET", delay=1.5)
    cluster.taint_node("n0", TO_BE_DELETED)
    assert _taint_keys(api, "n0") == [CA_TO_BE_DELETED_TAINT]


def test_eviction_refused_by_a_pdb_then_allowed(api: FakeAPIServer, cluster: KubeClusterAPI) -> None:
    api.state.put(pod_json("web-1", node="n0", pending=False, labels={"app": "web"}))
    api.state.put(_pdb("web", "web", allowed=0))
    refused = cluster.evict_pod("default", "web-1", grace_period_seconds=5)
    assert refused.outcome is Eviction.REFUSED
    assert "disruption budget" in refused.message
    assert api.state.names("Pod") == ["web-1"]
    api.state.put(_pdb("web", "web", allowed=1))  # the disruption controller allows one now
    assert cluster.evict_pod("default", "web-1", grace_period_seconds=5).outcome is Eviction.EVICTED
    assert api.state.names("Pod") == []
    assert api.state.get("PodDisruptionBudget", "web", "default")["status"]["disruptionsAllowed"] == 0
    body = api.requests("POST", "/eviction$")[-1].body
    assert body["deleteOptions"] == {"gracePeriodSeconds": 5}
    eventually(lambda: cluster.pods_on_node("n0") == [], what="pod gone from the cache")


def test_eviction_of_a_missing_pod_is_gone(cluster: KubeClusterAPI) -> None:
    assert cluster.evict_pod("default", "nope").outcome is Eviction.GONE


def test_eviction_5xx_is_retried(api: FakeAPIServer, cluster: KubeClusterAPI) -> None:
    api.state.put(pod_json("p", node="n0", pending=False))
    api.fail("/eviction$", 503, times=2)
    assert cluster.evict_pod("default", "p").outcome is Eviction.EVICTED


@pytest.mark.parametrize(("target", "warning", "stored"), [
    pytest.param(("Node", ""), False, ("default", "Normal"), id="node-normal"),
    pytest.param(("Pod", "apps"), True, ("apps", "Warning"), id="pod-warning"),
])
def test_events_carry_reason_and_object(api: FakeAPIServer, cluster: KubeClusterAPI, target: tuple[str, str],
                                        warning: bool, stored: tuple[str, str]) -> None:
    (kind, namespace), (stored_ns, type_) = target, stored
    cluster.record_event(kind, namespace, "obj", "ScaleDown", "removing node", warning=warning)
    (post,) = api.requests("POST", f"/namespaces/{stored_ns}/events$")
    event = post.body
    assert (event["reason"], event["type"], event["message"]) == ("ScaleDown", type_, "removing node")
    assert event["involvedObject"]["kind"] == kind and event["involvedObject"]["name"] == "obj"
    assert event["source"]["component"] == "cluster-autoscaler"


def test_a_failed_event_is_counted_not_raised(api: FakeAPIServer, cluster: KubeClusterAPI) -> None:
    api.fail("/events$", 500, times=10)
    cluster.record_event("Node", "", "n0", "ScaleDownFailed", "x", warning=True)
    assert cluster.acting.failures["event"] == 1


def test_status_configmap_is_created_then_updated(api: FakeAPIServer, cluster: KubeClusterAPI) -> None:
    cluster.write_status("Cluster-autoscaler status at ...\nHealth: Healthy")
    cm = api.state.get("ConfigMap", STATUS_CONFIGMAP, "kube-system")
    assert cm["data"] == {"status": "Cluster-autoscaler status at ...\nHealth: Healthy"}
    assert "cluster-autoscaler.kubernetes.io/last-updated" in cm["metadata"]["annotations"]
    cluster.write_status("second")
    assert api.state.get("ConfigMap", STATUS_CONFIGMAP, "kube-system")["data"] == {"status": "second"}
    assert len(api.requests("POST", "/configmaps$")) == 1


def test_status_created_concurrently_is_patched(api: FakeAPIServer, cluster: KubeClusterAPI) -> None:
    api.fail(f"/configmaps/{STATUS_CONFIGMAP}$", 404, method="GET")
    api.state.put({"apiVersion": "v1", "kind": "ConfigMap", "data": {"status": "old"},
                   "metadata": {"name": STATUS_CONFIGMAP, "namespace": "kube-system"}})
    cluster.write_status("new")  # 404 on read, 409 AlreadyExists on create, then read and updated
    assert api.state.get("ConfigMap", STATUS_CONFIGMAP, "kube-system")["data"] == {"status": "new"}


def test_without_the_lease_nothing_is_sent(api: FakeAPIServer, tmp_path: Path) -> None:
    follower = connect(api, tmp_path, may_act=lambda: False)
    with pytest.raises(NotLeader):
        follower.taint_node("n0", TO_BE_DELETED)
    with pytest.raises(NotLeader):
        follower.evict_pod("default", "p")
    with pytest.raises(NotLeader):
        follower.write_status("x")
    assert api.mutations == []


def test_read_only_server_records_and_refuses_every_write(api: FakeAPIServer, cluster: KubeClusterAPI) -> None:
    api.state.put(node_json("n0"))
    api.read_only = True
    with pytest.raises(ClusterAPIError, match="403"):
        cluster.taint_node("n0", TO_BE_DELETED)
    cluster.record_event("Node", "", "n0", "ScaleDown", "x")
    assert [(r.method, r.path) for r in api.mutations] == [
        ("PUT", "/api/v1/nodes/n0"), ("POST", "/api/v1/namespaces/default/events")]
    assert _taint_keys(api, "n0") == []


def test_an_evicted_pod_stays_terminating_until_it_is_gone(api: FakeAPIServer, cluster: KubeClusterAPI) -> None:
    api.state.graceful_deletion = True
    api.state.put(pod_json("slow", node="n0", pending=False))
    assert cluster.evict_pod("default", "slow", grace_period_seconds=20).outcome is Eviction.EVICTED
    eventually(lambda: [p.deleted is not None for p in cluster.pods_on_node("n0")] == [True], what="terminating")
    assert api.state.get("Pod", "slow", "default")["metadata"]["deletionGracePeriodSeconds"] == 20
    api.state.remove("Pod", "slow", "default")  # the kubelet finishes
    eventually(lambda: cluster.pods_on_node("n0") == [], what="gone")

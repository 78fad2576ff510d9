"""The watch caches at the wire: initial sync, watch events, bookmarks, 410 relist, faults."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from kube.clusterapi import ViewUnavailable
from kubeapi import ConfigError, KubeClusterAPI, TokenBucket
from tests.factories import node_json, pod_json
from tests.fakeapi import FakeAPIServer
from tests.kubeapi.conftest import connect, eventually


def _seed(api: FakeAPIServer, nodes: int = 2, pods_per_node: int = 2) -> None:
    for i in range(nodes):
        api.state.put(node_json(f"n{i}"))
        for j in range(pods_per_node):
            api.state.put(pod_json(f"p{i}-{j}", node=f"n{i}", pending=False))


def test_initial_sync_converts_to_the_model(api: FakeAPIServer, tmp_path: Path) -> None:
    _seed(api)
    cluster = connect(api, tmp_path)
    with pytest.raises(ViewUnavailable, match="not synced"):
        cluster.list_objects()
    cluster.start()
    try:
        assert cluster.wait_synced(15.0)
        objects = cluster.list_objects()
        assert [n.name for n in objects.nodes] == ["n0", "n1"]
        assert sorted(p.name for p in objects.pods) == ["p0-0", "p0-1", "p1-0", "p1-1"]
        assert objects.pods[0].requests.cpu == 1000
        assert {p.name for p in cluster.pods_on_node("n1")} == {"p1-0", "p1-1"}
        assert cluster.unavailable_count == 1
        auth = {r.authorization for r in api.requests("GET")}
        assert auth == {"Bearer fake-token"}, "the kubeconfig's token is sent"
    finally:
        cluster.stop()


@pytest.mark.parametrize("change", [
    pytest.param("add", id="added"),
    pytest.param("modify", id="modified"),
    pytest.param("delete", id="deleted"),
])
def test_watch_events_update_the_cache_without_listing(api: FakeAPIServer, cluster: KubeClusterAPI,
                                                      change: str) -> None:
    lists_before = sum(n for call, n in cluster.transport.calls.items() if call.startswith("LIST"))
    version = cluster.caches.version
    if change == "add":
        api.state.put(pod_json("new", node="n9", pending=False))
        eventually(lambda: any(p.name == "new" for p in cluster.list_objects().pods), what="ADDED pod")
    elif change == "modify":
        api.state.put(node_json("n9"))
        api.state.put(node_json("n9", cpu="16"))
        eventually(lambda: [n.allocatable.cpu for n in cluster.list_objects().nodes] == [16000], what="MODIFIED")
    else:
        api.state.put(node_json("n9"))
        eventually(lambda: len(cluster.list_objects().nodes) == 1, what="ADDED node")
        api.state.remove("Node", "n9")
        eventually(lambda: cluster.list_objects().nodes == [], what="DELETED node")
    assert cluster.caches.version > version
    lists_after = sum(n for call, n in cluster.transport.calls.items() if call.startswith("LIST"))
    assert lists_after == lists_before, "a loop reads memory, never LISTs"


def test_bookmarks_advance_the_resource_version(api: FakeAPIServer, cluster: KubeClusterAPI) -> None:
    informer = cluster.caches.informers["pods"]
    before = int(informer.resource_version)
    api.state.put(node_json("elsewhere"))  # another resource's write moves the global version
    eventually(lambda: int(informer.resource_version) > before, what="a bookmark")


def test_410_gone_relists_and_resyncs(api: FakeAPIServer, cluster: KubeClusterAPI) -> None:
    pods = cluster.caches.informers["pods"]
    assert pods.relists == 1
    api.state.compact()
    api.state.put(pod_json("after", node="n0", pending=False))
    eventually(lambda: pods.relists == 2 and cluster.synced, what="relist after 410")
    assert [p.name for p in cluster.list_objects().pods] == ["after"]
    lists = api.requests("GET", r"/api/v1/pods$", watch=False)
    assert len(lists) == 2
    status = cluster.caches.status()["pods"]
    assert (status["synced"], status["down"], status["objects"], status["relists"]) == (True, None, 1, 2)


def test_listener_hears_changes(api: FakeAPIServer, cluster: KubeClusterAPI) -> None:
    heard: list[tuple[str, str]] = []
    cluster.caches.add_listener(lambda cache, event, obj: heard.append((cache, event)))
    api.state.put(node_json("n5"))
    eventually(lambda: ("nodes", "ADDED") in heard, what="listener")


@pytest.mark.parametrize("outcome", [
    pytest.param(500, id="5xx"),
    pytest.param(429, id="throttled"),
    pytest.param(403, id="forbidden-until-rbac-is-fixed"),
    pytest.param("timeout", id="timeout"),
])
def test_list_failure_keeps_the_view_unavailable_until_it_succeeds(api: FakeAPIServer, tmp_path: Path,
                                                                  outcome: int | str,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="kubeapi.informer")
    _seed(api, nodes=1)
    api.fail(r"/api/v1/pods$", outcome, times=2, watch=False, delay=1.5)
    cluster = connect(api, tmp_path)
    cluster.start()
    try:
        eventually(lambda: cluster.caches.informers["pods"].watch_errors >= 1, what="a failed LIST")
        assert cluster.wait_synced(15.0)
        assert len(cluster.list_objects().pods) == 2
        assert cluster.caches.informers["pods"].watch_errors == 2
        said = [r.getMessage() for r in caplog.records if r.getMessage().startswith("pods:")]
        assert len(said) == 2, f"one line when the outage starts, one when it ends: {said}"
    finally:
        cluster.stop()


@pytest.mark.parametrize("outcome", [
    pytest.param(503, id="5xx"),
    pytest.param("timeout", id="timeout"),
])
def test_a_lost_watch_makes_the_view_unavailable(api: FakeAPIServer, cluster: KubeClusterAPI,
                                                outcome: int | str) -> None:
    nodes = cluster.caches.informers["nodes"]
    # The open watch ends (server-side timeout); reopening it fails twice.
    api.fail(r"/api/v1/nodes$", outcome, times=2, watch=True, delay=0.5)
    api.state.end_watches()
    eventually(lambda: nodes.down is not None, what="watch marked lost")
    with pytest.raises(ViewUnavailable, match="watch of nodes lost"):
        cluster.list_objects()
    eventually(lambda: cluster.synced, timeout=10.0, what="watch reopened")
    api.state.put(node_json("late"))
    eventually(lambda: [n.name for n in cluster.list_objects().nodes] == ["late"], what="events after reconnect")


def test_a_pod_that_cannot_be_converted_protects_its_node(api: FakeAPIServer, cluster: KubeClusterAPI) -> None:
    api.state.put(node_json("n0"))
    api.state.put(node_json("n1"))
    bad = pod_json("bad", node="n1", pending=False)
    bad["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "lots"
    api.state.put(bad)
    # Nodes and pods arrive on separate watches: wait for both, in either order.
    eventually(lambda: cluster.caches.informers["pods"].failed != {}
               and len(cluster.list_objects().nodes) == 2, what="conversion failure and both nodes")
    objects = cluster.list_objects()
    assert [(n.name, n.scale_down_disabled) for n in objects.nodes] == [("n0", False), ("n1", True)]
    assert objects.pods == []
    assert any("Pod/default/bad" in w and "cpu" in w for w in objects.warnings), objects.warnings
    api.state.remove("Pod", "bad")
    eventually(lambda: not any(n.scale_down_disabled for n in cluster.list_objects().nodes), what="protection lifted")


def test_pods_on_node_follows_binding_and_deletion(api: FakeAPIServer, cluster: KubeClusterAPI) -> None:
    api.state.put(pod_json("p", node=""))
    eventually(lambda: cluster.caches.pod("default", "p") is not None, what="pending pod")
    assert cluster.pods_on_node("n0") == []
    api.state.put(pod_json("p", node="n0", pending=False))
    eventually(lambda: [p.name for p in cluster.pods_on_node("n0")] == ["p"], what="bound pod")
    api.state.remove("Pod", "p")
    eventually(lambda: cluster.pods_on_node("n0") == [], what="deleted pod")


def test_a_bad_kubeconfig_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text("clusters: [", encoding="utf-8")
    with pytest.raises(ConfigError, match="kubeconfig: cannot load the Kubernetes client configuration") as err:
        KubeClusterAPI.from_kubeconfig(str(path))
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(("qps", "burst", "calls", "waited"), [
    pytest.param(10.0, 3, 3, 0.0, id="within-burst"),
    pytest.param(10.0, 3, 5, 0.2, id="beyond-burst-waits"),
    pytest.param(2.0, 1, 3, 1.0, id="one-at-a-time"),
])
def test_token_bucket(qps: float, burst: int, calls: int, waited: float) -> None:
    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    bucket = TokenBucket(qps, burst, clock=lambda: now[0], sleep=sleep)
    for _ in range(calls):
        bucket.acquire()
    assert bucket.waited == pytest.approx(waited)
    assert now[0] == pytest.approx(waited)


def test_a_reader_runs_only_the_caches_it_names(api: FakeAPIServer, tmp_path: Path) -> None:
    _seed(api, nodes=1)
    reader = connect(api, tmp_path, kinds=("nodes", "pods"))
    reader.start()
    try:
        assert reader.wait_synced(5.0)
        assert sorted(reader.caches.informers) == ["nodes", "pods"]
        assert len(reader.caches.pods()) == 2
        assert {r.path for r in api.requests("GET", watch=False)} == {"/api/v1/nodes", "/api/v1/pods"}
    finally:
        reader.stop()
    with pytest.raises(ValueError, match="unknown caches"):
        connect(api, tmp_path, kinds=("nodes", "gadgets"))


def test_an_optional_api_the_server_lacks_is_an_empty_cache(api: FakeAPIServer, tmp_path: Path) -> None:
    api.fail("/csistoragecapacities$", 404, times=1, watch=False)
    cluster = connect(api, tmp_path)
    cluster.start()
    try:
        assert cluster.wait_synced(15.0), cluster.caches.unavailable_reason()
        assert cluster.list_objects().csi_capacities == []
        assert api.requests("GET", "/csistoragecapacities$", watch=True) == [], "nothing to watch"
    finally:
        cluster.stop()

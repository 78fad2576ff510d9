"""The watch caches at the wire: initial sync, watch events, bookmarks, 410 relist, faults."""

from __future__ import annotations

from pathlib import Path

import pytest

from kube.clusterapi import ViewUnavailable
from kubeapi import KubeClusterAPI
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
        assert cluster.wait_synced(5.0)
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


def test_listener_hears_changes(api: FakeAPIServer, cluster: KubeClusterAPI) -> None:
    heard: list[tuple[str, str]] = []
    cluster.caches.add_listener(lambda cache, event, obj: heard.append((cache, event)))
    api.state.put(node_json("n5"))
    eventually(lambda: ("nodes", "ADDED") in heard, what="listener")


def test_list_failure_keeps_the_view_unavailable_until_it_succeeds(api: FakeAPIServer, tmp_path: Path) -> None:
    _seed(api, nodes=1)
    api.fail(r"/api/v1/pods$", 500, times=3, watch=False)
    cluster = connect(api, tmp_path)
    cluster.start()
    try:
        eventually(lambda: cluster.caches.informers["pods"].watch_errors >= 1, what="a failed LIST")
        assert cluster.wait_synced(5.0)
        assert len(cluster.list_objects().pods) == 2
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

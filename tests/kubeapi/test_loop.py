"""The real loop over the live adapter: no decision, and no write, on a partial view."""

from __future__ import annotations

from pathlib import Path

import pytest

from autoscaler.loop import Autoscaler
from cloudproviders.snapshot import SnapshotProvider
from kube.clusterapi import ViewUnavailable
from kube.model import NodeGroupSpec
from kube.names import CA_TO_BE_DELETED_TAINT
from tests.factories import node_json, options, pod_json
from tests.fakeapi import FakeAPIServer
from tests.kubeapi.conftest import connect, eventually

NOW = 1_800_000_000.0
GROUP = NodeGroupSpec(name="ng", min_size=0, max_size=5, target_size=None, node_names=("n0", "n1"),
                      node_selector=(), template=None)


def _cluster(api: FakeAPIServer) -> None:
    """n0 runs a pod; n1 is empty, so a loop with a complete view scales n1 down."""
    api.state.put(node_json("n0"))
    api.state.put(node_json("n1"))
    api.state.put(pod_json("busy", cpu="2", node="n0", pending=False))


@pytest.mark.parametrize(("fault", "outcome"), [
    pytest.param("list", 503, id="pods-never-listed-5xx"),
    pytest.param("list", "timeout", id="pods-list-times-out"),
    pytest.param("watch", 503, id="pods-watch-lost-5xx"),
    pytest.param("watch", "timeout", id="pods-watch-times-out"),
])
def test_partial_view_skips_the_loop_and_writes_nothing(api: FakeAPIServer, tmp_path: Path, fault: str,
                                                        outcome: int | str) -> None:
    _cluster(api)
    if fault == "list":
        injected = api.fail(r"/api/v1/pods$", outcome, times=10_000, watch=False, delay=0.3)
    cluster = connect(api, tmp_path)
    cluster.start()
    try:
        if fault == "watch":
            assert cluster.wait_synced(5.0)
            injected = api.fail(r"/api/v1/pods$", outcome, times=10_000, watch=True, delay=0.3)
            api.state.end_watches()
        eventually(lambda: cluster.caches.informers["pods"].watch_errors > 0, what="pods cache failing")
        # The nodes cache syncs on its own thread: read it only once it holds both nodes
        # (under load it may lag the pods cache's first failure).
        eventually(lambda: len(cluster.caches.nodes()) == 2, what="nodes cached")
        nodes = cluster.caches.nodes()
        loop = Autoscaler(cluster, SnapshotProvider([GROUP], nodes), options("--scale-down-unneeded-time=0s"))
        for tick in range(3):
            with pytest.raises(ViewUnavailable, match="pods"):
                loop.run_once(NOW + tick)
        assert api.mutations == [], "no taint, eviction, event or status on a partial view"
        assert cluster.unavailable_count >= 3

        injected.times = 0  # the API server recovers
        assert cluster.wait_synced(5.0)
        loop.run_once(NOW + 10)
        patched = [r.path for r in api.mutations if r.method == "PUT" and "/nodes/" in r.path]
        assert patched == ["/api/v1/nodes/n1"], "with the whole view, only the empty node goes"
        taints = api.state.get("Node", "n1")["spec"]["taints"]
        assert [t["key"] for t in taints] == [CA_TO_BE_DELETED_TAINT]
    finally:
        cluster.stop()

"""``annotate_node`` at the wire: one merge patch of one annotation, set and removed, errors typed."""

from __future__ import annotations

import pytest

from kube.clusterapi import NotFound
from kubeapi import KubeClusterAPI
from tests.factories import node_json
from tests.fakeapi import FakeAPIServer

KEY = "autoscaler.storage.dev/explain"


def _annotations(api: FakeAPIServer, node: str) -> dict[str, str]:
    annotations: dict[str, str] = api.state.get("Node", node)["metadata"].get("annotations") or {}
    return annotations


@pytest.mark.parametrize(("faults", "patches"), [
    pytest.param([], 1, id="first-try"),
    pytest.param([503], 2, id="5xx-retried"),
])
def test_an_annotation_is_set_then_removed_leaving_the_others(api: FakeAPIServer, cluster: KubeClusterAPI,
                                                              faults: list[int], patches: int) -> None:
    api.state.put(node_json("n0", annotations={"keep": "me"}))
    for code in faults:
        api.fail(r"/api/v1/nodes/n0$", code, method="PUT")
    cluster.annotate_node("n0", KEY, "Unremovable: NotUnderutilized")
    assert _annotations(api, "n0") == {"keep": "me", KEY: "Unremovable: NotUnderutilized"}
    assert len(api.requests("PUT", "/nodes/n0")) == patches
    cluster.annotate_node("n0", KEY, None)
    assert _annotations(api, "n0") == {"keep": "me"}


def test_a_missing_node_is_not_found(cluster: KubeClusterAPI) -> None:
    with pytest.raises(NotFound):
        cluster.annotate_node("gone", KEY, "x")

"""The extender's filter and prioritize verbs over real HTTP, table-driven."""

from __future__ import annotations

from typing import Any

import pytest

from kube.convert import convert_node
from kube.model import Node
from scheduling.storage_filter import REASON_UNKNOWN_NODE
from simulator.volumes import (
    REASON_BIND_CONFLICT,
    REASON_NODE_CONFLICT,
    REASON_NOT_ENOUGH_SPACE,
    REASON_UNBOUND_IMMEDIATE,
)
from tests.factories import (
    NAMES,
    ZONE,
    cluster,
    csi_capacity,
    csi_driver,
    node,
    node_json,
    pod_json,
    pv,
    pvc,
    storage_class,
)
from tests.scheduling.wire import extender_args, extender_at

SPACE, PINNED, BIND, IMMEDIATE = REASON_NOT_ENOUGH_SPACE, REASON_NODE_CONFLICT, REASON_BIND_CONFLICT, \
    REASON_UNBOUND_IMMEDIATE


def raw_node(name: str, annotation: str | None) -> Node:
    """A node whose capacity annotation is exactly ``annotation`` (absent when None)."""
    obj = node_json(name)
    if annotation is not None:
        obj["metadata"]["annotations"][NAMES.capacity_annotation] = annotation
    warnings: list[str] = []
    return convert_node(obj, NAMES, warnings)


TWO_CLAIMS = [pvc("a", "60Gi"), pvc("b", "60Gi")]
CSI = "csi.example.com"

FILTER_CASES = [
    pytest.param(
        [node("n100", storage_free="100Gi"), node("n200", storage_free="200Gi"), storage_class(), *TWO_CLAIMS],
        ["a", "b"], {"n200"}, {"n100": SPACE}, id="claims-summed-against-free-capacity"),
    pytest.param(
        [node("n120", storage_free="120Gi"), storage_class(), *TWO_CLAIMS],
        ["a", "b"], {"n120"}, {}, id="exact-fit-passes"),
    pytest.param(
        [raw_node("none", None), raw_node("bad", "lots"), raw_node("neg", "-5"), node("ok", storage_free="1Ti"),
         storage_class(), pvc("a", "1Gi")],
        ["a"], {"ok"}, {"none": SPACE, "bad": SPACE, "neg": SPACE}, id="missing-or-malformed-annotation-no-capacity"),
    pytest.param(
        [node("n1", storage_free="0"), node("n2", storage_free="1Ti"), storage_class(),
         pvc("data", "500Gi", volume="pv-1"), pv("pv-1", "500Gi", hosts=["n1"], claim=("default", "data"))],
        ["data"], {"n1"}, {"n2": PINNED}, id="bound-claim-pinned-pv-ignores-capacity"),
    pytest.param(
        [node("n1", storage_free="10Gi"), node("n2", storage_free="1Ti"), storage_class(),
         pvc("data", "500Gi", volume="pv-1"), pv("pv-1", "500Gi", hosts=["n1"], claim=("default", "data")),
         pvc("new", "20Gi")],
        ["data", "new"], set(), {"n1": SPACE, "n2": PINNED}, id="pinned-pv-plus-new-claim-on-a-full-node"),
    pytest.param(
        [node("n1", storage_free="1Ti"), storage_class("imm", binding="Immediate"), pvc("a", "1Gi", "imm")],
        ["a"], set(), {"n1": IMMEDIATE}, id="immediate-unbound-claim-fits-nowhere"),
    pytest.param(
        [node("n1", storage_free="1Ti"), node("n2")], [], {"n1", "n2"}, {}, id="pod-without-claims-fits-everywhere"),
    pytest.param(
        [node("a1", storage_free="1Ti", labels={ZONE: "a"}), node("b1", storage_free="1Ti", labels={ZONE: "b"}),
         storage_class(allowed_topologies={ZONE: ["a"]}), pvc("a", "1Gi")],
        ["a"], {"a1"}, {"b1": BIND}, id="allowed-topologies-of-local-class"),
    pytest.param(
        [node("a1", labels={ZONE: "a"}), node("b1", labels={ZONE: "b"}), node("c1", labels={ZONE: "c"}),
         storage_class("net", CSI), csi_driver(CSI),
         csi_capacity("cap-a", "net", {ZONE: "a"}, "50Gi"), csi_capacity("cap-b", "net", {ZONE: "b"}, "1Ti", "80Gi"),
         csi_capacity("cap-c", "net", {ZONE: "c"}, "1Ti"), pvc("a", "100Gi", "net")],
        ["a"], {"c1"}, {"a1": SPACE, "b1": SPACE}, id="csi-storage-capacity-segments-and-maximum-volume-size"),
    pytest.param(
        [node("n1", storage_free="1Ti"), storage_class("net", CSI), pvc("a", "100Gi", "net")],
        ["a"], {"n1"}, {}, id="csi-driver-without-capacity-tracking-is-not-checked"),
]


@pytest.mark.parametrize(("objects", "claims", "passed", "failed"), FILTER_CASES)
def test_filter_node_cache(objects: list[Any], claims: list[str], passed: set[str], failed: dict[str, str]) -> None:
    objs = cluster(*objects)
    names = [n.name for n in objs.nodes]
    with extender_at(objs) as (client, _, _):
        result = client.post("/filter", extender_args(pod_json("web", claims=claims), names=names))
    assert set(result["NodeNames"]) == passed
    assert result["Nodes"] is None
    assert result["FailedNodes"] == failed
    assert result["FailedAndUnresolvableNodes"] == failed
    assert result["Error"] == ""


@pytest.mark.parametrize(("objects", "claims", "passed", "failed"), FILTER_CASES)
def test_filter_full_nodes_agrees(objects: list[Any], claims: list[str], passed: set[str],
                                  failed: dict[str, str]) -> None:
    """nodeCacheCapable false: the same answers from the nodes in the request (the view has none)."""
    objs = cluster(*objects)
    raw = {n.name: n for n in objs.nodes}
    node_objs = [_node_json_of(n) for n in raw.values()]
    objs.nodes = []
    with extender_at(objs) as (client, _, _):
        result = client.post("/filter", extender_args(pod_json("web", claims=claims), nodes=node_objs))
    assert {n["metadata"]["name"] for n in result["Nodes"]["items"]} == passed
    assert result["NodeNames"] is None
    assert result["FailedNodes"] == failed


def _node_json_of(n: Node) -> dict[str, Any]:
    obj = node_json(n.name, labels=dict(n.labels))
    obj["metadata"]["annotations"] = dict(n.annotations)
    return obj


def test_unknown_node_fails_only_pods_with_local_claims() -> None:
    objs = cluster(node("n1", storage_free="1Ti"), storage_class(), pvc("a", "1Gi"))
    with extender_at(objs) as (client, _, _):
        local = client.post("/filter", extender_args(pod_json("p", claims=["a"]), names=["n1", "new"]))
        plain = client.post("/filter", extender_args(pod_json("q"), names=["n1", "new"]))
    assert local["NodeNames"] == ["n1"]
    assert local["FailedNodes"] == {"new": REASON_UNKNOWN_NODE}
    assert plain["NodeNames"] == ["n1", "new"]


@pytest.mark.parametrize(("body", "error"), [
    pytest.param(b"{not json", "ExtenderArgs: expected a JSON object", id="not-json"),
    pytest.param(b'{"Nodes": null, "NodeNames": ["n1"]}', "ExtenderArgs.Pod: expected a Pod object", id="no-pod"),
    pytest.param(b'{"Pod": {"metadata": {"name": "p"}, "spec": {}}}', "neither NodeNames nor Nodes", id="no-nodes"),
    pytest.param(b'{"Pod": {"metadata": {"name": "p"}, "spec": {"volumes": [{"name": "v", '
                 b'"persistentVolumeClaim": {"claimName": 5}}]}}, "NodeNames": []}',
                 "ExtenderArgs.Pod: spec.volumes[0]", id="bad-claim-name"),
])
def test_filter_bad_request_answers_with_error(body: bytes, error: str) -> None:
    with extender_at(cluster(node("n1"))) as (client, _, _):
        status, result = client.post_raw("/filter", body)
    assert status == 200
    assert error in result["Error"]
    assert result["NodeNames"] is None


@pytest.mark.parametrize("spec", [
    pytest.param(b'{"containers": [{"resources": {"requests": {"cpu": "lots"}}}]}', id="bad-quantity"),
    pytest.param(b'{"affinity": {"nodeAffinity": 7}, "tolerations": "none"}', id="bad-scheduling"),
    pytest.param(b'{"priority": "high"}', id="bad-priority"),
])
def test_filter_never_judges_what_kube_scheduler_judged(spec: bytes) -> None:
    """The extender reads a pod's metadata and volumes only: a field it does not read refuses nothing."""
    body = b'{"Pod": {"metadata": {"name": "p"}, "spec": ' + spec + b'}, "NodeNames": ["n1"]}'
    with extender_at(cluster(node("n1"))) as (client, _, _):
        status, result = client.post_raw("/filter", body)
    assert (status, result["Error"], result["NodeNames"]) == (200, "", ["n1"])


def test_prioritize_prefers_tightest_fit() -> None:
    objs = cluster(node("small", storage_free="100Gi"), node("mid", storage_free="300Gi"),
                   node("big", storage_free="1Ti"), node("full", storage_free="10Gi"), storage_class(),
                   pvc("a", "40Gi"), pvc("b", "40Gi"))
    names = ["small", "mid", "big", "full"]
    with extender_at(objs) as (client, _, _):
        scores = client.post("/prioritize", extender_args(pod_json("p", claims=["a", "b"]), names=names))
        neutral = client.post("/prioritize", extender_args(pod_json("q"), names=names))
    by_host = {s["Host"]: s["Score"] for s in scores}
    assert by_host["small"] == 10
    assert by_host["big"] == 0
    assert 0 < by_host["mid"] < 10
    assert by_host["full"] == 0
    assert {s["Score"] for s in neutral} == {0}


def test_prioritize_bad_request_is_http_400() -> None:
    with extender_at(cluster(node("n1"))) as (client, _, _):
        status, result = client.post_raw("/prioritize", b"[]")
    assert status == 400
    assert "prioritize: ExtenderArgs" in result["error"]

"""Volume binding and resources parity (issue 8, items 2, 3, 5 and 8).

Pinned volumes whatever the affinity key; CSIStorageCapacity for the configured local
provisioner when its CSIDriver publishes capacity; generic ephemeral claims the pod
must own; huge pages fitted like any scalar resource.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from kube.convert import convert_node, convert_pod, convert_pv, convert_pvc
from kube.model import Node, Pod
from kube.names import HOSTNAME_LABEL
from simulator.volumes import NodeMatcher
from tests.factories import (
    LOCAL,
    NAMES,
    ZONE,
    Json,
    cluster,
    csi_capacity,
    csi_driver,
    expr,
    node,
    node_json,
    pod,
    pod_json,
    pv,
    pv_json,
    pvc,
    pvc_json,
    storage_class,
    world,
)

TOPOLVM_KEY = "topology.topolvm.io/node"
OPENEBS_KEY = "openebs.io/nodename"


def keyed_node(name: str, zone: str = "a") -> Node:
    return node(name, labels={ZONE: zone, TOPOLVM_KEY: name, OPENEBS_KEY: name})


def affinity(*terms: list[Json]) -> Json:
    return {"nodeSelectorTerms": [{"matchExpressions": t} for t in terms]}


# --- item 2: what "pinned" means ------------------------------------------------------------------

PINNED_CASES = [
    pytest.param(affinity([expr(HOSTNAME_LABEL, "In", "n1")]), "n1", id="hostname"),
    pytest.param(affinity([expr(TOPOLVM_KEY, "In", "n2")]), "n2", id="topolvm-node-key"),
    pytest.param(affinity([expr(OPENEBS_KEY, "In", "n3")]), "n3", id="openebs-nodename-key"),
    pytest.param(affinity([expr(ZONE, "In", "b")]), "n3", id="zone-with-one-node"),
    pytest.param(affinity([expr(ZONE, "In", "a")]), None, id="zone-with-two-nodes"),
    pytest.param(affinity([expr(TOPOLVM_KEY, "In", "n1", "n2")]), None, id="two-nodes-by-value"),
    pytest.param(affinity([expr(TOPOLVM_KEY, "In", "n1")], [expr(OPENEBS_KEY, "In", "n1")]), "n1",
                 id="two-terms-same-node"),
    pytest.param(affinity([expr(TOPOLVM_KEY, "In", "n1")], [expr(OPENEBS_KEY, "In", "n2")]), None,
                 id="two-terms-two-nodes"),
    pytest.param(affinity([expr(TOPOLVM_KEY, "In", "gone")]), None, id="node-gone"),
    pytest.param(affinity([expr(ZONE, "NotIn", "a")]), "n3", id="not-in-leaves-one"),
    pytest.param({"nodeSelectorTerms": [{"matchFields": [expr("metadata.name", "In", "n2")]}]}, "n2",
                 id="match-fields-name"),
]


@pytest.mark.parametrize(("node_affinity", "expected"), PINNED_CASES)
def test_pinned_node(node_affinity: Json, expected: str | None) -> None:
    nodes = [keyed_node("n1"), keyed_node("n2"), keyed_node("n3", "b")]
    volume = pv("data", storage_class="lvm", driver="topolvm.io", affinity=node_affinity, claim=("default", "c"))
    assert NodeMatcher(nodes).only_match(volume.node_affinity) == expected


# --- item 3: CSIStorageCapacity for the local provisioner ------------------------------------------------


def _capacity_world(publishes: bool, free: str, published: str, *, appended: bool = False) -> tuple[Any, Pod]:
    objects = cluster(
        node("n1", storage_free=free, storage_max="1Ti", labels={TOPOLVM_KEY: "n1"}),
        storage_class("rok", LOCAL),
        csi_driver(LOCAL, storage_capacity=publishes),
        csi_capacity("cap-n1", "rok", {TOPOLVM_KEY: "n1"}, published),
        pvc("c1", "100Gi"),
    )
    subject = pod("p", claims=["c1"])
    objects.pods.append(subject)
    return world(objects, appended=appended), subject


@pytest.mark.parametrize(("publishes", "free", "published", "expected"), [
    pytest.param(True, "500Gi", "10Gi", "node(s) did not have enough free storage",
                 id="scheduler-refuses-by-published-capacity"),
    pytest.param(True, "10Gi", "500Gi", None, id="scheduler-places-by-published-capacity"),
    pytest.param(False, "500Gi", "10Gi", None, id="driver-without-capacity-tracking-uses-annotation"),
    pytest.param(False, "10Gi", "500Gi", "node(s) did not have enough free storage",
                 id="annotation-without-capacity-tracking"),
])
def test_local_provisioner_storage_capacity(publishes: bool, free: str, published: str,
                                            expected: str | None) -> None:
    w, subject = _capacity_world(publishes, free, published)
    reason = w.checker.check(subject, w.plan(subject), w.idx("n1"))
    assert (None if reason is None else reason.reason) == expected
    assert (w.checker.find_node(subject, w.plan(subject)) is None) == (expected is not None)


def test_new_nodes_go_by_their_template_capacity() -> None:
    """A template has published no CSIStorageCapacity yet: its free local bytes decide."""
    w, subject = _capacity_world(True, "500Gi", "10Gi", appended=True)
    assert w.checker.check(subject, w.plan(subject), w.idx("n1")) is None


@pytest.mark.parametrize(("capacity", "maximum", "size", "fits"), [
    pytest.param("50Gi", None, "100Gi", False, id="capacity-too-small"),
    pytest.param("50Gi", "200Gi", "100Gi", True, id="maximum-volume-size-preferred"),
    pytest.param("500Gi", "50Gi", "100Gi", False, id="maximum-volume-size-too-small"),
    pytest.param("1Gi", None, "0", True, id="no-storage-request-needs-no-capacity"),
])
def test_capacity_objects(capacity: str, maximum: str | None, size: str, fits: bool) -> None:
    objects = cluster(
        node("n1", labels={ZONE: "a"}),
        storage_class("lvm", "topolvm.io"),
        csi_driver("topolvm.io"),
        csi_capacity("cap", "lvm", {ZONE: "a"}, capacity, maximum),
        pvc("c1", size, "lvm"),
    )
    subject = pod("p", claims=["c1"])
    w = world(objects)
    assert (w.checker.check(subject, w.plan(subject), w.idx("n1")) is None) is fits


# --- item 8: generic ephemeral volumes ----------------------------------------------------------------


def _ephemeral_pod() -> Pod:
    raw = pod_json("web", "1", "1Gi")
    raw["spec"]["volumes"] = [{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {
        "accessModes": ["ReadWriteOnce"], "storageClassName": "rok",
        "resources": {"requests": {"storage": "1Gi"}}}}}}]
    return convert_pod(raw)


def _claim(owner_uid: str | None) -> Json:
    raw = pvc_json("web-scratch", "1Gi")
    if owner_uid is not None:
        raw["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod", "name": "web", "uid": owner_uid,
                                               "controller": True}]
    return raw


@pytest.mark.parametrize(("owner_uid", "expected"), [
    pytest.param("uid-default-web", None, id="owned-by-the-pod"),
    pytest.param("uid-someone-else", "PVC default/web-scratch was not created for pod default/web (pod is not owner)",
                 id="same-name-other-owner"),
    pytest.param(None, "PVC default/web-scratch was not created for pod default/web (pod is not owner)",
                 id="same-name-no-owner"),
])
def test_ephemeral_claim_must_be_the_pods(owner_uid: str | None, expected: str | None) -> None:
    subject = _ephemeral_pod()
    objects = cluster(node("n1", storage_free="100Gi"), storage_class("rok", LOCAL),
                      convert_pvc(_claim(owner_uid)))
    w = world(objects)
    reason = w.checker.check(subject, w.plan(subject), w.idx("n1"))
    assert (None if reason is None else reason.reason) == expected


def test_ephemeral_claim_not_yet_created() -> None:
    subject = _ephemeral_pod()
    w = world(cluster(node("n1"), storage_class("rok", LOCAL)))
    reason = w.checker.check(subject, w.plan(subject), w.idx("n1"))
    assert reason is not None and reason.reason == 'persistentvolumeclaim "web-scratch" not found'


# --- item 5: huge pages ----------------------------------------------------------------------------


def _hugepage_node(name: str, amount: str) -> Node:
    return convert_node(node_json(name, extended={"hugepages-2Mi": amount, "hugepages-1Gi": "0"}), NAMES, [])


def _hugepage_pod(name: str, amount: str, node_name: str = "", *, via_limit: bool = False) -> Pod:
    raw = pod_json(name, "100m", "100Mi", node_name)
    resources = raw["spec"]["containers"][0]["resources"]
    if via_limit:
        resources["limits"] = {"hugepages-2Mi": amount}
    else:
        resources["requests"]["hugepages-2Mi"] = amount
    return convert_pod(raw)


@pytest.mark.parametrize(("existing", "subject", "expected"), [
    pytest.param((), _hugepage_pod("p", "512Mi"), None, id="fits"),
    pytest.param((), _hugepage_pod("p", "2Gi"), "Insufficient hugepages-2Mi", id="too-big"),
    pytest.param((_hugepage_pod("e", "768Mi", "n1"),), _hugepage_pod("p", "512Mi"), "Insufficient hugepages-2Mi",
                 id="used-by-running-pod"),
    pytest.param((), _hugepage_pod("p", "2Gi", via_limit=True), "Insufficient hugepages-2Mi",
                 id="limit-defaults-the-request"),
])
def test_hugepages_are_fitted(existing: tuple[Pod, ...], subject: Pod, expected: str | None) -> None:
    w = world(cluster(_hugepage_node("n1", "1Gi"), *existing))
    reason = w.checker.check(subject, w.plan(subject), w.idx("n1"))
    assert (None if reason is None else reason.reason) == expected
    assert (w.checker.find_node(subject, w.plan(subject)) is None) == (expected is not None)


def test_hugepages_in_node_resources() -> None:
    converted: Mapping[str, int] = dict(_hugepage_node("n1", "1Gi").allocatable.extended)
    assert converted == {"hugepages-1Gi": 0, "hugepages-2Mi": 2**30}


# --- audit: VolumeZone, and VolumeBinding's PreFilter/Filter split -----------------------------------------

BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"


def _zoned_pv(labels: Mapping[str, str]) -> Any:
    raw = pv_json("disk", "10Gi", "ebs", claim=("default", "c1"), driver="ebs.csi.aws.com")
    raw["metadata"]["labels"] = dict(labels)
    return convert_pv(raw)


@pytest.mark.parametrize(("pv_labels", "node_labels", "expected"), [
    pytest.param({ZONE: "a"}, {ZONE: "a"}, None, id="same-zone"),
    pytest.param({ZONE: "a"}, {ZONE: "b"}, "node(s) had no available volume zone", id="other-zone"),
    pytest.param({ZONE: "a__b"}, {ZONE: "b"}, None, id="multi-zone-value"),
    pytest.param({BETA_ZONE: "a"}, {ZONE: "a"}, None, id="beta-pv-label-ga-node-label"),
    pytest.param({ZONE: "a"}, {}, None, id="node-without-zone-labels"),
    pytest.param({ZONE: "a"}, {"topology.kubernetes.io/region": "r"}, "node(s) had no available volume zone",
                 id="node-with-region-only"),
    pytest.param({ZONE: "a__"}, {ZONE: "b"}, None, id="malformed-value-ignored"),
])
def test_volume_zone(pv_labels: Mapping[str, str], node_labels: Mapping[str, str], expected: str | None) -> None:
    objects = cluster(node("n1", labels=node_labels), _zoned_pv(pv_labels), pvc("c1", "10Gi", "ebs", volume="disk"))
    subject = pod("p", claims=["c1"])
    w = world(objects)
    reason = w.checker.check(subject, w.plan(subject), w.idx("n1"))
    assert (None if reason is None else reason.reason) == expected
    assert (w.checker.find_node(subject, w.plan(subject)) is None) == (expected is not None)


@pytest.mark.parametrize(("claim", "node_kw", "expected"), [
    pytest.param(pvc("c1", "10Gi", "rok", volume="missing"), {},
                 "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)", id="pv-missing"),
    pytest.param(pvc("c1", "10Gi", "rok", volume="missing"), {"taints": [{"key": "k", "effect": "NoSchedule"}]},
                 "node(s) had untolerated taint {k: }", id="pv-missing-is-a-filter-after-taints"),
    pytest.param(pvc("c1", "10Gi", None), {}, "pod has unbound immediate PersistentVolumeClaims",
                 id="no-class-is-immediate"),
    pytest.param(pvc("c1", "10Gi", "manual"), {"taints": [{"key": "k", "effect": "NoSchedule"}]},
                 "node(s) had untolerated taint {k: }", id="no-provisioner-is-a-filter-after-taints"),
])
def test_volume_binding_stages(claim: Any, node_kw: dict[str, Any], expected: str) -> None:
    objects = cluster(node("n1", **node_kw), storage_class("rok", LOCAL),
                      storage_class("manual", "kubernetes.io/no-provisioner"), claim)
    subject = pod("p", claims=["c1"])
    w = world(objects)
    reason = w.checker.check(subject, w.plan(subject), w.idx("n1"))
    assert reason is not None and reason.reason == expected


@pytest.mark.parametrize(("modes", "other_user", "expected"), [
    pytest.param(("ReadWriteOncePod",), True, "node has pod using PersistentVolumeClaim with the same name and "
                 "ReadWriteOncePod access mode", id="rwop-in-use"),
    pytest.param(("ReadWriteOncePod",), False, None, id="rwop-free"),
    pytest.param(("ReadWriteOnce",), True, None, id="rwo-shared-on-the-node"),
])
def test_read_write_once_pod(modes: tuple[str, ...], other_user: bool, expected: str | None) -> None:
    objects = cluster(node("n1"), storage_class("lvm", "topolvm.io"),
                      convert_pvc(pvc_json("c1", "10Gi", "lvm", volume="disk", access_modes=modes)),
                      pv("disk", "10Gi", "lvm", driver="topolvm.io", claim=("default", "c1"), access_modes=modes))
    if other_user:
        objects.pods.append(pod("first", node="n1", claims=["c1"]))
    subject = pod("second", claims=["c1"])
    w = world(objects)
    reason = w.checker.check(subject, w.plan(subject), w.idx("n1"))
    assert (None if reason is None else reason.reason) == expected

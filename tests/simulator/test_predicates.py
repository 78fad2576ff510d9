"""kube-scheduler's filters, one named case per rule, with a differential check of both paths.

Each case is a small cluster, a pending pod, and what ``check`` must say on every node:
``None`` (fits) or ``"Predicate"`` / ``"Predicate: reason fragment"``. Every case runs
twice: with the nodes in the checker's base (label index, cached masks) and appended
afterwards (how templates and upcoming nodes enter). The differential test then
requires the fast path (``feasible`` masks plus per-node checks, through ``find_node``)
to agree with ``check`` on every node.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pytest

from kube.model import ClusterObjects, Pod
from simulator.predicates import Unschedulable
from tests.factories import (
    ZONE,
    ClusterObject,
    GiB,
    World,
    cluster,
    csi_capacity,
    csi_driver,
    expr,
    node,
    node_affinity,
    pod,
    pod_affinity,
    pv,
    pvc,
    spread,
    storage_class,
    taint,
    toleration,
    world,
)

Expect = Mapping[str, str | None]

FIT = "NodeResourcesFit"
VB = "VolumeBinding"
IPA = "InterPodAffinity"
NOT_ENOUGH = f"{VB}: did not have enough free storage"
BIND_CONFLICT = f"{VB}: didn't find available persistent volumes to bind"


def two(*extra: ClusterObject) -> ClusterObjects:
    """Nodes n1 and n2 (4 cpu, 8Gi), plus ``extra`` objects."""
    return cluster(node("n1"), node("n2"), *extra)


def zoned(*extra: ClusterObject) -> ClusterObjects:
    """n1, n2 in zone a; n3 in zone b."""
    return cluster(node("n1", labels={ZONE: "a"}), node("n2", labels={ZONE: "a"}), node("n3", labels={ZONE: "b"}),
                   *extra)


LABELLED = cluster(
    node("a", labels={"disk": "ssd", "cores": "16"}),
    node("b", labels={"disk": "hdd", "cores": "4"}),
    node("c"),
)


def storage(*extra: ClusterObject) -> ClusterObjects:
    """The local class ``rok``; s1 has 100Gi free, s2 200Gi, bare has no capacity annotation."""
    return cluster(storage_class(), node("bare"), node("s1", storage_free="100Gi"),
                   node("s2", storage_free="200Gi"), *extra)


def csi(capacity: bool = True, maximum: str | None = None, provisioner: str = "topolvm.io") -> ClusterObjects:
    """A TopoLVM-like class whose driver reports 50Gi in zone a only (its nodes publish no
    ``capacity.topolvm.io/`` annotation, so CSIStorageCapacity alone decides)."""
    return cluster(
        storage_class("lvm", provisioner), csi_driver(provisioner, capacity),
        csi_capacity("cap-a", "lvm", {ZONE: "a"}, "50Gi", maximum), pvc("data", "40Gi", "lvm"),
        node("a1", labels={ZONE: "a"}), node("b1", labels={ZONE: "b"}),
    )


GPU = {"nvidia.com/gpu": "1"}
WEB = {"app": "web"}

CASES = [
    # --- NodeResourcesFit -------------------------------------------------------------------
    pytest.param(cluster(node("big", cpu="8"), node("small", cpu="2")), pod("p", cpu="4"),
                 {"big": None, "small": f"{FIT}: Insufficient cpu"}, id="fit-cpu"),
    pytest.param(cluster(node("n1", cpu="4"), pod("run", cpu="3", node="n1")), pod("p", cpu="2"),
                 {"n1": f"{FIT}: Insufficient cpu"}, id="fit-cpu-used-by-running-pod"),
    pytest.param(cluster(node("n1", cpu="4"), pod("run", cpu="2", node="n1")), pod("p", cpu="2"),
                 {"n1": None}, id="fit-cpu-exactly"),
    pytest.param(cluster(node("big", memory="16Gi"), node("small", memory="4Gi")), pod("p", memory="6Gi"),
                 {"big": None, "small": f"{FIT}: Insufficient memory"}, id="fit-memory"),
    pytest.param(cluster(node("big", ephemeral="50Gi"), node("small", ephemeral="10Gi")),
                 pod("p", ephemeral="20Gi"),
                 {"big": None, "small": f"{FIT}: Insufficient ephemeral-storage"}, id="fit-ephemeral-storage"),
    pytest.param(cluster(node("full", pods=1), node("free", pods=1), pod("run", node="full")), pod("p"),
                 {"free": None, "full": f"{FIT}: Too many pods"}, id="fit-pod-count"),
    pytest.param(cluster(node("gpu", extended=GPU), node("plain")), pod("p", extended=GPU),
                 {"gpu": None, "plain": f"{FIT}: Insufficient nvidia.com/gpu"}, id="fit-extended-resource"),
    pytest.param(cluster(node("gpu", extended={"nvidia.com/gpu": "2"}), pod("run", node="gpu", extended=GPU)),
                 pod("p", extended=GPU), {"gpu": None}, id="fit-extended-resource-partly-used"),
    pytest.param(cluster(node("gpu", extended=GPU), pod("run", node="gpu", extended=GPU)),
                 pod("p", extended=GPU), {"gpu": f"{FIT}: Insufficient nvidia.com/gpu"},
                 id="fit-extended-resource-used-up"),
    # --- NodeName, NodeUnschedulable, TaintToleration --------------------------------------
    pytest.param(two(), pod("p", node="n2"), {"n1": "NodeName", "n2": None}, id="node-name"),
    pytest.param(cluster(node("cordoned", unschedulable=True), node("open")), pod("p"),
                 {"cordoned": "NodeUnschedulable", "open": None}, id="unschedulable"),
    pytest.param(cluster(node("cordoned", unschedulable=True)),
                 pod("p", tolerations=[toleration("node.kubernetes.io/unschedulable", operator="Exists")]),
                 {"cordoned": None}, id="unschedulable-tolerated"),
    pytest.param(cluster(node("cordoned", cpu="1", unschedulable=True)), pod("p", cpu="2"),
                 {"cordoned": "NodeUnschedulable"}, id="unschedulable-reported-before-resources"),
    pytest.param(cluster(node("tainted", taints=[taint("gpu", "true")]), node("clean")), pod("p"),
                 {"tainted": "TaintToleration: untolerated taint {gpu: true}", "clean": None},
                 id="taint-no-schedule"),
    pytest.param(cluster(node("tainted", taints=[taint("gpu", "true")])),
                 pod("p", tolerations=[toleration("gpu", "true")]), {"tainted": None}, id="taint-tolerated"),
    pytest.param(cluster(node("tainted", taints=[taint("gpu", "true")])),
                 pod("p", tolerations=[toleration("gpu", "false")]), {"tainted": "TaintToleration"},
                 id="taint-other-value"),
    pytest.param(cluster(node("tainted", taints=[taint("gpu", "true", "NoExecute")])), pod("p"),
                 {"tainted": "TaintToleration"}, id="taint-no-execute"),
    pytest.param(cluster(node("tainted", taints=[taint("gpu", "true", "NoExecute")])),
                 pod("p", tolerations=[toleration("gpu", "true", "NoSchedule")]), {"tainted": "TaintToleration"},
                 id="taint-other-effect"),
    pytest.param(cluster(node("tainted", taints=[taint("spot", "yes", "PreferNoSchedule")])), pod("p"),
                 {"tainted": None}, id="taint-prefer-no-schedule-ignored"),
    pytest.param(cluster(node("tainted", taints=[taint("gpu", "anything")])),
                 pod("p", tolerations=[toleration("gpu", operator="Exists")]), {"tainted": None},
                 id="toleration-exists"),
    pytest.param(cluster(node("tainted", taints=[taint("a", "1"), taint("b", "2", "NoExecute")])),
                 pod("p", tolerations=[toleration(operator="Exists", effect="")]), {"tainted": None},
                 id="toleration-exists-without-key-tolerates-all"),
    # --- NodeAffinity and nodeSelector -----------------------------------------------------------
    pytest.param(LABELLED, pod("p", node_selector={"disk": "hdd"}),
                 {"a": "NodeAffinity", "b": None, "c": "NodeAffinity"}, id="node-selector"),
    pytest.param(LABELLED, pod("p", affinity=node_affinity([expr("disk", "In", "ssd", "nvme")])),
                 {"a": None, "b": "NodeAffinity", "c": "NodeAffinity"}, id="affinity-in"),
    pytest.param(LABELLED, pod("p", affinity=node_affinity([expr("disk", "NotIn", "ssd")])),
                 {"a": "NodeAffinity", "b": None, "c": None}, id="affinity-not-in-matches-missing-label"),
    pytest.param(LABELLED, pod("p", affinity=node_affinity([expr("disk", "Exists")])),
                 {"a": None, "b": None, "c": "NodeAffinity"}, id="affinity-exists"),
    pytest.param(LABELLED, pod("p", affinity=node_affinity([expr("disk", "DoesNotExist")])),
                 {"a": "NodeAffinity", "b": "NodeAffinity", "c": None}, id="affinity-does-not-exist"),
    pytest.param(LABELLED, pod("p", affinity=node_affinity([expr("cores", "Gt", "8")])),
                 {"a": None, "b": "NodeAffinity", "c": "NodeAffinity"}, id="affinity-gt"),
    pytest.param(LABELLED, pod("p", affinity=node_affinity([expr("cores", "Lt", "8")])),
                 {"a": "NodeAffinity", "b": None, "c": "NodeAffinity"}, id="affinity-lt"),
    pytest.param(LABELLED, pod("p", affinity=node_affinity([expr("disk", "In", "ssd")], [expr("cores", "Lt", "8")])),
                 {"a": None, "b": None, "c": "NodeAffinity"}, id="affinity-terms-ored"),
    pytest.param(LABELLED, pod("p", affinity=node_affinity([expr("disk", "Exists"), expr("cores", "Gt", "8")])),
                 {"a": None, "b": "NodeAffinity", "c": "NodeAffinity"}, id="affinity-expressions-anded"),
    pytest.param(LABELLED, pod("p", node_selector={"disk": "ssd"},
                               affinity=node_affinity([expr("cores", "Lt", "8")])),
                 {"a": "NodeAffinity", "b": "NodeAffinity", "c": "NodeAffinity"},
                 id="selector-and-affinity-both-required"),
    # --- NodePorts ---------------------------------------------------------------------------------
    pytest.param(two(pod("run", node="n1", host_ports=[8080])), pod("p", host_ports=[8080]),
                 {"n1": "NodePorts", "n2": None}, id="host-port-taken"),
    pytest.param(two(pod("run", node="n1", host_ports=[8080])), pod("p", host_ports=[(8080, "UDP")]),
                 {"n1": None, "n2": None}, id="host-port-other-protocol"),
    pytest.param(two(pod("run", node="n1", host_ports=[8080])), pod("p", host_ports=[9090]),
                 {"n1": None, "n2": None}, id="host-port-other-port"),
    # --- VolumeBinding: bound, Immediate, static PVs, provisioners ----------------------------------
    pytest.param(two(storage_class(), pv("pv1", hosts=["n1"], claim=("default", "data")),
                     pvc("data", volume="pv1")), pod("p", claims=["data"]),
                 {"n1": None, "n2": f"{VB}: volume node affinity conflict"}, id="bound-pv-affinity"),
    pytest.param(two(storage_class("fast", "ebs.csi.aws.com", binding="Immediate"), pvc("data", storage_class="fast")),
                 pod("p", claims=["data"]), {"n1": f"{VB}: unbound immediate", "n2": f"{VB}: unbound immediate"},
                 id="unbound-immediate-unschedulable-everywhere"),
    pytest.param(two(pvc("other")), pod("p", claims=["data"]),
                 {"n1": f'{VB}: persistentvolumeclaim "data" not found', "n2": VB}, id="claim-missing"),
    pytest.param(two(storage_class("static", "kubernetes.io/no-provisioner"),
                     pv("pv2", "50Gi", "static", hosts=["n2"], driver="local"), pvc("data", "40Gi", "static")),
                 pod("p", claims=["data"]), {"n1": BIND_CONFLICT, "n2": None}, id="wffc-binds-available-pv"),
    pytest.param(two(storage_class("static", "kubernetes.io/no-provisioner"),
                     pv("pv2", "30Gi", "static", hosts=["n2"], driver="local"), pvc("data", "40Gi", "static")),
                 pod("p", claims=["data"]), {"n1": BIND_CONFLICT, "n2": BIND_CONFLICT},
                 id="wffc-available-pv-too-small"),
    pytest.param(two(storage_class("static", "kubernetes.io/no-provisioner"), pvc("data", "40Gi", "static")),
                 pod("p", claims=["data"]), {"n1": BIND_CONFLICT, "n2": BIND_CONFLICT},
                 id="no-provisioner-and-no-pv"),
    pytest.param(cluster(storage_class("ebs", "ebs.csi.aws.com", allowed_topologies={ZONE: ["a"]}),
                         pvc("data", storage_class="ebs"), node("a1", labels={ZONE: "a"}),
                         node("b1", labels={ZONE: "b"})),
                 pod("p", claims=["data"]), {"a1": None, "b1": BIND_CONFLICT}, id="allowed-topologies"),
    pytest.param(cluster(storage_class(allowed_topologies={ZONE: ["a"]}), pvc("data"),
                         node("a1", labels={ZONE: "a"}, storage_free="100Gi"),
                         node("b1", labels={ZONE: "b"}, storage_free="100Gi")),
                 pod("p", claims=["data"]), {"a1": None, "b1": BIND_CONFLICT}, id="allowed-topologies-local"),
    pytest.param(cluster(storage_class(allowed_topologies={ZONE: ["a"]}), pvc("data", "40Gi"),
                         pv("pv-a1", "50Gi", hosts=["a1"]),
                         node("a1", labels={ZONE: "a"}, storage_free="0"),
                         node("a2", labels={ZONE: "a"}, storage_free="100Gi"),
                         node("a3", labels={ZONE: "a"}, storage_free="10Gi"),
                         node("b1", labels={ZONE: "b"}, storage_free="100Gi")),
                 pod("p", claims=["data"]), {"a1": None, "a2": None, "a3": NOT_ENOUGH, "b1": BIND_CONFLICT},
                 id="available-pv-elsewhere-falls-back-to-local-provisioning"),
    # --- VolumeBinding: local capacity (storage-semantics 1.4) -------------------------------------
    pytest.param(storage(pvc("a", "60Gi"), pvc("b", "60Gi")), pod("p", claims=["a", "b"]),
                 {"bare": NOT_ENOUGH, "s1": NOT_ENOUGH, "s2": None},
                 id="two-local-claims-of-60Gi-do-not-fit-100Gi-free"),
    pytest.param(storage(pvc("a", "60Gi")), pod("p", claims=["a"]), {"bare": NOT_ENOUGH, "s1": None, "s2": None},
                 id="one-local-claim-of-60Gi-fits-100Gi-free"),
    pytest.param(storage(pvc("a", "1Gi")), pod("p", claims=["a"]), {"bare": NOT_ENOUGH, "s1": None, "s2": None},
                 id="missing-annotation-is-zero-capacity"),
    pytest.param(storage(pvc("a", "100Gi")), pod("p", claims=["a"]), {"bare": NOT_ENOUGH, "s1": None, "s2": None},
                 id="local-claim-exactly-fills-the-disk"),
    pytest.param(storage(pvc("a", "60Gi"), pvc("b", "60Gi", "other"), storage_class("other", "ebs.csi.aws.com")),
                 pod("p", claims=["a", "b"]), {"bare": NOT_ENOUGH, "s1": None, "s2": None},
                 id="other-provisioners-not-counted-against-local-capacity"),
    pytest.param(csi(), pod("p", claims=["data"]), {"a1": None, "b1": NOT_ENOUGH}, id="csi-storage-capacity"),
    pytest.param(csi(maximum="30Gi"), pod("p", claims=["data"]), {"a1": NOT_ENOUGH, "b1": NOT_ENOUGH},
                 id="csi-maximum-volume-size"),
    pytest.param(csi(capacity=False, provisioner="csi.example.com"), pod("p", claims=["data"]),
                 {"a1": None, "b1": None},
                 id="csi-driver-without-storage-capacity"),
    # --- InterPodAffinity --------------------------------------------------------------------------------
    pytest.param(zoned(pod("db", node="n1", labels={"app": "db"})), pod("p", affinity=pod_affinity({"app": "db"})),
                 {"n1": None, "n2": f"{IPA}: didn't match pod affinity", "n3": IPA}, id="pod-affinity-hostname"),
    pytest.param(zoned(pod("db", node="n1", labels={"app": "db"})),
                 pod("p", affinity=pod_affinity({"app": "db"}, ZONE)), {"n1": None, "n2": None, "n3": IPA},
                 id="pod-affinity-zone"),
    pytest.param(zoned(pod("db", node="n1", namespace="prod", labels={"app": "db"})),
                 pod("p", affinity=pod_affinity({"app": "db"})), {"n1": IPA, "n2": IPA, "n3": IPA},
                 id="pod-affinity-other-namespace-does-not-count"),
    pytest.param(zoned(pod("web", node="n1", labels=WEB)), pod("p", affinity=pod_affinity(WEB, anti=True)),
                 {"n1": f"{IPA}: didn't match pod anti-affinity", "n2": None, "n3": None}, id="pod-anti-affinity"),
    pytest.param(zoned(pod("web", node="n1", labels=WEB)), pod("p", affinity=pod_affinity(WEB, ZONE, anti=True)),
                 {"n1": IPA, "n2": IPA, "n3": None}, id="pod-anti-affinity-zone"),
    pytest.param(zoned(pod("loner", node="n1", affinity=pod_affinity(WEB, anti=True))), pod("p", labels=WEB),
                 {"n1": f"{IPA}: existing pods anti-affinity", "n2": None, "n3": None},
                 id="existing-pods-anti-affinity"),
    pytest.param(cluster(node("n1", labels={ZONE: "a"}), node("n2", labels={ZONE: "b"}), node("nozone")),
                 pod("p", labels={"app": "cache"}, affinity=pod_affinity({"app": "cache"}, ZONE)),
                 {"n1": None, "n2": None, "nozone": IPA}, id="first-pod-self-affinity"),
    pytest.param(zoned(), pod("p", affinity=pod_affinity({"app": "db"})), {"n1": IPA, "n2": IPA, "n3": IPA},
                 id="pod-affinity-with-nothing-to-join"),
    # --- PodTopologySpread ----------------------------------------------------------------------------------
    pytest.param(zoned(pod("w1", node="n1", labels=WEB)), pod("p", labels=WEB, spread_constraints=[spread(WEB)]),
                 {"n1": "PodTopologySpread", "n2": "PodTopologySpread", "n3": None}, id="spread-max-skew-1"),
    pytest.param(zoned(pod("w1", node="n1", labels=WEB)),
                 pod("p", labels=WEB, spread_constraints=[spread(WEB, max_skew=2)]),
                 {"n1": None, "n2": None, "n3": None}, id="spread-max-skew-2"),
    pytest.param(zoned(pod("w1", node="n1", labels=WEB), pod("w2", node="n3", labels=WEB)),
                 pod("p", labels=WEB, spread_constraints=[spread(WEB)]), {"n1": None, "n2": None, "n3": None},
                 id="spread-balanced"),
    pytest.param(cluster(node("n1", labels={ZONE: "a"}), node("nozone")),
                 pod("p", labels=WEB, spread_constraints=[spread(WEB)]),
                 {"n1": None, "nozone": "PodTopologySpread: missing required label"}, id="spread-node-without-key"),
]


def _matches(found: Unschedulable | None, expected: str | None) -> bool:
    if expected is None or found is None:
        return expected is None and found is None
    predicate, _, fragment = expected.partition(": ")
    return found.predicate == predicate and fragment in found.reason


def _describe(found: Unschedulable | None) -> str:
    return "fits" if found is None else f"{found.predicate}: {found.reason}"


@pytest.mark.parametrize("appended", [False, True], ids=["base-nodes", "appended-nodes"])
@pytest.mark.parametrize(("objects", "subject", "expect"), CASES)
def test_check_names_the_failing_predicate(objects: ClusterObjects, subject: Pod, expect: Expect,
                                           appended: bool) -> None:
    w = world(objects, appended=appended)
    plan = w.plan(subject)
    found = {name: w.checker.check(subject, plan, w.idx(name)) for name in expect}
    wrong = {name: _describe(found[name]) for name in expect if not _matches(found[name], expect[name])}
    assert not wrong, f"expected {dict(expect)}, got {wrong}"


def assert_paths_agree(w: World, subject: Pod) -> None:
    """``find_node`` (masks + per-node checks) and ``check`` agree on every node."""
    snap, checker = w.snapshot, w.checker
    plan = w.plan(subject)
    mask = checker.feasible(subject, plan)
    fits = []
    for idx in range(snap.count):
        slow = checker.check(subject, plan, idx)
        only = np.zeros(snap.count, np.bool_)
        only[idx] = True
        fast = checker.find_node(subject, plan, allowed=only) == idx
        assert fast == (slow is None), f"{snap.nodes[idx].name}: find_node says {fast}, check says {slow!r}"
        if slow is None:
            assert mask[idx], f"{snap.nodes[idx].name}: feasible() rejects a node check() accepts"
            fits.append(idx)
    assert checker.find_node(subject, plan) == (fits[0] if fits else None)
    for lo in range(snap.count):
        later = [i for i in fits if i >= lo]
        assert checker.find_node(subject, plan, lo=lo) == (later[0] if later else None)


@pytest.mark.parametrize("appended", [False, True], ids=["base-nodes", "appended-nodes"])
@pytest.mark.parametrize(("objects", "subject", "expect"), CASES)
def test_fast_path_agrees_with_check(objects: ClusterObjects, subject: Pod, expect: Expect, appended: bool) -> None:
    assert_paths_agree(world(objects, appended=appended), subject)


def test_paths_agree_on_a_mixed_cluster_with_base_and_appended_nodes() -> None:
    """Template nodes appended to a live cluster: one snapshot, both static paths at once."""
    objects = zoned(pod("db", node="n1", labels={"app": "db"}), pod("run", node="n3", host_ports=[80]))
    w = world(objects)
    w.snapshot.fork()
    w.snapshot.add_node(node("t1", labels={ZONE: "b"}, taints=[taint("gpu", "true")]))
    w.snapshot.add_node(node("t2", cpu="1", labels={ZONE: "a"}))
    w.snapshot.add_node(node("t3", labels={ZONE: "a"}))
    subjects = [
        pod("a", cpu="2", affinity=pod_affinity({"app": "db"}, ZONE)),
        pod("b", host_ports=[80]),
        pod("c", tolerations=[toleration("gpu", "true")], node_selector={ZONE: "b"}),
        pod("d", cpu="1", memory="1Gi"),
    ]
    for subject in subjects:
        assert_paths_agree(w, subject)
    w.snapshot.revert()


def test_disabled_node_is_no_destination() -> None:
    w = world(two())
    w.snapshot.disable_node(w.idx("n1"))
    subject = pod("p")
    found = w.checker.check(subject, w.plan(subject), w.idx("n1"))
    assert found is not None and found.predicate == "NodeName"
    assert w.checker.find_node(subject, w.plan(subject)) == w.idx("n2")


def test_upstream_mode_ignores_local_capacity() -> None:
    """``--storage-aware=false``: local claims are provisioned as upstream provisions any claim."""
    w = world(storage(pvc("a", "60Gi"), pvc("b", "60Gi")), storage_aware=False)
    subject = pod("p", claims=["a", "b"])
    assert [w.checker.check(subject, w.plan(subject), i) for i in range(3)] == [None, None, None]


def test_place_consumes_local_storage_for_the_next_pod() -> None:
    w = world(storage(pvc("a", "60Gi"), pvc("b", "60Gi")))
    first, second = pod("p1", claims=["a"]), pod("p2", claims=["b"])
    s1 = w.idx("s1")
    w.checker.place(first, w.plan(first), s1)
    assert w.snapshot.free_local[s1] == 40 * GiB
    found = w.checker.check(second, w.plan(second), s1)
    assert found is not None and found.reason == "node(s) did not have enough free storage"
    assert w.checker.find_node(second, w.plan(second)) == w.idx("s2")

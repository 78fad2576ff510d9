"""Scale-up decisions through ``run_once``, as ``plan`` makes them (flags parsed as on the CLI).

Each case is a cluster, the flags, and the decision: the result, the increases per
group, how many pending pods fit existing or upcoming nodes, and for pods left
pending, a fragment of the reason given for each group.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from kube.model import ClusterObjects, NodeGroupSpec, Pod
from tests.factories import (
    NOW,
    ZONE,
    ClusterObject,
    cluster,
    node,
    node_group,
    plan,
    pod,
    pvc,
    refs,
    storage_class,
    template,
)

NVME = {"ng": "nvme"}


@dataclass(frozen=True, slots=True)
class Decision:
    result: str
    increases: Mapping[str, int] = field(default_factory=dict)
    fits_existing: int = 0
    fits_upcoming: int = 0
    #: pod ref -> group -> fragment of the reason that group does not help.
    reasons: Mapping[str, Mapping[str, str]] = field(default_factory=dict)


def nvme(min_size: int = 0, max_size: int = 5, **kw: Any) -> NodeGroupSpec:
    """The ``nvme`` group: nodes labelled ``ng=nvme``."""
    return node_group("nvme", min_size, max_size, node_selector=NVME, **kw)


def storage_pods(count: int, size: str, owner: str = "db", claims_each: int = 1) -> list[ClusterObject]:
    """A StatefulSet's pending pods with their local claims (``data-<pod>``, ``logs-<pod>``...)."""
    out: list[ClusterObject] = []
    for i in range(count):
        names = [f"{prefix}-{owner}-{i}" for prefix in ("data", "logs", "wal")[:claims_each]]
        out.extend(pvc(n, size) for n in names)
        out.append(pod(f"{owner}-{i}", "100m", "100Mi", owner=("StatefulSet", owner), claims=names))
    return out


def full(name: str) -> list[ClusterObject]:
    """A 4-cpu node with a running pod taking all of its cpu."""
    return [node(name), pod(f"busy-{name}", "4", "1Gi", node=name)]


def busy_group(*extra: ClusterObject, max_size: int = 10) -> ClusterObjects:
    """Group ``g`` of two full 4-cpu nodes and three pending pods that each need a node of their own."""
    return cluster(*full("w1"), *full("w2"), node_group("g", 0, max_size, nodes=["w1", "w2"]),
                   *[pod(f"web-{i}", "3", "1Gi") for i in range(3)], *extra)


def zone_group(zone: str) -> NodeGroupSpec:
    return node_group(f"g-{zone}", 0, 10, template=template(labels={ZONE: zone}))


TWO_60GI_CLAIMS = cluster(
    storage_class(), node("w1", labels=NVME, storage_free="100Gi", storage_max="200Gi"), nvme(),
    *storage_pods(1, "60Gi", "es", claims_each=2),
)
FIVE_100GI_PODS = cluster(storage_class(), nvme(template=template(labels=NVME, storage_max="250Gi")),
                          *storage_pods(5, "100Gi"))
STORAGE_REASON = {"default/db-0": {"nvme": "did not have enough free storage"}}


def waiting_for_driver(created: float) -> ClusterObjects:
    """w1 has 10Gi free; w2 is Ready without the capacity annotation, created at ``created``."""
    return cluster(storage_class(), node("w1", labels=NVME, storage_free="10Gi", storage_max="200Gi"),
                   node("w2", labels=NVME, storage_max="200Gi", created=created), nvme(),
                   *storage_pods(1, "150Gi"))


def never_got_driver(created: float) -> ClusterObjects:
    """The group's only node has no capacity annotation; its cloud template says 200Gi."""
    return cluster(storage_class(), node("w1", labels=NVME, storage_max="200Gi", created=created),
                   nvme(template=template(labels=NVME, storage_max="200Gi")), *storage_pods(1, "10Gi"))


CASES = [
    # --- basics -----------------------------------------------------------------------------------
    pytest.param(cluster(node("w1"), node_group("g", nodes=["w1"]), pod("p")), [],
                 Decision("NotNeeded", fits_existing=1), id="pending-pod-fits-existing-node"),
    pytest.param(cluster(node("w1"), node_group("g", nodes=["w1"])), [], Decision("NotNeeded"),
                 id="nothing-pending"),
    pytest.param(cluster(node_group("g", template=template(cpu="4")), pod("p", "2")), [],
                 Decision("ScaledUp", {"g": 1}), id="empty-group-scales-from-cloud-template"),
    pytest.param(cluster(node_group("small", template=template(cpu="2")),
                         node_group("tiny", template=template(cpu="1")), pod("p", "8")), [],
                 Decision("NoScaleUp", reasons={"default/p": {"small": "Insufficient cpu",
                                                              "tiny": "Insufficient cpu"}}),
                 id="no-group-helps-reasons-name-each-group"),
    pytest.param(cluster(*full("w1"), node_group("g", 0, 1, nodes=["w1"]), pod("p", "2")), [],
                 Decision("NoScaleUp", reasons={"default/p": {"g": "max node group size reached (1)"}}),
                 id="group-at-max-size"),
    pytest.param(cluster(node_group("g"), pod("p", "2")), [],
                 Decision("NoScaleUp", reasons={"default/p": {"g": "no template node"}}), id="group-without-template"),
    # --- storage (storage-semantics 1.4, 2.2-2.4) --------------------------------------------------------
    pytest.param(TWO_60GI_CLAIMS, [], Decision("ScaledUp", {"nvme": 1}),
                 id="two-local-claims-of-60Gi-do-not-fit-100Gi-free-one-new-200Gi-node"),
    pytest.param(TWO_60GI_CLAIMS, ["--storage-aware=false"], Decision("NotNeeded", fits_existing=1),
                 id="storage-aware-false-gives-upstreams-answer"),
    pytest.param(cluster(storage_class(), node("w1", labels=NVME, storage_free="100Gi"), nvme(),
                         *storage_pods(1, "100Ti")), [], Decision("ScaledUp", {"nvme": 1}),
                 id="template-without-the-label-is-unbounded"),
    pytest.param(FIVE_100GI_PODS, [], Decision("ScaledUp", {"nvme": 3}),
                 id="five-pods-each-needing-100Gi-on-a-250Gi-template-give-three-new-nodes"),
    pytest.param(FIVE_100GI_PODS, ["--storage-aware=false"], Decision("ScaledUp", {"nvme": 1}),
                 id="five-storage-pods-upstream-one-node"),
    pytest.param(cluster(storage_class(), nvme(template=template(labels=NVME, storage_max="250Gi")),
                         *storage_pods(1, "300Gi")), [], Decision("NoScaleUp", reasons=STORAGE_REASON),
                 id="claim-larger-than-the-templates-disk"),
    pytest.param(waiting_for_driver(NOW - 60), [], Decision("NotNeeded", fits_upcoming=1),
                 id="young-ready-node-without-annotation-is-upcoming"),
    pytest.param(waiting_for_driver(NOW - 60), ["--max-node-startup-time=30s"], Decision("ScaledUp", {"nvme": 1}),
                 id="ready-node-past-startup-time-without-annotation-has-no-space"),
    pytest.param(never_got_driver(NOW - 86400), [], Decision("NoScaleUp", reasons=STORAGE_REASON),
                 id="group-whose-old-nodes-never-got-the-annotation-has-zero-template-capacity"),
    pytest.param(never_got_driver(NOW - 60), [], Decision("NotNeeded", fits_upcoming=1),
                 id="group-whose-only-node-is-young-waits-for-the-driver"),
    pytest.param(cluster(storage_class(allowed_topologies={"ng": ["nvme"]}), nvme(template=template(labels=NVME)),
                         node_group("plain", template=template()), *storage_pods(1, "10Gi")), [],
                 Decision("ScaledUp", {"nvme": 1}), id="allowed-topologies-exclude-a-groups-template"),
    # --- upcoming nodes ------------------------------------------------------------------------------
    pytest.param(cluster(*full("w1"), node_group("g", target_size=2, nodes=["w1"]), pod("p", "2")), [],
                 Decision("NotNeeded", fits_upcoming=1), id="upcoming-node-absorbs-pending-pod"),
    pytest.param(cluster(*full("w1"), node_group("g", target_size=2, nodes=["w1"]), pod("p", "3"), pod("q", "3")),
                 [], Decision("ScaledUp", {"g": 1}, fits_upcoming=1), id="upcoming-node-absorbs-only-what-fits"),
    pytest.param(cluster(*full("w1"), node("w2", ready=False, created=NOW - 60), node_group("g", nodes=["w1", "w2"]),
                         pod("p", "2")), [], Decision("NotNeeded", fits_upcoming=1),
                 id="unready-node-younger-than-startup-time-is-upcoming"),
    # --- cluster-wide limits ----------------------------------------------------------------------------
    pytest.param(busy_group(), [], Decision("ScaledUp", {"g": 3}), id="no-limits"),
    pytest.param(busy_group(), ["--max-nodes-total=3"], Decision("ScaledUp", {"g": 1}), id="max-nodes-total-caps"),
    pytest.param(busy_group(), ["--max-nodes-total=2"],
                 Decision("NoScaleUp", reasons={"default/web-0": {"g": "max total nodes in cluster reached: 2"}}),
                 id="max-nodes-total-reached"),
    pytest.param(busy_group(), ["--cores-total=0:12"], Decision("ScaledUp", {"g": 1}), id="cores-total-caps"),
    pytest.param(busy_group(), ["--cores-total=0:8"],
                 Decision("NoScaleUp", reasons={"default/web-0": {"g": "max cluster cpu limit reached (8 cores)"}}),
                 id="cores-total-reached"),
    pytest.param(busy_group(), ["--memory-total=0:32"], Decision("ScaledUp", {"g": 2}), id="memory-total-caps"),
    pytest.param(busy_group(), ["--memory-total=0:16"],
                 Decision("NoScaleUp", reasons={"default/web-1": {"g": "max cluster memory limit reached (16 GiB)"}}),
                 id="memory-total-reached"),
    pytest.param(busy_group(max_size=3), [], Decision("ScaledUp", {"g": 1}), id="group-max-caps"),
    pytest.param(busy_group(), ["--max-nodes-per-scaleup=2"], Decision("ScaledUp", {"g": 2}),
                 id="max-nodes-per-scaleup-caps"),
    # --- balancing --------------------------------------------------------------------------------------
    pytest.param(cluster(zone_group("a"), zone_group("b"), *[pod(f"w{i}", "3") for i in range(4)]),
                 ["--balance-similar-node-groups"], Decision("ScaledUp", {"g-a": 2, "g-b": 2}),
                 id="balance-similar-groups-in-different-zones"),
    pytest.param(cluster(zone_group("a"), node_group("big", 0, 10, template=template(cpu="8")),
                         *[pod(f"w{i}", "3") for i in range(4)]),
                 ["--balance-similar-node-groups", "--expander=least-nodes"],
                 Decision("ScaledUp", {"big": 2}), id="balance-ignores-dissimilar-groups"),
    # --- which pods count ---------------------------------------------------------------------------------
    pytest.param(cluster(node_group("g", template=template()), pod("p", priority=-20)), [], Decision("NotNeeded"),
                 id="expendable-pod-ignored"),
    pytest.param(cluster(node_group("g", template=template()), pod("p", priority=-20)),
                 ["--expendable-pods-priority-cutoff=-30"], Decision("ScaledUp", {"g": 1}),
                 id="pod-above-lowered-cutoff-counts"),
    pytest.param(cluster(node_group("g", template=template()), pod("p", pending=False)), [], Decision("NotNeeded"),
                 id="pod-not-marked-unschedulable-ignored"),
    pytest.param(cluster(node_group("g", template=template()), pod("p", created=NOW - 5)),
                 ["--new-pod-scale-up-delay=10s"], Decision("NotNeeded"), id="pod-younger-than-scale-up-delay"),
    pytest.param(cluster(node_group("g", template=template()), pod("ds", owner=("DaemonSet", "ds"))), [],
                 Decision("NotNeeded"), id="pending-daemonset-pod-ignored"),
]


@pytest.mark.parametrize(("objects", "flags", "expected"), CASES)
def test_scale_up(objects: ClusterObjects, flags: list[str], expected: Decision) -> None:
    up = plan(objects, *flags).scale_up
    assert up.result == expected.result, (up.still_unschedulable, up.notes)
    assert {i.group: i.delta for i in up.increases} == dict(expected.increases)
    assert (len(up.fits_existing), len(up.fits_upcoming)) == (expected.fits_existing, expected.fits_upcoming)
    for ref, by_group in expected.reasons.items():
        got = up.still_unschedulable.get(ref, {})
        assert set(got) == set(by_group), (ref, got)
        for group, fragment in by_group.items():
            assert fragment in got[group], (ref, group, got[group])


def test_increase_reports_the_new_size_and_the_pods_it_helps() -> None:
    up = plan(FIVE_100GI_PODS).scale_up
    assert [(i.group, i.delta, i.new_size) for i in up.increases] == [("nvme", 3, 3)]
    assert refs(up.triggered_by) == [f"default/db-{i}" for i in range(5)]
    assert [(o.group, o.node_count, refs(o.pods)) for o in up.options] == [("nvme", 3, refs(up.triggered_by))]
    assert up.still_unschedulable == {}


def test_waiting_for_the_driver_is_reported() -> None:
    decision = plan(waiting_for_driver(NOW - 60))
    assert any("waiting for the storage driver on w2" in w for w in decision.warnings)


def test_unprocessed_pods_are_reported_not_considered() -> None:
    decision = plan(cluster(node_group("g", template=template()), pod("p", pending=False)))
    assert refs(decision.scale_up.not_processed) == ["default/p"]
    assert any("not yet marked unschedulable" in w for w in decision.warnings)


def test_scale_up_skips_scale_down() -> None:
    decision = plan(FIVE_100GI_PODS)
    assert decision.scale_down.result == "Skipped"


def test_pods_beyond_the_estimators_limit_stay_unschedulable() -> None:
    up = plan(busy_group(), "--max-nodes-per-scaleup=2").scale_up
    left: list[Pod] = [p for p in busy_group().pods if p.ref in up.still_unschedulable]
    assert refs(left) == ["default/web-2"]
    assert "node limit" in up.still_unschedulable["default/web-2"]["g"]

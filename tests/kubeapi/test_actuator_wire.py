"""The actuator's failure paths at the wire: the live adapter over HTTP to the fake API server.

``n0`` is busy (kept); ``n1`` runs ``default/app`` (30 s grace) and is the node being
removed, through the fake cloud's group ``g``. Each case arranges a fault (the API
server answers an error, a pod lingers, the cloud refuses, a volume stays pinned...),
then the actuator is started at ``t=0`` and ticked at fixed times, each tick on a
cache that has caught up with the API server. The case says how the deletion ends:
the node deleted, or rolled back (untainted) with a ``ScaleDownFailed`` message.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from autoscaler.actuation.actuator import Actuator
from autoscaler.actuation.types import ActuationEvent, ActuationKind
from autoscaler.scaledown.types import RemovalCandidate
from kube.names import CA_TO_BE_DELETED_TAINT
from kubeapi import KubeClusterAPI
from simulator.drainability import NodeDrain
from tests.app.fakecloud import FakeCloud, FakeGroup, provider_id
from tests.factories import Json, node_json, options, pod_json, pv_json, pvc_json, storage_class_json
from tests.fakeapi import FakeAPIServer
from tests.kubeapi.conftest import connect, eventually

NOW = 1_800_000_000.0
#: Tick times after the start (s): before and after the grace period plus headroom (60 s)
#: and the drain deadline (--max-pod-eviction-time, 120 s).
TICKS = (10.0, 70.0, 119.0, 120.0, 130.0)
SYNCED_KINDS = ("nodes", "pods", "persistentvolumes", "persistentvolumeclaims")


@dataclass(slots=True)
class Wire:
    api: FakeAPIServer
    cluster: KubeClusterAPI
    cloud: FakeCloud

    @property
    def group(self) -> FakeGroup:
        return self.cloud.groups["g"]

    def synced(self) -> None:
        """Wait until every cache the actuator reads has seen the API server's latest change."""
        state = self.api.state

        def caught_up() -> bool:
            return all(int(self.cluster.caches.informers[k].resource_version or 0) >= state.rv for k in SYNCED_KINDS)

        eventually(caught_up, what="caches caught up with the API server")

    def tainted(self) -> bool:
        return any(t.get("key") == CA_TO_BE_DELETED_TAINT
                   for t in self.api.state.get("Node", "n1")["spec"].get("taints") or [])


def _node(name: str) -> Json:
    obj = node_json(name, labels={"ng": "g"})
    obj["spec"]["providerID"] = provider_id("g", name)
    return obj


@pytest.fixture
def wire(api: FakeAPIServer, tmp_path: Path) -> Iterator[Wire]:
    api.state.put_all([
        storage_class_json("rok", "rok.arrikto.com"), _node("n0"), _node("n1"),
        pod_json("busy", "2", node="n0", pending=False), pod_json("app", "1", node="n1", pending=False),
    ])
    cluster = connect(api, tmp_path)
    cluster.start()
    assert cluster.wait_synced(5.0), cluster.caches.unavailable_reason()
    cloud = FakeCloud(api.state)
    cloud.groups["g"] = FakeGroup(cloud, "g", 0, 10)
    yield Wire(api, cluster, cloud)
    cluster.stop()


def _drive(wire: Wire, between: Callable[[Wire, float], None] | None = None) -> list[ActuationEvent]:
    """Start removing n1 at t=0, tick at ``TICKS`` (``between`` runs before each), return every event."""
    actuator = Actuator(wire.cluster, wire.cloud, options())
    # What the planner hands over: the pods to move; one left to finish is not among them.
    pods = [p for p in wire.cluster.list_objects().pods if p.node_name == "n1" and not p.evict_on_completion]
    candidate = RemovalCandidate("n1", "g", True, NodeDrain(to_move=tuple(pods)), {})
    events = list(actuator.start([candidate], NOW).events)
    for at in TICKS:
        if between is not None:
            between(wire, at)
        wire.synced()
        events.extend(actuator.tick(NOW + at).events)
    wire.synced()
    events.extend(actuator.tick(NOW + TICKS[-1] + 10).events)  # a failed untaint is retried here
    return events


# --- arrangements -------------------------------------------------------------------------------


def _taint_refused(wire: Wire) -> None:
    wire.api.fail(r"^/api/v1/nodes/n1$", 403, times=1, method="PUT")


def _evictions_fail(wire: Wire) -> None:
    wire.api.fail(r"/pods/app/eviction$", 500, times=10_000, method="POST")


def _pod_outlives_its_grace(wire: Wire) -> None:
    wire.api.state.graceful_deletion = True


def _cloud_refuses(wire: Wire) -> None:
    wire.group.refusals.append("injected: termination refused")


def _migratable_volume_stays_pinned(wire: Wire) -> None:
    wire.api.state.put_all([
        pvc_json("data", "10Gi", "rok", volume="data-pv"),
        pv_json("data-pv", "10Gi", "rok", hosts=["n1"], claim=("default", "data"), driver="rok.arrikto.com"),
    ])


def _unreadable_volume(wire: Wire) -> None:
    bad = pv_json("odd-pv", "10Gi", "rok", hosts=["n1"], claim=("default", "odd"), driver="rok.arrikto.com")
    bad["spec"]["capacity"]["storage"] = "a lot"
    wire.api.state.put(bad)


def _job_left_to_finish(wire: Wire) -> None:
    job = pod_json("job", "1", node="n1", pending=False, owner=None)
    job["metadata"]["annotations"] = {"cluster-autoscaler.kubernetes.io/safe-to-evict": "on-completion"}
    wire.api.state.put(job)


def _nothing(wire: Wire) -> None:
    return None


CASES = [
    pytest.param(_nothing, None, "Deleted", "", id="happy-path"),
    pytest.param(_taint_refused, None, "Failed", "cannot taint: ", id="taint-refused"),
    pytest.param(_evictions_fail, None, "Failed",
                 "pods not evicted within --max-pod-eviction-time: default/app: ", id="eviction-errors"),
    pytest.param(_pod_outlives_its_grace, None, "Failed",
                 "pods remaining after their grace period: default/app", id="pod-outlives-its-grace-period"),
    pytest.param(_cloud_refuses, None, "Failed",
                 "cloud provider refused to delete the node: injected: termination refused", id="cloud-refuses"),
    pytest.param(_migratable_volume_stays_pinned, None, "Failed",
                 "not deleted within --max-pod-eviction-time: the storage driver has not unpinned volume(s) still "
                 "pinned to the node, deleting it would lose their data: data-pv", id="volume-never-unpinned"),
    pytest.param(_unreadable_volume, None, "Failed",
                 "no longer removable: node now holds local volume(s) that cannot be migrated, deleting it would "
                 "lose their data: PersistentVolume/odd-pv (could not be read)", id="unreadable-volume"),
    pytest.param(_job_left_to_finish, None, "Failed",
                 "no longer removable: pod(s) left to finish (safe-to-evict: on-completion) still run there: "
                 "default/job", id="on-completion-pod-running"),
]


@pytest.mark.parametrize(("arrange", "between", "outcome", "message"), CASES)
def test_a_deletion_ends_deleted_or_rolled_back(wire: Wire, arrange: Callable[[Wire], None],
                                                between: Callable[[Wire, float], None] | None, outcome: str,
                                                message: str) -> None:
    arrange(wire)
    wire.synced()
    events = _drive(wire, between)
    ends = [e for e in events if e.kind in (ActuationKind.DELETED, ActuationKind.FAILED)]
    assert [e.kind.value for e in ends] == [outcome], events
    assert ends[0].message.startswith(message), ends[0].message
    if outcome == "Deleted":
        assert wire.group.deleted == ["n1"]
    else:
        assert wire.group.deleted == []
        assert not wire.tainted(), "rolled back: the taint is gone"


def test_an_untaint_that_fails_is_retried_until_it_succeeds(wire: Wire) -> None:
    _cloud_refuses(wire)
    wire.api.state.graceful_deletion = True  # the evicted pod lingers until the test removes it
    actuator = Actuator(wire.cluster, wire.cloud, options())
    pods = [p for p in wire.cluster.list_objects().pods if p.node_name == "n1"]
    actuator.start([RemovalCandidate("n1", "g", True, NodeDrain(to_move=tuple(pods)), {})], NOW)
    # Tainted; the next PATCH of the node is the rollback's untaint: refuse it once.
    wire.api.fail(r"^/api/v1/nodes/n1$", 403, times=1, method="PUT")
    wire.api.state.remove("Pod", "app", "default")
    wire.synced()
    failed = actuator.tick(NOW + 10)
    [end] = [e for e in failed.events if e.kind is ActuationKind.FAILED]
    assert end.message.endswith("the taint could not be removed, it will be retried next loop")
    assert wire.tainted() and actuator.untaint_pending == {"n1"}
    retried = actuator.tick(NOW + 20)
    assert [(e.node, e.kind) for e in retried.events] == [("n1", ActuationKind.UNTAINTED)]
    assert not wire.tainted() and actuator.untaint_pending == set()


def test_an_unavailable_view_at_the_last_look_waits_and_never_deletes(wire: Wire) -> None:
    """The pods are gone, but the view is not complete: the node waits, tainted, until it is."""
    wire.api.state.graceful_deletion = True  # the evicted pod lingers until the test removes it
    actuator = Actuator(wire.cluster, wire.cloud, options())
    pods = [p for p in wire.cluster.list_objects().pods if p.node_name == "n1"]
    actuator.start([RemovalCandidate("n1", "g", True, NodeDrain(to_move=tuple(pods)), {})], NOW)
    injected = wire.api.fail(r"^/api/v1/nodes$", 503, times=10_000, watch=True)
    wire.api.state.end_watches()
    eventually(lambda: wire.cluster.caches.unavailable_reason() is not None, what="the nodes watch lost")
    wire.api.state.remove("Pod", "app", "default")
    eventually(lambda: not wire.cluster.pods_on_node("n1"), what="the evicted pod gone from the cache")
    for at in (10.0, 130.0, 400.0):
        status = actuator.tick(NOW + at)
        assert status.in_progress == frozenset({"n1"}) and not status.events
    assert wire.group.deleted == [] and wire.tainted()
    injected.times = 0
    eventually(lambda: wire.cluster.caches.unavailable_reason() is None, timeout=10, what="the view back")
    wire.synced()
    assert [e.kind for e in actuator.tick(NOW + 410).events] == [ActuationKind.DELETED]
    assert wire.group.deleted == ["n1"]


def test_a_pinned_volume_is_waited_for_and_the_node_goes_once_the_driver_unpins_it(wire: Wire) -> None:
    _migratable_volume_stays_pinned(wire)
    wire.synced()

    def unpin_at_70s(w: Wire, at: float) -> None:
        if at == 70.0:
            pv = w.api.state.get("PersistentVolume", "data-pv")
            del pv["spec"]["nodeAffinity"]
            w.api.state.put(pv)

    events = _drive(wire, unpin_at_70s)
    deleted = [(e.time - NOW, e.kind) for e in events if e.kind is ActuationKind.DELETED]
    assert deleted == [(70.0, ActuationKind.DELETED)], events
    assert wire.group.deleted == ["n1"]


@pytest.mark.parametrize(("late", "outcome"), [
    pytest.param(pod_json("late", "1", node="n1", pending=False), ActuationKind.FAILED, id="pod-scheduled-since"),
    pytest.param(pod_json("agent", "1", node="n1", pending=False, owner=("DaemonSet", "agent")),
                 ActuationKind.DELETED, id="daemonset-pod-goes-with-the-node"),
])
def test_an_empty_node_that_got_a_pod_since_the_plan_is_not_deleted(wire: Wire, late: Json,
                                                                      outcome: ActuationKind) -> None:
    wire.api.state.remove("Pod", "app", "default")
    wire.api.state.put(late)
    wire.synced()
    actuator = Actuator(wire.cluster, wire.cloud, options())
    status = actuator.start([RemovalCandidate("n1", "g", True, NodeDrain(), {})], NOW)
    [end] = [e for e in status.events if e.kind in (ActuationKind.DELETED, ActuationKind.FAILED)]
    assert end.kind is outcome
    if outcome is ActuationKind.FAILED:
        assert end.message == "no longer removable: the node was empty, pod(s) scheduled there since: default/late"
        assert wire.group.deleted == [] and not wire.tainted()


@pytest.mark.parametrize(("ready", "drained"), [
    pytest.param(True, False, id="empty-node"),
    pytest.param(True, True, id="drained-node"),
    pytest.param(False, False, id="unready-node"),
])
def test_every_deleting_path_waits_for_a_pinned_volume(wire: Wire, ready: bool, drained: bool) -> None:
    _migratable_volume_stays_pinned(wire)
    if not drained:
        wire.api.state.remove("Pod", "app", "default")
    if not ready:
        node = wire.api.state.get("Node", "n1")
        node["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
        wire.api.state.put(node)
    wire.synced()
    actuator = Actuator(wire.cluster, wire.cloud, options())
    pods = [p for p in wire.cluster.list_objects().pods if p.node_name == "n1"]
    events = list(actuator.start([RemovalCandidate("n1", "g", ready, NodeDrain(to_move=tuple(pods)), {})],
                                 NOW).events)
    for at in TICKS:
        wire.synced()
        events.extend(actuator.tick(NOW + at).events)
    ends = [(e.time - NOW, e.kind) for e in events if e.kind in (ActuationKind.DELETED, ActuationKind.FAILED)]
    assert ends == [(120.0, ActuationKind.FAILED)], events
    assert wire.group.deleted == [] and not wire.tainted()

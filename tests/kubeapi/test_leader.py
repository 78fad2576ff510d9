"""Leader election on a coordination.k8s.io/v1 Lease between two instances, at the wire."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kube.clusterapi import ClusterAPIError
from kube.model import Taint
from kubeapi import KubeClusterAPI, LeaderElector, NotLeader, Transport
from tests.factories import node_json
from tests.fakeapi import FakeAPIServer
from tests.kubeapi.conftest import connect, eventually

LEASE = "cluster-autoscaler"


def _elector(transport: Transport, identity: str) -> LeaderElector:
    # Short durations: a hand-over takes about a second.
    return LeaderElector(transport, "kube-system", LEASE, identity, lease_duration=1.0, renew_deadline=0.6,
                         retry_period=0.1)


@pytest.fixture
def pair(api: FakeAPIServer, tmp_path: Path) -> Iterator[tuple[LeaderElector, LeaderElector]]:
    transports = [connect(api, tmp_path).transport for _ in range(2)]
    a, b = _elector(transports[0], "ca-a"), _elector(transports[1], "ca-b")
    yield a, b
    a.stop(release=False)
    b.stop(release=False)


def _holder(api: FakeAPIServer) -> str:
    return str(api.state.get("Lease", LEASE, "kube-system")["spec"]["holderIdentity"])


def test_one_leader_then_hand_over_on_release(api: FakeAPIServer, pair: tuple[LeaderElector, LeaderElector]) -> None:
    a, b = pair
    a.start()
    eventually(a.is_leader, what="a leads")
    b.start()
    eventually(lambda: b.holder() == "ca-a", what="b observes a")
    assert not b.is_leader()
    assert _holder(api) == "ca-a"
    a.stop()  # releases the lease
    assert not a.is_leader()
    eventually(b.is_leader, timeout=2.0, what="b takes over")
    lease = api.state.get("Lease", LEASE, "kube-system")
    assert lease["spec"]["holderIdentity"] == "ca-b"
    assert lease["spec"]["leaseTransitions"] == 1


def test_a_crashed_leader_is_replaced_after_the_lease_expires(api: FakeAPIServer,
                                                              pair: tuple[LeaderElector, LeaderElector]) -> None:
    a, b = pair
    assert a.try_acquire_or_renew()
    a.stop(release=False)  # a crash: the lease is left behind, held by a
    b.start()
    eventually(lambda: b.holder() == "ca-a", what="b observes a's lease")
    assert not b.is_leader(), "an unexpired lease is respected"
    eventually(b.is_leader, timeout=3.0, what="b takes over after leaseDurationSeconds")
    assert _holder(api) == "ca-b"


def test_a_leader_that_cannot_renew_stops_acting_at_once(api: FakeAPIServer, tmp_path: Path) -> None:
    acting = connect(api, tmp_path)
    elector = acting.elect(LEASE, "ca-a", lease_duration=1.0, renew_deadline=0.6, retry_period=0.1)
    with pytest.raises(NotLeader):
        acting.taint_node("n0", Taint("early", "", "NoSchedule"))
    api.state.put(node_json("n0"))
    elector.start()
    try:
        eventually(elector.is_leader, what="leading")
        acting.taint_node("n0", Taint("a", "", "NoSchedule"))
        api.fail("/leases/", 500, times=1000)  # the API server stops accepting renewals
        eventually(lambda: not elector.is_leader(), timeout=2.0, what="leadership lost")
        with pytest.raises(NotLeader):
            acting.taint_node("n0", Taint("b", "", "NoSchedule"))
        assert [r.path for r in api.mutations if "nodes" in r.path] == ["/api/v1/nodes/n0"]
    finally:
        elector.stop(release=False)


def test_a_conflicting_write_loses_the_round(api: FakeAPIServer, pair: tuple[LeaderElector, LeaderElector]) -> None:
    a, b = pair
    assert a.try_acquire_or_renew()
    api.fail("/leases/", 409, method="PUT")
    assert not a.try_acquire_or_renew()
    assert a.is_leader(), "one failed renewal does not end leadership before the renew deadline"
    assert not b.try_acquire_or_renew()


def test_bad_timing_is_refused(cluster: KubeClusterAPI) -> None:
    with pytest.raises(ValueError, match="retry_period < renew_deadline < lease_duration"):
        LeaderElector(cluster.transport, "kube-system", LEASE, "x", lease_duration=5, renew_deadline=10)
    assert isinstance(NotLeader("x"), ClusterAPIError)

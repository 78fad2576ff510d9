"""The actuator waits for a drained node's VolumeAttachments, at the wire: the live adapter over the fake API.

``n1`` is empty and unneeded, so the first loop taints it and, with nothing to evict,
comes straight to the wait for its volumes to detach. Loops run every 10 s of injected
time; a VolumeAttachment the test removes from the API server reaches the adapter's
cache through its watch before the next loop.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from autoscaler.loop import Autoscaler
from cloudproviders.snapshot import SnapshotProvider
from kube.model import NodeGroupSpec
from kubeapi import KubeClusterAPI
from tests.factories import node_json, options, pod_json
from tests.fakeapi import FakeAPIServer
from tests.kubeapi.conftest import connect, eventually

Json = dict[str, Any]

NOW = 1_800_000_000.0
SCAN = 10
GROUP = NodeGroupSpec(name="ng", min_size=0, max_size=5, target_size=None, node_names=("n0", "n1"),
                      node_selector=(), template=None)


def attachment(name: str, node: str, *, attached: object = True, pv: str = "pv-data") -> Json:
    """A ``storage.k8s.io/v1`` VolumeAttachment as the attach-detach controller writes it."""
    return {"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment", "metadata": {"name": name},
            "spec": {"attacher": "ebs.csi.aws.com", "nodeName": node, "source": {"persistentVolumeName": pv}},
            "status": {"attached": attached}}


@pytest.fixture
def live(api: FakeAPIServer, tmp_path: Path) -> Iterator[KubeClusterAPI]:
    api.state.put(node_json("n0"))
    api.state.put(node_json("n1"))
    api.state.put(pod_json("busy", cpu="2", node="n0", pending=False))
    cluster = connect(api, tmp_path)
    yield cluster
    cluster.stop()


def _start(api: FakeAPIServer, cluster: KubeClusterAPI, attachments: list[Json]) -> None:
    for va in attachments:
        api.state.put(va)
    cluster.start()
    assert cluster.wait_synced(5.0), cluster.caches.unavailable_reason()
    eventually(lambda: len(cluster.caches.nodes()) == 2, what="nodes cached")


def _detach_all(api: FakeAPIServer, cluster: KubeClusterAPI) -> None:
    for name in api.state.names("VolumeAttachment"):
        api.state.remove("VolumeAttachment", name)
    eventually(lambda: not cluster.caches.volume_attachments(), what="VolumeAttachments gone from the cache")


def _node_events(api: FakeAPIServer, reason: str) -> list[str]:
    events = [api.state.get("Event", name, "default") for name in api.state.names("Event")]
    return [e["message"] for e in events if e["reason"] == reason and e["involvedObject"]["name"] == "n1"]


@dataclass(frozen=True)
class Case:
    flags: tuple[str, ...]
    attachments: list[Json]
    #: When the test removes every VolumeAttachment (s); None: never.
    detached_at: int | None
    #: When the node is deleted (s).
    deleted_at: int
    #: What the warning event and log line say is left; None: no such warning.
    left: str | None = None


@pytest.mark.parametrize("case", [
    pytest.param(Case((), [attachment("csi-a", "n1")], 60, 60), id="waits-while-attached-deletes-once-gone"),
    pytest.param(Case(("--max-volume-detach-time=30s",), [attachment("csi-a", "n1"), attachment("csi-b", "n1")],
                      None, 30, "2 VolumeAttachment(s) still on the node after --max-volume-detach-time (30s), "
                      "deleting it anyway: csi-a, csi-b"), id="bounded-by-the-flag-and-names-them"),
    pytest.param(Case(("--max-volume-detach-time=30s",), [attachment("csi-a", "n1", attached=False)], None, 30,
                      "deleting it anyway: csi-a"), id="detaching-still-counts"),
    pytest.param(Case(("--max-volume-detach-time=0s",), [attachment("csi-a", "n1")], None, 0),
                 id="zero-does-not-wait"),
    pytest.param(Case((), [attachment("csi-a", "n0")], None, 0), id="another-nodes-attachment-does-not-count"),
    pytest.param(Case(("--max-volume-detach-time=20s",), [attachment("csi-bad", "n1", attached="yes")], None, 20,
                      "deleting it anyway: csi-bad"), id="unconvertible-attachment-counts-as-attached"),
])
def test_a_drained_node_goes_once_its_volumes_are_detached(api: FakeAPIServer, live: KubeClusterAPI,
                                                          caplog: pytest.LogCaptureFixture, case: Case) -> None:
    _start(api, live, case.attachments)
    provider = SnapshotProvider([GROUP], live.caches.nodes())
    loop = Autoscaler(live, provider, options("--scale-down-unneeded-time=0s", *case.flags))
    deleted: list[int] = []
    with caplog.at_level(logging.WARNING, logger="autoscaler.actuation.actuator"):
        for at in range(0, case.deleted_at + 1, SCAN):
            if at == case.detached_at:
                _detach_all(api, live)
            record = loop.run_once(NOW + at)
            if "n1" in record.actuation.deleted:
                deleted.append(at)
    assert deleted == [case.deleted_at], "deleted once, when the wait ended"
    [group] = provider.node_groups()
    assert group.target_size() == 1, "the cloud deleted n1"
    not_detached = _node_events(api, "ScaleDownVolumesNotDetached")
    warned = [r.getMessage() for r in caplog.records if "--max-volume-detach-time" in r.getMessage()]
    if case.left is None:
        assert (not_detached, warned) == ([], [])
    else:
        assert len(not_detached) == 1 and case.left in not_detached[0], not_detached
        assert len(warned) == 1 and case.left in warned[0], warned
    waiting = _node_events(api, "ScaleDownWaitingForVolumeDetach")
    assert len(waiting) == (1 if case.deleted_at > 0 else 0), "one event when the wait begins"

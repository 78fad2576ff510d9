"""Which VolumeAttachments the actuator waits for before a drained node goes (``actuation/detach.py``).

``n1`` is drained: ``web`` was evicted; ``ds`` is a DaemonSet pod the drain leaves there.
Each has a claim bound to a network volume with a VolumeAttachment on ``n1``.
"""

from __future__ import annotations

import dataclasses

import msgspec.structs
import pytest

from autoscaler.actuation.detach import attachments_to_wait_for
from kube.model import ClusterObjects, Pod, VolumeAttachment
from tests.factories import cluster, pod, pvc

DRAINED = frozenset({("default", "web")})


def _cluster(*attachments: VolumeAttachment, ds: Pod | None = None) -> ClusterObjects:
    web = pod("web", node="n1", claims=["web-data"])
    daemon = ds if ds is not None else pod("ds", node="n1", owner=("DaemonSet", "agent"), claims=["ds-data"])
    objects = cluster(web, daemon, pvc("web-data", storage_class="ebs", volume="pv-web"),
                      pvc("ds-data", storage_class="ebs", volume="pv-ds"))
    return dataclasses.replace(objects, volume_attachments=list(attachments))


def _va(name: str, node: str = "n1", volume: str | None = "pv-web") -> VolumeAttachment:
    return VolumeAttachment(name, node, "ebs.csi.aws.com", volume, attached=True)


@pytest.mark.parametrize(("objects", "expected"), [
    pytest.param(_cluster(), [], id="none"),
    pytest.param(_cluster(_va("b"), _va("a")), ["a", "b"], id="evicted-pods-volumes-sorted"),
    pytest.param(_cluster(_va("a", node="n2")), [], id="another-node"),
    pytest.param(_cluster(_va("ds", volume="pv-ds")), [], id="a-pod-that-stays-keeps-its-volume"),
    pytest.param(_cluster(_va("ds", volume="pv-ds"),
                          ds=msgspec.structs.replace(pod("ds", node="n1", owner=("DaemonSet", "agent"),
                                                         claims=["ds-data"]), deleted=1.0)),
                 ["ds"], id="a-terminating-pod-lets-go"),
    pytest.param(_cluster(_va("ds", volume="pv-ds"),
                          ds=msgspec.structs.replace(pod("ds", node="n1", owner=("DaemonSet", "agent"),
                                                         claims=["ds-data"]), phase="Succeeded")),
                 ["ds"], id="a-finished-pod-lets-go"),
    pytest.param(_cluster(_va("inline", volume=None)), ["inline"], id="inline-volume-counts"),
])
def test_attachments_to_wait_for(objects: ClusterObjects, expected: list[str]) -> None:
    assert attachments_to_wait_for(objects, "n1", DRAINED) == expected

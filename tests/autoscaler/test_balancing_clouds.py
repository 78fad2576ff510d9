"""Balancing compares node groups with each cloud's own ignored labels, as upstream's comparators do.

Two groups equal but for the CSI driver's zone label (or, on Azure, in one agent pool)
are similar on that cloud and split a scale-up; on another cloud they are not.
"""

from __future__ import annotations

import pytest

from autoscaler.runonce import run_once
from cloudproviders.snapshot import SnapshotProvider
from kube.model import ClusterObjects
from tests.autoscaler.scaledown_helpers import group, scaled_cluster
from tests.factories import NOW, node, options, pod, template


class NamedProvider(SnapshotProvider):
    """The snapshot's groups under a cloud's name (which comparator applies)."""

    def __init__(self, objects: ClusterObjects, cloud: str) -> None:
        super().__init__(objects.node_groups, objects.nodes)
        self.cloud = cloud

    @property
    def name(self) -> str:
        return self.cloud


def _two_groups(label: str, a: str, b: str, shared: dict[str, str] | None = None) -> ClusterObjects:
    labels_a, labels_b = {"pool": "x", label: a, **(shared or {})}, {"pool": "x", label: b, **(shared or {})}
    return scaled_cluster(
        node("a-1", labels=labels_a), node("b-1", labels=labels_b),
        pod("busy-a", "3", "1Gi", "a-1"), pod("busy-b", "3", "1Gi", "b-1"),
        group("a", "a-1", max_size=5, template=template(labels=labels_a)),
        group("b", "b-1", max_size=5, template=template(labels=labels_b)),
        *[pod(f"p{i}", "3", "1Gi") for i in range(4)])


@pytest.mark.parametrize(("cloud", "label", "shared", "balanced"), [
    pytest.param("aws", "topology.ebs.csi.aws.com/zone", None, True, id="aws-ebs-zone-ignored"),
    pytest.param("aws", "eks.amazonaws.com/nodegroup", None, True, id="aws-eks-nodegroup-ignored"),
    pytest.param("gce", "topology.gke.io/zone", None, True, id="gce-pd-zone-ignored"),
    pytest.param("azure", "topology.disk.csi.azure.com/zone", None, True, id="azure-disk-zone-ignored"),
    pytest.param("azure", "disk", {"kubernetes.azure.com/agentpool": "nvme"}, True, id="azure-same-agent-pool"),
    pytest.param("gce", "topology.ebs.csi.aws.com/zone", None, False, id="aws-label-counts-on-gce"),
    pytest.param("aws", "disk", None, False, id="any-other-label-counts"),
])
def test_similar_groups_per_cloud(cloud: str, label: str, shared: dict[str, str] | None, balanced: bool) -> None:
    objects = _two_groups(label, "one", "two", shared)
    up = run_once(objects, NamedProvider(objects, cloud), options("--balance-similar-node-groups=true"), NOW,
                  steady_state=True).scale_up
    assert up.result == "ScaledUp"
    assert (len(up.increases) == 2) is balanced, up.increases

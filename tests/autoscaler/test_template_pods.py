"""A cloud template's own pods (upstream's kube-proxy mirror pod) take room on the template node.

Upstream's AWS, GCE and Azure ``TemplateNodeInfo`` put ``BuildKubeProxy``'s pod (100m CPU)
on the template, and sanitizing keeps mirror pods; so from zero a pod asking for a whole
node's CPU does not fit one, and the room left is allocatable less 100m. Groups built
from live nodes take their pods from the live node instead.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from autoscaler.runonce import LoopDecision, run_once
from cloudproviders.interface import NodeGroup
from cloudproviders.snapshot import SnapshotNodeGroup, SnapshotProvider
from cloudproviders.template_pods import kube_proxy_pod
from kube.model import ClusterObjects, Node, NodeGroupSpec, Pod
from tests.factories import NOW, cluster, node, node_group, options, pod, template


class CloudGroup(SnapshotNodeGroup):
    """A snapshot group whose template comes with the pods upstream's cloud templates carry."""

    def template_pods(self) -> tuple[Pod, ...]:
        return (kube_proxy_pod(self.name),)


class CloudProvider(SnapshotProvider):
    def __init__(self, specs: Sequence[NodeGroupSpec], nodes: Sequence[Node]) -> None:
        super().__init__(specs, nodes)
        members = {g.name: list(g.node_names()) for g in super().node_groups() if isinstance(g, SnapshotNodeGroup)}
        self._cloud = [CloudGroup(spec, members[spec.name]) for spec in specs]

    def node_groups(self) -> Sequence[NodeGroup]:
        return self._cloud


def decide(objects: ClusterObjects) -> LoopDecision:
    return run_once(objects, CloudProvider(objects.node_groups, objects.nodes), options(), NOW, steady_state=True)


@pytest.mark.parametrize(("cpu", "result", "nodes"), [
    pytest.param("3900m", "ScaledUp", 1, id="allocatable-less-kube-proxy-fits"),
    pytest.param("4", "NoScaleUp", 0, id="whole-allocatable-does-not-fit"),
])
def test_from_zero_kube_proxy_takes_its_100m(cpu: str, result: str, nodes: int) -> None:
    up = decide(cluster(node_group("g", template=template(cpu="4")), pod("p", cpu))).scale_up
    assert up.result == result, (up.still_unschedulable, up.notes)
    assert sum(i.delta for i in up.increases) == nodes


def test_a_live_node_is_the_template_without_kube_proxy() -> None:
    objects = cluster(node("w1", cpu="4"), node_group("g", nodes=["w1"], template=template(cpu="4")),
                      pod("busy", "4", node="w1"), pod("p", "4"))
    up = decide(objects).scale_up
    assert up.result == "ScaledUp", (up.still_unschedulable, up.notes)

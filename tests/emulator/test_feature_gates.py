"""``simulate --feature-gates`` reaches the simulated world: its pods and controller templates are
read under the gates in force (issue 16, item 7)."""

from __future__ import annotations

import pytest

from emulator.objects import prepare
from kube.featuregates import FeatureGates
from kube.names import StorageNames
from tests.factories import pod_json

GT = {"key": "sla", "operator": "Gt", "value": "750", "effect": "NoSchedule"}


def _objects() -> list[dict[str, object]]:
    pod = pod_json("p")
    pod["spec"]["tolerations"] = [GT]
    template = pod_json("t")
    template["spec"]["tolerations"] = [GT]
    replica_set = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "rs", "namespace": "default",
                                                                             "uid": "u-rs"},
                   "spec": {"replicas": 1, "template": {"metadata": {"labels": {}}, "spec": template["spec"]}}}
    return [pod, replica_set]


@pytest.mark.parametrize(("gates", "compare"), [
    pytest.param(None, False, id="kubernetes-default-off"),
    pytest.param(FeatureGates(taint_toleration_comparison_operators=True), True, id="on"),
])
def test_world_objects_follow_the_gates(gates: FeatureGates | None, compare: bool) -> None:
    prepared = prepare(_objects(), "scenario.yaml", StorageNames(), gates)
    (pod,) = prepared.objects.pods
    (workload,) = prepared.workloads
    for toleration in (pod.scheduling.tolerations[0], workload.prototype.scheduling.tolerations[0]):
        assert toleration.operator == "Gt" and toleration.compare is compare

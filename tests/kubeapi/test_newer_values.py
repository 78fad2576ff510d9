"""``run``'s view at the wire keeps what a newer API server accepts (issue 16, item 7).

A pod with a ``Gt`` toleration (Kubernetes 1.35) used to fail conversion and drop out of
the view, so it never triggered a scale-up. Now it stays, with one warning, and its
toleration compares only when ``--feature-gates`` turns the gate on.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kube.featuregates import FeatureGates
from tests.factories import node_json, pod_json
from tests.fakeapi import FakeAPIServer
from tests.kubeapi.conftest import connect, eventually


@pytest.mark.parametrize(("gates", "compare"), [
    pytest.param(None, False, id="kubernetes-default-gate-off"),
    pytest.param(FeatureGates(taint_toleration_comparison_operators=True), True, id="gate-on"),
])
def test_a_pod_with_a_comparison_toleration_stays_in_the_view(api: FakeAPIServer, tmp_path: Path,
                                                              gates: FeatureGates | None, compare: bool) -> None:
    api.state.put(node_json("n0"))
    pod = pod_json("sla")
    pod["spec"]["tolerations"] = [{"key": "sla", "operator": "Gt", "value": "750", "effect": "NoSchedule"}]
    api.state.put(pod)
    cluster = connect(api, tmp_path, gates=gates)
    cluster.start()
    try:
        assert cluster.wait_synced(15.0)
        eventually(lambda: len(cluster.list_objects().pods) == 1, what="the pod in the view")
        objects = cluster.list_objects()
        (toleration,) = objects.pods[0].scheduling.tolerations
        assert toleration.operator == "Gt" and toleration.compare is compare
        gated = [w for w in objects.warnings if "TaintTolerationComparisonOperators" in w]
        assert len(gated) == (0 if compare else 1), objects.warnings
        assert cluster.caches.informers["pods"].failed == {}
    finally:
        cluster.stop()

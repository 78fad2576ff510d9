"""Pods annotated ``safe-to-evict: "on-completion"`` are left to finish, and their node waits for them.

Upstream: the OnCompletion drain rule (``simulator/drainability/rules/oncompletion``)
answers ``WaitForCompletion``; the removal simulation still passes (the pod needs no new
home) but ``Planner.NodesToDelete`` marks the node ``BlockedByOnCompletionPod``. ``w1``
is the subject; ``w2`` is busy but has room for anything on ``w1``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from app.cli import main
from kube.convert import convert_pod
from kube.model import ClusterObjects, Pod
from tests.app.badinput import NOW_FLAG, write
from tests.autoscaler.scaledown_helpers import group, pod_with, reasons, scaled_cluster
from tests.factories import node, node_group_json, node_json, plan, pod, pod_json, yaml_snapshot

ON_COMPLETION = {"cluster-autoscaler.kubernetes.io/safe-to-evict": "on-completion"}
DS_ANNOTATION = {"cluster-autoscaler.kubernetes.io/daemonset-pod": "true"}


def _finished_job() -> Pod:
    obj = pod_json("job", "1", "1Gi", "w1", owner=("Job", "batch"))
    obj["metadata"]["annotations"] = dict(ON_COMPLETION)
    obj["spec"]["restartPolicy"] = "Never"
    obj["status"] = {"phase": "Succeeded"}
    return convert_pod(obj)


def _cluster(*on_w1: Any, w1_cpu: str = "4") -> ClusterObjects:
    busy = pod("busy", "5", "1Gi", "w2", owner=("ReplicaSet", "busy"))
    return scaled_cluster(node("w1", w1_cpu), node("w2", "8"), group("g", "w1", "w2"), busy, *on_w1)


def _w1(objects: ClusterObjects) -> tuple[str, str]:
    down = plan(objects).scale_down
    assert not ("w1" in down.unneeded and "w1" in reasons(down)), "never in both"
    if "w1" in down.removed:
        return "removed", ""
    return reasons(down).get("w1", "unneeded"), next((u.detail for u in down.unremovable if u.node == "w1"), "")


@pytest.mark.parametrize(("on_w1", "expected"), [
    pytest.param(_cluster(pod_with("big", "6", node="w1"), pod_with("job", node="w1", annotations=ON_COMPLETION),
                          w1_cpu="16"), ("NoPlaceToMovePods", ""), id="simulation-fails-first"),
    pytest.param((pod_with("job", node="w1", annotations=ON_COMPLETION),),
                 ("BlockedByOnCompletionPod", "pod(s) left to finish (safe-to-evict: on-completion): default/job"),
                 id="running-job-holds-its-node"),
    pytest.param((_finished_job(),),
                 ("removed", ""), id="finished-job-is-terminal-first"),
    pytest.param((pod_with("web", node="w1"), pod_with("job", node="w1", annotations=ON_COMPLETION)),
                 ("BlockedByOnCompletionPod", "pod(s) left to finish (safe-to-evict: on-completion): default/job"),
                 id="drainable-node-still-held"),
    pytest.param((pod_with("agent", node="w1", owner=None, annotations={**DS_ANNOTATION, **ON_COMPLETION}),),
                 ("removed", ""), id="daemonset-rule-comes-first"),
    pytest.param((pod_with("p", node="w1", annotations={"cluster-autoscaler.kubernetes.io/safe-to-evict": "true"}),),
                 ("removed", ""), id="safe-to-evict-true-is-not-on-completion"),
])
def test_on_completion_pods_hold_their_node(on_w1: tuple[Any, ...] | ClusterObjects,
                                            expected: tuple[str, str]) -> None:
    reason, detail = _w1(on_w1 if isinstance(on_w1, ClusterObjects) else _cluster(*on_w1))
    assert reason == expected[0]
    if expected[1]:
        assert detail == expected[1]


def test_the_job_is_never_evicted_nor_rescheduled() -> None:
    down = plan(_cluster(pod_with("web", node="w1"), pod_with("job", node="w1", annotations=ON_COMPLETION))).scale_down
    assert down.to_delete == []


def test_plan_json_names_upstreams_reason(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    job = pod_json("job", "1", "1Gi", "w1", owner=None)
    job["metadata"]["annotations"] = dict(ON_COMPLETION)
    snapshot = yaml_snapshot(
        node_json("w1", labels={"ng": "g"}), node_json("w2", labels={"ng": "g"}),
        node_group_json("g", 0, 4, node_selector={"ng": "g"}),
        pod_json("busy", "5", "1Gi", "w2"), job,
    )
    code = main(["plan", write(tmp_path, snapshot), NOW_FLAG])
    out, err = capsys.readouterr()
    assert (code, err) == (0, ""), err
    down = json.loads(out)["scaleDown"]
    assert "w1" not in down["unneeded"] and "w1" not in down["removed"]
    assert {"node": "w1", "reason": "BlockedByOnCompletionPod",
            "detail": "pod(s) left to finish (safe-to-evict: on-completion): default/job"} in down["unremovable"]

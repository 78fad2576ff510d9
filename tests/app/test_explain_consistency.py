"""``explain`` agrees with ``plan`` on the same input and flags, by construction and checked here.

A pod is TriggersScaleUp iff plan's ``triggeredBy`` has it (its group among the
increases), NoScaleUp iff plan's ``stillUnschedulable`` has it with the same per-group
reasons, and the Fits* counts equal plan's; a node is Removable iff plan removed it,
Unneeded iff plan lists it unneeded but did not remove it, Unremovable iff plan lists it
so, with the same reason. Checked on the shipped snapshots and on generated clusters.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.cli import decide
from app.explain.verdicts import explain_nodes, explain_pods
from app.plan_output import to_json
from autoscaler.config import Options
from autoscaler.runonce import LoopDecision
from kube.model import ClusterObjects
from tests.factories import NOW, cluster, node, node_group, options, plan, pod, pvc, storage_class, template

ROOT = Path(__file__).resolve().parents[2]
SNAPSHOTS = sorted([*(ROOT / "examples").glob("*.yaml"), *(p for p in (ROOT / "examples" / "cases").glob(
    "*.snapshot.yaml") if not p.name.startswith("bad-input"))])


def assert_consistent(objects: ClusterObjects, decision: LoopDecision, opts: Options) -> None:
    doc: dict[str, Any] = to_json(decision)
    up, down = doc["scaleUp"], doc["scaleDown"]
    pending = [p for p in objects.pods if not p.node_name and not p.is_terminal]
    pods = explain_pods(decision, objects, opts, pending)
    triggered = set(up["triggeredBy"])
    increased = {i["nodeGroup"] for i in up["increases"]}
    still = {entry["pod"]: entry["reasons"] for entry in up["stillUnschedulable"]}
    for answer in pods:
        assert (answer.verdict == "TriggersScaleUp") == (answer.pod in triggered), answer
        if answer.verdict == "TriggersScaleUp":
            assert answer.node_group in increased
        assert (answer.verdict == "NoScaleUp") == (answer.pod in still), answer
        if answer.verdict == "NoScaleUp":
            assert {g.node_group: g.reason for g in answer.node_groups} == still[answer.pod]
    verdicts = Counter(a.verdict for a in pods)
    assert verdicts["FitsExistingNode"] == up["fitsExistingNodes"]
    assert verdicts["FitsUpcomingNode"] == up["fitsUpcomingNodes"]
    nodes = {a.node: a for a in explain_nodes(decision, objects, opts, [n.name for n in objects.nodes])}
    removed, unneeded = set(down["removed"]), set(down["unneeded"])
    unremovable = {u["node"]: u["reason"] for u in down["unremovable"]}
    for name, verdict in nodes.items():
        assert (verdict.verdict == "Removable") == (name in removed), verdict
        assert (verdict.verdict == "Unneeded") == (name in unneeded and name not in removed), verdict
        assert (verdict.verdict == "Unremovable") == (name in unremovable), verdict
        if name in unremovable:
            assert verdict.reason == unremovable[name]


@pytest.mark.parametrize("path", SNAPSHOTS, ids=lambda p: p.name)
@pytest.mark.parametrize("flags", [pytest.param((), id="storage-aware"),
                                   pytest.param(("--storage-aware=false",), id="upstream")])
def test_explain_agrees_with_plan_on_the_shipped_snapshots(path: Path, flags: tuple[str, ...]) -> None:
    opts = options(*flags)
    objects, decision = decide([str(path)], opts, NOW)
    assert_consistent(objects, decision, opts)


NVME = {"ng": "nvme"}
CPU = {"ng": "cpu"}


@st.composite
def clusters(draw: st.DrawFn) -> ClusterObjects:
    """Small clusters: CPU and NVMe nodes, pods running and pending, some with local claims."""
    objects: list[Any] = [storage_class()]
    nodes = draw(st.integers(1, 5))
    for i in range(nodes):
        labels = NVME if draw(st.booleans()) else CPU
        free = draw(st.sampled_from(["0", "100Gi", "500Gi"])) if labels is NVME else None
        objects.append(node(f"n{i}", cpu=draw(st.sampled_from(["2", "4", "8"])), labels=labels,
                            storage_free=free, storage_max="1Ti" if free is not None else None))
        for j in range(draw(st.integers(0, 2))):
            objects.append(pod(f"run-{i}-{j}", cpu=draw(st.sampled_from(["500m", "1", "3"])), node=f"n{i}",
                               pending=False))
    for j in range(draw(st.integers(0, 6))):
        claims = []
        if draw(st.booleans()):
            claims = [f"data-{j}"]
            objects.append(pvc(f"data-{j}", draw(st.sampled_from(["50Gi", "400Gi", "2Ti"]))))
        objects.append(pod(f"pend-{j}", cpu=draw(st.sampled_from(["500m", "2", "6"])), claims=claims,
                           pending=draw(st.booleans())))
    objects.append(node_group("nvme", 0, draw(st.integers(0, 4)), node_selector=NVME,
                              template=template(cpu="8", storage_max="1Ti", labels=NVME)))
    objects.append(node_group("cpu", 0, draw(st.integers(0, 4)), node_selector=CPU,
                              template=template(cpu="4", labels=CPU)))
    return cluster(*objects)


@given(objects=clusters(), storage_aware=st.booleans())
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_explain_agrees_with_plan_on_generated_clusters(objects: ClusterObjects, storage_aware: bool) -> None:
    flags = () if storage_aware else ("--storage-aware=false",)
    assert_consistent(objects, plan(objects, *flags), options(*flags))

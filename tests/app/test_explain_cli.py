"""``python -m autoscaler explain``: targets, outputs, and one-line errors with exit status 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.app.badinput import Run

ROOT = Path(__file__).resolve().parents[2]
UP = str(ROOT / "examples" / "storage-scale-up.yaml")
DOWN = str(ROOT / "examples" / "storage-scale-down.yaml")
NOW = "--now=2026-06-01T12:00:00Z"


def test_json_names_each_pending_pods_verdict_and_its_group(cli: Run) -> None:
    code, out, err = cli(["explain", UP, "pods", NOW])
    assert (code, err) == (0, "")
    doc = json.loads(out)
    assert doc["version"] == 1 and doc["nodes"] == []
    assert {p["pod"]: (p["verdict"], p["nodeGroup"]) for p in doc["pods"]} == {
        f"default/kafka-{i}": ("TriggersScaleUp", "nvme") for i in range(4)}


def test_upstream_flags_give_upstreams_verdicts(cli: Run) -> None:
    code, out, _ = cli(["explain", UP, "pods", NOW, "--storage-aware=false"])
    assert code == 0
    assert {p["verdict"] for p in json.loads(out)["pods"]} == {"FitsExistingNode"}


def test_text_explains_a_node_with_destinations_and_bytes(cli: Run) -> None:
    code, out, _ = cli(["explain", DOWN, "node/nvme-1", NOW, "--output=text"])
    assert code == 0
    assert out.startswith("node/nvme-1: Removable")
    assert "default/cache-0 -> nvme-2, unpins 100Gi" in out


@pytest.mark.parametrize(("flags", "predicted", "deadline"), [
    # No drain observed yet: twice the flag's prediction, with cost.PRIOR_MARGIN (x4).
    pytest.param([], 100.0, 800.0, id="100Gi-at-the-default-1Gi-per-s"),
    pytest.param(["--storage-unpin-throughput=4Gi"], 25.0, 200.0, id="4Gi-per-s"),
    pytest.param(["--storage-unpin-throughput=10Gi"], 10.0, 120.0, id="fast-driver-max-pod-eviction-time"),
])
def test_a_removable_node_shows_its_predicted_unpin_time_and_drain_deadline(
        cli: Run, flags: list[str], predicted: float, deadline: float) -> None:
    code, out, _ = cli(["explain", DOWN, "node/nvme-1", NOW, *flags])
    assert code == 0
    [node] = json.loads(out)["nodes"]
    assert node["bytesToUnpin"] == 100 * 2**30
    assert (node["predictedUnpinSeconds"], node["drainDeadlineSeconds"]) == (predicted, deadline)
    code, out, _ = cli(["explain", DOWN, "node/nvme-1", NOW, "--output=text", *flags])
    assert f"  predicted unpin time {predicted:g}s, drain deadline {deadline:g}s" in out.splitlines()


def test_a_pod_target_and_a_node_target_together(cli: Run) -> None:
    code, out, _ = cli(["explain", DOWN, "pod/default/cache-0", "node/nvme-2", NOW])
    doc = json.loads(out)
    assert code == 0
    assert [p["pod"] for p in doc["pods"]] == ["default/cache-0"]
    assert doc["pods"][0]["verdict"] == "NotConsidered" and "scheduled on node" in doc["pods"][0]["reason"]
    assert [n["node"] for n in doc["nodes"]] == ["nvme-2"]


@pytest.mark.parametrize(("argv", "message"), [
    pytest.param(["explain", UP], "no target", id="no-target"),
    pytest.param(["explain", "pods"], "no node groups", id="live-without-groups"),
    pytest.param(["explain", UP, "pod/default/nope"], "pod/default/nope: no such pod", id="unknown-pod"),
    pytest.param(["explain", UP, "node/nope"], "node/nope: no such node", id="unknown-node"),
    pytest.param(["explain", "missing.yaml", "pods"], "missing.yaml", id="missing-file"),
    pytest.param(["explain", UP, "pods", "--now=yesterday"], "--now", id="bad-now"),
])
def test_bad_input_is_one_line_and_exit_2(cli: Run, argv: list[str], message: str) -> None:
    code, out, err = cli(argv)
    assert code == 2 and out == ""
    assert message in err and err.count("\n") == 1, err

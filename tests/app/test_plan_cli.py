"""``autoscaler plan`` as users run it: files in, the decision out, bad input as one line and exit 2."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from tests.app.badinput import NOW_FLAG, Run, write
from tests.factories import (
    Json,
    node_group_json,
    node_json,
    pod_json,
    pvc_json,
    storage_class_json,
    template,
    yaml_snapshot,
)

NVME = {"ng": "nvme"}

#: A pod with two 60Gi local claims; w1 has 100Gi free; the nvme group's nodes have 200Gi.
STORAGE_BOUND: list[Json] = [
    storage_class_json(),
    node_json("w1", labels=NVME, storage_free="100Gi", storage_max="200Gi"),
    node_group_json("nvme", 1, 4, node_selector=NVME),
    pvc_json("a-es-0", "60Gi"),
    pvc_json("b-es-0", "60Gi"),
    pod_json("es-0", owner=("StatefulSet", "es"), claims=["a-es-0", "b-es-0"]),
]

def test_json_output_is_the_contract(cli: Run, tmp_path: Path) -> None:
    code, out, err = cli(["plan", write(tmp_path, yaml_snapshot(*STORAGE_BOUND)), NOW_FLAG])
    assert (code, err) == (0, "")
    doc = json.loads(out)
    assert doc["version"] == 1
    assert {"version", "scaleUp", "scaleDown", "nodes"} <= set(doc)
    up = doc["scaleUp"]
    assert {"result", "increases", "triggeredBy", "stillUnschedulable", "options"} <= set(up)
    assert up["result"] == "ScaledUp"
    assert up["increases"] == [{"nodeGroup": "nvme", "delta": 1, "newSize": 2}]
    assert up["triggeredBy"] == ["default/es-0"]
    assert up["options"] == [{"nodeGroup": "nvme", "nodeCount": 1, "pods": ["default/es-0"]}]
    assert {"result", "removed", "unneeded", "unremovable"} <= set(doc["scaleDown"])
    assert [n["name"] for n in doc["nodes"]] == ["w1"]
    assert doc["nodes"][0]["nodeGroup"] == "nvme"
    assert doc["nodes"][0]["utilization"]["storage"] == 0.5


def test_storage_aware_false_gives_upstreams_answer(cli: Run, tmp_path: Path) -> None:
    code, out, _ = cli(["plan", write(tmp_path, yaml_snapshot(*STORAGE_BOUND)), NOW_FLAG, "--storage-aware=false"])
    assert code == 0
    assert json.loads(out)["scaleUp"]["result"] == "NotNeeded"


def test_text_output_names_the_group(cli: Run, tmp_path: Path) -> None:
    code, out, err = cli(["plan", write(tmp_path, yaml_snapshot(*STORAGE_BOUND)), NOW_FLAG, "--output=text"])
    assert (code, err) == (0, "")
    assert out.startswith("Plan at 2026-06-01T12:00:00Z\n")
    assert "Scale-up: ScaledUp" in out
    assert "+ 1 node(s) in nvme (new size 2)" in out
    assert "for: default/es-0" in out


def test_no_scale_up_lists_reasons_per_group(cli: Run, tmp_path: Path) -> None:
    docs = [node_group_json("small", template=template(cpu="2")), pod_json("big", "16")]
    code, out, _ = cli(["plan", write(tmp_path, yaml_snapshot(*docs)), NOW_FLAG])
    up = json.loads(out)["scaleUp"]
    assert (code, up["result"]) == (0, "NoScaleUp")
    assert up["stillUnschedulable"] == [{"pod": "default/big", "reasons": {"small": "Insufficient cpu"},
                                         "refusals": [{"nodeGroup": "small", "reason": "Insufficient cpu",
                                                       "plugin": "NodeResourcesFit"}]}]


def test_stdin(cli: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(yaml_snapshot(*STORAGE_BOUND)))
    code, out, err = cli(["plan", "-", NOW_FLAG])
    assert (code, err) == (0, "")
    assert json.loads(out)["scaleUp"]["result"] == "ScaledUp"


def test_json_list_and_several_files(cli: Run, tmp_path: Path) -> None:
    listing = write(tmp_path, json.dumps({"apiVersion": "v1", "kind": "List", "items": STORAGE_BOUND[1:]}),
                    "cluster.json")
    classes = write(tmp_path, yaml_snapshot(STORAGE_BOUND[0]), "classes.yaml")
    code, out, _ = cli(["plan", listing, classes, NOW_FLAG])
    assert code == 0
    assert json.loads(out)["scaleUp"]["increases"] == [{"nodeGroup": "nvme", "delta": 1, "newSize": 2}]


def _bad_pod() -> Json:
    doc = pod_json("web")
    doc["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "lots"
    return doc


def _bad_group() -> Json:
    return node_group_json("nvme", 5, 2, template=template())


def _bad_node() -> Json:
    doc = node_json("w1")
    doc["status"]["capacity"]["cpu"] = "nine"
    doc["status"]["allocatable"]["cpu"] = "nine"
    return doc


@pytest.mark.parametrize(("text", "flags", "fragments"), [
    pytest.param("kind: Pod\nmetadata: [unclosed\n", [], ["snapshot.yaml", "invalid YAML", "line"],
                 id="unparsable-yaml"),
    pytest.param('{"kind": "Pod", ', [], ["snapshot.json", "invalid JSON"], id="unparsable-json"),
    pytest.param(yaml_snapshot(_bad_group()), [], ["snapshot.yaml", "NodeGroup/nvme", "spec.minSize", "maxSize 2"],
                 id="node-group-min-size-above-max-size"),
    pytest.param(yaml_snapshot(_bad_pod()), [],
                 ["snapshot.yaml", "Pod/default/web", "spec.containers[0].resources.requests.cpu", "'lots'"],
                 id="pod-cpu-lots"),
    pytest.param(yaml_snapshot(_bad_node()), [], ["Node/w1", "status.capacity.cpu", "'nine' is not a quantity"],
                 id="node-cpu-not-a-quantity"),
    pytest.param("- just\n- a list\n", [], ["snapshot.yaml", "expected a Kubernetes object"], id="not-an-object"),
    pytest.param(yaml_snapshot(*STORAGE_BOUND), ["--bogus-flag"], ["unrecognized arguments: --bogus-flag"],
                 id="unknown-flag"),
    pytest.param(yaml_snapshot(*STORAGE_BOUND), ["--scale-down-utilization-threshold=2"],
                 ["--scale-down-utilization-threshold", "not between 0 and 1"], id="flag-value-out-of-range"),
    pytest.param(yaml_snapshot(*STORAGE_BOUND), ["--expander=cheapest"], ["--expander", "cheapest"],
                 id="unknown-expander"),
    pytest.param(yaml_snapshot(*STORAGE_BOUND), ["--now=yesterday"], ["--now", "'yesterday'"], id="bad-now"),
])
def test_bad_input_is_one_line_and_exit_2(cli: Run, tmp_path: Path, text: str, flags: list[str],
                                          fragments: list[str]) -> None:
    name = "snapshot.json" if text.startswith("{") else "snapshot.yaml"
    code, out, err = cli(["plan", write(tmp_path, text, name), NOW_FLAG, *flags])
    assert code == 2
    assert out == ""
    assert err.endswith("\n") and err.count("\n") == 1, err
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in err, (fragment, err)


def test_missing_file(cli: Run, tmp_path: Path) -> None:
    missing = str(tmp_path / "nowhere.yaml")
    code, out, err = cli(["plan", missing, NOW_FLAG])
    assert (code, out) == (2, "")
    assert err == f"autoscaler plan: {missing}: cannot read: No such file or directory\n"

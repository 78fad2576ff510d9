"""An error deep inside a pod's affinity names the pod and the whole field path (issue 16, item 10)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.app.badinput import NOW_FLAG, Run, assert_one_line_error, base, dump, find, write

P = "Pod/default/p1"
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"


def _nested_list(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = [value]
    return value


def _nested_map(depth: int) -> Any:
    value: Any = {"a": "b"}
    for _ in range(depth):
        value = {"x": value}
    return value


@pytest.mark.parametrize(("affinity", "field"), [
    pytest.param({"nodeAffinity": {REQUIRED: {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "a", "operator": "In", "values": _nested_list(60)}]}]}}},
        f"spec.affinity.nodeAffinity.{REQUIRED}.nodeSelectorTerms[0].matchExpressions[0].values"
        + "[0]" * 34 + ": nested deeper than 40 levels", id="node-affinity-values"),
    pytest.param({"podAffinity": {REQUIRED: [{"topologyKey": "k", "labelSelector": _nested_map(60)}]}},
                 f"spec.affinity.podAffinity.{REQUIRED}[0].labelSelector" + ".x" * 37 + ": nested deeper than 40",
                 id="pod-affinity-selector"),
    pytest.param({"podAntiAffinity": {REQUIRED: [{"topologyKey": "k", "labelSelector": {"matchExpressions": [
        {"key": "a", "operator": "In", "values": [{"deep": _nested_list(50)}]}]}}]}},
        f"spec.affinity.podAntiAffinity.{REQUIRED}[0].labelSelector.matchExpressions[0].values[0].deep",
        id="anti-affinity-values"),
])
def test_deep_affinity_errors_name_pod_and_path(cli: Run, tmp_path: Path, affinity: Any, field: str) -> None:
    objects = base()
    find(objects, "Pod")["spec"]["affinity"] = affinity
    snapshot = write(tmp_path, dump(objects))
    assert_one_line_error(cli(["plan", snapshot, NOW_FLAG]), f"autoscaler plan: {snapshot}: {P}: {field}")


def test_deep_template_affinity_names_the_controller_and_path(cli: Run, tmp_path: Path) -> None:
    objects = base()
    find(objects, "ReplicaSet")["spec"]["template"] = {"metadata": {"labels": {"app": "web"}}, "spec": {
        "containers": [{"name": "c"}],
        "affinity": {"nodeAffinity": {REQUIRED: {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": _nested_list(45)}]}]}}}}}
    snapshot = write(tmp_path, dump(objects))
    assert_one_line_error(cli(["plan", snapshot, NOW_FLAG]),
                          f"ReplicaSet/default/web: spec.template.spec.affinity.nodeAffinity.{REQUIRED}"
                          ".nodeSelectorTerms[0].matchFields[0].values[0]")

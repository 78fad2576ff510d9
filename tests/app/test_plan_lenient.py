"""Values the API server accepts never fail the input (issue 16, item 7).

A newer Kubernetes may hold values this version does not model: toleration operators
``Gt``/``Lt`` (1.35, feature gate ``TaintTolerationComparisonOperators``), taint effects,
access modes, policies, binding modes. Each is read as kube-scheduler reads what it does
not act on, with one warning naming the object and field; ``plan`` exits 0. Identical
duplicate objects (``kubectl get all,ds`` lists a DaemonSet twice) are read once.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.app.badinput import NOW_FLAG, Run, base, dump, find, set_path, write

P = "Pod/default/p1"


def _plan(cli: Run, tmp_path: Path, objects: list[Any], *flags: str) -> dict[str, Any]:
    code, out, err = cli(["plan", write(tmp_path, dump(objects)), NOW_FLAG, *flags])
    assert code == 0, err
    decision: dict[str, Any] = json.loads(out)
    return decision


@pytest.mark.parametrize(("kind", "path", "value", "ref", "field"), [
    pytest.param("Pod", "spec.tolerations[0].operator", "Gt", P, "spec.tolerations[0].operator",
                 id="toleration-gt-gate-off"),
    pytest.param("Pod", "spec.tolerations[0].operator", "Lt", P, "spec.tolerations[0].operator",
                 id="toleration-lt-gate-off"),
    pytest.param("Pod", "spec.tolerations[0].operator", "Like", P, "spec.tolerations[0].operator",
                 id="toleration-operator-newer"),
    pytest.param("Pod", "spec.tolerations[0].effect", "Sometimes", P, "spec.tolerations[0].effect",
                 id="toleration-effect-newer"),
    pytest.param("Node", "spec.taints[0].effect", "NoWay", "Node/w1", "spec.taints[0].effect",
                 id="taint-effect-newer"),
    pytest.param("Pod", "spec.containers[0].ports[0].protocol", "QUIC", P, "spec.containers[0].ports[0].protocol",
                 id="port-protocol-newer"),
    pytest.param("Pod", "spec.topologySpreadConstraints", [{"maxSkew": 1, "topologyKey": "zone",
                                                            "whenUnsatisfiable": "Eventually"}],
                 P, "spec.topologySpreadConstraints[0].whenUnsatisfiable", id="spread-when-newer"),
    pytest.param("Pod", "spec.topologySpreadConstraints", [{"maxSkew": 1, "topologyKey": "zone",
                                                            "nodeTaintsPolicy": "Sometimes"}],
                 P, "spec.topologySpreadConstraints[0].nodeTaintsPolicy", id="spread-policy-newer"),
    pytest.param("Pod", "spec.affinity", {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "a", "operator": "Near", "values": ["x"]}]}]}}}, P,
        "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
        ".matchExpressions[0].operator", id="node-selector-operator-newer"),
    pytest.param("PersistentVolumeClaim", "spec.accessModes", ["ReadWriteOnceNode"],
                 "PersistentVolumeClaim/default/data", "spec.accessModes[0]", id="claim-access-mode-newer"),
    pytest.param("PersistentVolume", "spec.accessModes", ["ReadWriteOnceNode"], "PersistentVolume/pv1",
                 "spec.accessModes[0]", id="volume-access-mode-newer"),
    pytest.param("PersistentVolume", "spec.persistentVolumeReclaimPolicy", "Keep", "PersistentVolume/pv1",
                 "spec.persistentVolumeReclaimPolicy", id="reclaim-policy-newer"),
    pytest.param("StorageClass", "volumeBindingMode", "Later", "StorageClass/rok", "volumeBindingMode",
                 id="binding-mode-newer"),
])
def test_newer_values_warn_once_and_do_not_fail(cli: Run, tmp_path: Path, *, kind: str, path: str, value: Any,
                                               ref: str, field: str) -> None:
    objects = base()
    set_path(find(objects, kind), path, value)
    warnings = _plan(cli, tmp_path, objects)["warnings"]
    mine = [w for w in warnings if w.startswith(f"{ref}: {field}: ")]
    assert len(mine) == 1, warnings


def _gated(operator: str, value: str, taint_value: str) -> list[Any]:
    """``w1`` tainted ``sla={taint_value}:NoSchedule``; pending ``p2`` tolerates it with ``operator``/``value``."""
    objects = base()
    find(objects, "Node")["spec"]["taints"] = [{"key": "sla", "value": taint_value, "effect": "NoSchedule"}]
    pod = find(objects, "Pod")
    pod["spec"]["tolerations"] = [{"key": "sla", "operator": "Exists", "effect": "NoSchedule"}]
    pending = json.loads(json.dumps(pod))
    pending["metadata"]["name"] = "p2"
    del pending["spec"]["nodeName"]
    del pending["spec"]["volumes"]
    pending["status"] = {"phase": "Pending", "conditions": [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}
    pending["spec"]["tolerations"] = [{"key": "sla", "operator": operator, "value": value, "effect": "NoSchedule"}]
    return [*objects, pending]


@pytest.mark.parametrize(("operator", "value", "taint_value", "flags", "fits"), [
    pytest.param("Gt", "750", "950", (), False, id="gt-gate-off-tolerates-nothing"),
    pytest.param("Gt", "750", "950", ("--feature-gates=TaintTolerationComparisonOperators=true",), True,
                 id="gt-gate-on-taint-greater"),
    pytest.param("Gt", "950", "950", ("--feature-gates=TaintTolerationComparisonOperators=true",), False,
                 id="gt-gate-on-equal"),
    pytest.param("Lt", "950", "800", ("--feature-gates=TaintTolerationComparisonOperators=true",), True,
                 id="lt-gate-on-taint-smaller"),
    pytest.param("Lt", "950", "high", ("--feature-gates=TaintTolerationComparisonOperators=true",), False,
                 id="lt-gate-on-taint-not-a-number"),
    pytest.param("Gt", "750", "950", ("--feature-gates=TaintTolerationComparisonOperators=false,Other=true",),
                 False, id="gt-gate-off-explicitly"),
])
def test_comparison_tolerations_follow_the_gate(cli: Run, tmp_path: Path, *, operator: str, value: str,
                                                taint_value: str, flags: tuple[str, ...], fits: bool) -> None:
    up = _plan(cli, tmp_path, _gated(operator, value, taint_value), *flags)["scaleUp"]
    assert up["fitsExistingNodes"] == (1 if fits else 0), up
    assert [entry["pod"] for entry in up["stillUnschedulable"]] == ([] if fits else ["default/p2"]), up


@pytest.mark.parametrize(("flag", "message"), [
    pytest.param("--feature-gates=TaintTolerationComparisonOperators", "is not Key=true or Key=false", id="no-value"),
    pytest.param("--feature-gates=TaintTolerationComparisonOperators=maybe", "is not a boolean", id="not-bool"),
    pytest.param("--feature-gates==true", "is not Key=true or Key=false", id="no-name"),
])
def test_bad_feature_gates_name_the_flag(cli: Run, tmp_path: Path, flag: str, message: str) -> None:
    code, out, err = cli(["plan", write(tmp_path, dump(base())), NOW_FLAG, flag])
    assert code == 2 and not out
    assert "--feature-gates: " in err and message in err


@pytest.mark.parametrize("kind", ["Pod", "Node", "PersistentVolumeClaim", "PersistentVolume", "StorageClass",
                                  "NodeGroup", "ReplicaSet", "PodDisruptionBudget"])
def test_identical_duplicates_are_read_once_with_one_warning(cli: Run, tmp_path: Path, kind: str) -> None:
    once = _plan(cli, tmp_path, base())
    objects = base()
    objects.append(find(base(), kind))
    twice = _plan(cli, tmp_path, objects)
    warnings = [w for w in twice["warnings"] if "listed twice" in w]
    assert len(warnings) == 1 and warnings[0].startswith(f"{kind}/"), twice["warnings"]
    assert {k: v for k, v in twice.items() if k != "warnings"} == {k: v for k, v in once.items() if k != "warnings"}


def test_differing_duplicates_name_both_places(cli: Run, tmp_path: Path) -> None:
    objects = base()
    copy = find(base(), "Pod")
    copy["metadata"]["labels"] = {"app": "other"}
    objects.append(copy)
    code, _, err = cli(["plan", write(tmp_path, dump(objects)), NOW_FLAG])
    assert code == 2
    assert "appears twice (in " in err and " and in " in err and "the copies differ" in err


def test_unmodelled_gates_are_named_once_on_stderr(cli: Run, tmp_path: Path) -> None:
    code, out, err = cli(["plan", write(tmp_path, dump(base())), NOW_FLAG, "--feature-gates=Foo=true,Bar=false"])
    assert code == 0 and json.loads(out)
    assert err == "autoscaler plan: --feature-gates: not modelled, ignored: Foo, Bar\n"

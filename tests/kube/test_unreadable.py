"""What a refused object still says about where its data lives (``kube/unreadable.py``), read leniently."""

from __future__ import annotations

from typing import Any

import pytest

from kube.model import Unreadable
from kube.unreadable import unreadable_of
from tests.factories import pod_json, pv_json, pvc_json

Json = dict[str, Any]


def _pv(affinity: object = None, *, spec: object = None) -> Json:
    obj = pv_json("pv-1", "10Gi", "rok", claim=("default", "c"))
    if spec is not None:
        obj["spec"] = spec
    elif affinity is not None:
        obj["spec"]["nodeAffinity"] = affinity
    return obj


@pytest.mark.parametrize(("obj", "values"), [
    pytest.param(pv_json("pv-1", "10Gi", "rok", hosts=["n1"]), frozenset({"n1"}), id="hostname-affinity"),
    pytest.param(_pv(), frozenset(), id="no-affinity-pins-nothing"),
    pytest.param(_pv({"required": {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "topology.topolvm.io/node", "operator": "In", "values": ["n2", 7]}]}]}}),
        frozenset({"n2"}), id="other-key-non-strings-skipped"),
    pytest.param(_pv({"required": {"nodeSelectorTerms": [{"matchFields": [
        {"key": "metadata.name", "operator": "In", "values": ["n3"]}]}]}}), frozenset({"n3"}), id="match-fields"),
    pytest.param(_pv({"required": {"nodeSelectorTerms": "n1"}}), None, id="terms-not-a-list"),
    pytest.param(_pv("n1"), None, id="affinity-not-a-map"),
    pytest.param(_pv({"required": {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "zone", "operator": "Exists"}]}]}}), None, id="no-value-named"),
    pytest.param(_pv(spec="broken"), None, id="spec-not-a-map"),
])
def test_a_refused_pv_names_what_its_affinity_names(obj: Json, values: frozenset[str] | None) -> None:
    assert unreadable_of("PersistentVolume", obj, "bad").affinity_values == values


@pytest.mark.parametrize(("kind", "obj", "expected"), [
    pytest.param("Pod", pod_json("p", node="n1"), Unreadable("Pod", "Pod/default/p", "m", node_name="n1"),
                 id="pod-on-a-node"),
    pytest.param("PersistentVolumeClaim", pvc_json("c", namespace="db"),
                 Unreadable("PersistentVolumeClaim", "PersistentVolumeClaim/db/c", "m", claim=("db", "c")),
                 id="claim-key"),
    pytest.param("PersistentVolume", {"metadata": "x"},
                 Unreadable("PersistentVolume", "PersistentVolume/?", "m", affinity_values=None), id="no-metadata"),
])
def test_refused_objects_are_named(kind: str, obj: Json, expected: Unreadable) -> None:
    assert unreadable_of(kind, obj, "m") == expected


def test_a_hostile_affinity_is_walked_to_a_bounded_depth() -> None:
    deep: Json = {"values": ["n9"]}
    for _ in range(10_000):
        deep = {"x": deep}
    assert unreadable_of("PersistentVolume", _pv(deep), "m").affinity_values is None

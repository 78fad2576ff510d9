"""Issue 8, items 16, 18 and 19: bad snapshots are rejected in one line naming file, object and field.

Each case breaks one field of a valid snapshot of every kind (``badinput.base``);
the line must be ``autoscaler plan: FILE: Kind/ns/name: field.path: what is wrong``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.app.badinput import NOW_FLAG, Run, assert_one_line_error, base, broken, dump, find, write

P = "Pod/default/p1"


@pytest.mark.parametrize(("kind", "path", "value", "ref", "field"), [
    # item 17 and 18: wrong types, negative and out-of-range numbers
    pytest.param("Node", "status.capacity.cpu", "-2", "Node/w1", "status.capacity.cpu", id="negative-cpu"),
    pytest.param("Node", "status.capacity.memory", 2**64, "Node/w1", "status.capacity.memory", id="beyond-int64"),
    pytest.param("Node", "status.capacity.memory", "1e9999999999", "Node/w1", "status.capacity.memory",
                 id="huge-exponent"),
    pytest.param("Node", "status.capacity.cpu", float("inf"), "Node/w1", "status.capacity.cpu", id="inf-cpu"),
    pytest.param("Node", "status.capacity.cpu", float("nan"), "Node/w1", "status.capacity.cpu", id="nan-cpu"),
    pytest.param("Node", "status.capacity.cpu", "\u0968", "Node/w1", "status.capacity.cpu", id="non-ascii-digit"),
    pytest.param("Node", "status.capacity.pods", True, "Node/w1", "status.capacity.pods", id="boolean-quantity"),
    pytest.param("Node", "status.capacity", [1], "Node/w1", "status.capacity", id="capacity-list"),
    pytest.param("Node", "spec.unschedulable", "false", "Node/w1", "spec.unschedulable", id="bool-as-string"),
    pytest.param("Node", "metadata.labels", 5, "Node/w1", "metadata.labels", id="labels-number"),
    pytest.param("Node", "metadata.labels.ng", ["general"], "Node/w1", "metadata.labels.ng", id="label-list"),
    pytest.param("Node", "metadata.annotations", ["a"], "Node/w1", "metadata.annotations", id="annotations-list"),
    pytest.param("Node", "spec.taints[0].effect", "", "Node/w1", "spec.taints[0].effect",
                 id="empty-taint-effect"),
    pytest.param("Node", "spec.taints", {"key": "k"}, "Node/w1", "spec.taints", id="taints-map"),
    pytest.param("Node", "metadata.creationTimestamp", "yesterday", "Node/w1", "metadata.creationTimestamp",
                 id="bad-time"),
    pytest.param("Node", "metadata.name", None, "Node/?", "metadata.name", id="node-without-name"),
    pytest.param("Node", "metadata.name", 7, "Node/?", "metadata.name", id="node-name-number"),
    pytest.param("Node", "status.conditions", "Ready", "Node/w1", "status.conditions", id="conditions-string"),
    pytest.param("Node", "kind", ["Node"], "?/w1", "kind", id="kind-list"),
    pytest.param("NodeGroup", "spec.pricePerHour", float("nan"), "NodeGroup/general", "spec.pricePerHour",
                 id="price-nan"),
    pytest.param("NodeGroup", "spec.pricePerHour", "0.5", "NodeGroup/general", "spec.pricePerHour",
                 id="price-string"),
    pytest.param("NodeGroup", "spec.maxSize", 2.0, "NodeGroup/general", "spec.maxSize", id="size-float"),
    pytest.param("NodeGroup", "spec.minSize", -1, "NodeGroup/general", "spec.minSize", id="size-negative"),
    pytest.param("NodeGroup", "spec.nodes", "w1", "NodeGroup/general", "spec.nodes", id="nodes-string"),
    pytest.param("NodeGroup", "spec.template.status.capacity.cpu", "-1", "NodeGroup/general",
                 "spec.template.status.capacity.cpu", id="template-negative-cpu"),
    pytest.param("Pod", "spec.containers[0].resources.requests.cpu", "-100m", P,
                 "spec.containers[0].resources.requests.cpu", id="negative-request"),
    pytest.param("Pod", "spec.containers[0].resources.requests.memory", [1], P,
                 "spec.containers[0].resources.requests.memory", id="request-list"),
    pytest.param("Pod", "spec.containers[0].resources.limits", {"cpu": "x"}, P,
                 "spec.containers[0].resources.limits.cpu", id="bad-limit"),
    pytest.param("Pod", "spec.containers[0].ports[0].containerPort", 70000, P,
                 "spec.containers[0].ports[0].containerPort", id="port-out-of-range"),
    pytest.param("Pod", "spec.containers[0].ports[0].hostPort", -1, P,
                 "spec.containers[0].ports[0].hostPort", id="host-port-negative"),
    pytest.param("Pod", "spec.containers[0].ports[0].hostPort", "80", P,
                 "spec.containers[0].ports[0].hostPort", id="host-port-string"),
    pytest.param("Pod", "spec.containers", {"name": "c"}, P, "spec.containers", id="containers-map"),
    pytest.param("Pod", "spec.containers[0]", "c", P, "spec.containers[0]", id="container-string"),
    pytest.param("Pod", "spec.nodeSelector", {"zone": ["a"]}, P, "spec.nodeSelector.zone",
                 id="node-selector-list-value"),
    pytest.param("Pod", "spec.priority", "high", P, "spec.priority", id="priority-string"),
    pytest.param("Pod", "spec.priority", 2**40, P, "spec.priority", id="priority-beyond-int32"),
    pytest.param("Pod", "spec.terminationGracePeriodSeconds", -5, P, "spec.terminationGracePeriodSeconds",
                 id="negative-grace"),
    pytest.param("Pod", "metadata.ownerReferences[0].controller", "true", P,
                 "metadata.ownerReferences[0].controller", id="controller-string"),
    pytest.param("Pod", "metadata.ownerReferences", {"kind": "ReplicaSet"}, P, "metadata.ownerReferences",
                 id="owner-references-map"),
    pytest.param("Pod", "spec.volumes[0].persistentVolumeClaim", "data", P, "spec.volumes[0].persistentVolumeClaim",
                 id="claim-string"),
    pytest.param("Pod", "spec.volumes[0].persistentVolumeClaim.claimName", None, P,
                 "spec.volumes[0].persistentVolumeClaim.claimName", id="claim-without-name"),
    pytest.param("Pod", "spec.affinity", {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "a", "operator": 7, "values": ["x"]}]}]}}}, P,
        "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
        ".matchExpressions[0].operator", id="selector-operator-number"),
    pytest.param("Pod", "spec.topologySpreadConstraints", [{"maxSkew": 0, "topologyKey": "z"}], P,
                 "spec.topologySpreadConstraints[0].maxSkew", id="spread-max-skew-zero"),
    pytest.param("Pod", "metadata.creationTimestamp", 17, P, "metadata.creationTimestamp", id="time-number"),
    pytest.param("Pod", "metadata.name", "", "Pod/default/?", "metadata.name", id="pod-empty-name"),
    pytest.param("Pod", "metadata.namespace", ["default"], "Pod/p1", "metadata.namespace", id="namespace-list"),
    pytest.param("ReplicaSet", "spec.replicas", "3", "ReplicaSet/default/web", "spec.replicas",
                 id="replicas-string"),
    pytest.param("PersistentVolumeClaim", "spec.resources.requests.storage", "-10Gi",
                 "PersistentVolumeClaim/default/data", "spec.resources.requests.storage", id="negative-claim"),
    pytest.param("PersistentVolumeClaim", "spec.accessModes", "ReadWriteOnce", "PersistentVolumeClaim/default/data",
                 "spec.accessModes", id="access-modes-string"),
    pytest.param("PersistentVolume", "spec.capacity.storage", "lots", "PersistentVolume/pv1",
                 "spec.capacity.storage", id="pv-capacity-word"),
    pytest.param("PersistentVolume", "spec.claimRef", "data", "PersistentVolume/pv1", "spec.claimRef",
                 id="claim-ref-string"),
    pytest.param("StorageClass", "allowedTopologies", [{"matchLabelExpressions": [{"key": "z", "values": "a"}]}],
                 "StorageClass/rok", "allowedTopologies[0].matchLabelExpressions[0].values", id="topology-values"),
    pytest.param("PodDisruptionBudget", "status.disruptionsAllowed", -1, "PodDisruptionBudget/default/web",
                 "status.disruptionsAllowed", id="negative-disruptions"),
    pytest.param("PodDisruptionBudget", "spec.selector", "app=web", "PodDisruptionBudget/default/web",
                 "spec.selector", id="selector-string"),
    pytest.param("CSIDriver", "spec.storageCapacity", "false", "CSIDriver/rok", "spec.storageCapacity",
                 id="csi-bool-string"),
    pytest.param("CSINode", "spec.drivers", [{"name": 5}], "CSINode/w1", "spec.drivers[0].name",
                 id="csi-driver-name-number"),
    pytest.param("VolumeAttachment", "spec.nodeName", "", "VolumeAttachment/csi-1", "spec.nodeName",
                 id="attachment-without-node"),
    pytest.param("VolumeAttachment", "status.attached", "true", "VolumeAttachment/csi-1", "status.attached",
                 id="attachment-attached-string"),
    pytest.param("VolumeAttachment", "spec.source.persistentVolumeName", 7, "VolumeAttachment/csi-1",
                 "spec.source.persistentVolumeName", id="attachment-volume-number"),
    pytest.param("Namespace", "metadata.labels", {"team": 5}, "Namespace/default", "metadata.labels.team",
                 id="namespace-label-number"),
    pytest.param("PersistentVolumeClaim", "metadata.labels", 5, "PersistentVolumeClaim/default/data",
                 "metadata.labels", id="claim-labels-number"),
    pytest.param("PersistentVolumeClaim", "spec.resources.limits", {"storage": "-1Gi"},
                 "PersistentVolumeClaim/default/data", "spec.resources.limits.storage", id="claim-negative-limit"),
    pytest.param("PersistentVolume", "apiVersion", ["v1"], "PersistentVolume/pv1", "apiVersion",
                 id="api-version-list"),
    pytest.param("Pod", "spec.volumes[0]", {"name": "tmp", "emptyDir": {"sizeLimit": "-1Gi"}}, P,
                 "spec.volumes[0].emptyDir.sizeLimit", id="negative-size-limit"),
    pytest.param("ReplicaSet", "spec.selector", {"matchLabels": {"app": ["web"]}}, "ReplicaSet/default/web",
                 "spec.selector.matchLabels.app", id="controller-selector-list-value"),
    pytest.param("StorageClass", "metadata.creationTimestamp", "soon", "StorageClass/rok",
                 "metadata.creationTimestamp", id="class-bad-time"),
    pytest.param("StorageClass", "parameters", ["topolvm.io/device-class=ssd"], "StorageClass/rok", "parameters",
                 id="class-parameters-list"),
    pytest.param("StorageClass", "parameters", {"topolvm.io/device-class": 5}, "StorageClass/rok",
                 "parameters.topolvm.io/device-class", id="class-parameter-number"),
    pytest.param("PersistentVolumeClaim", "metadata.annotations", {"volume.kubernetes.io/selected-node": 5},
                 "PersistentVolumeClaim/default/data", "metadata.annotations.volume.kubernetes.io/selected-node",
                 id="claim-selected-node-number"),
])
def test_bad_field(cli: Run, tmp_path: Path, *, kind: str, path: str, value: Any, ref: str, field: str) -> None:
    snapshot = write(tmp_path, broken(kind, path, value))
    assert_one_line_error(cli(["plan", snapshot, NOW_FLAG]), f"autoscaler plan: {snapshot}: {ref}: {field}: ")


def _twice(kind: str) -> list[dict[str, Any]]:
    """The base snapshot plus a second copy of its ``kind`` object that differs (one more label)."""
    objects = base()
    copy = find(base(), kind)
    copy["metadata"]["labels"] = {**(copy["metadata"].get("labels") or {}), "copy": "second"}
    objects.append(copy)
    return objects


@pytest.mark.parametrize(("objects", "ref", "field"), [
    pytest.param(_twice("Pod"), P, "metadata.name", id="pod-twice"),
    pytest.param(_twice("PersistentVolumeClaim"), "PersistentVolumeClaim/default/data", "metadata.name",
                 id="claim-twice"),
    pytest.param(_twice("PersistentVolume"), "PersistentVolume/pv1", "metadata.name", id="volume-twice"),
    pytest.param(_twice("StorageClass"), "StorageClass/rok", "metadata.name", id="class-twice"),
    pytest.param(_twice("Node"), "Node/w1", "metadata.name", id="node-twice"),
    pytest.param(_twice("NodeGroup"), "NodeGroup/general", "metadata.name", id="group-twice"),
    pytest.param(_twice("ReplicaSet"), "ReplicaSet/default/web", "metadata.name", id="controller-twice"),
    pytest.param(_twice("PodDisruptionBudget"), "PodDisruptionBudget/default/web", "metadata.name",
                 id="budget-twice"),
    pytest.param([*base(), {"kind": "NodeGroup", "metadata": {"name": "other"},
                            "spec": {"minSize": 0, "maxSize": 2, "nodes": ["w1"]}}],
                 "NodeGroup/other", "spec", id="node-in-two-groups"),
])
def test_duplicates_are_rejected(cli: Run, tmp_path: Path, objects: list[Any], ref: str, field: str) -> None:
    snapshot = write(tmp_path, dump(objects))
    assert_one_line_error(cli(["plan", snapshot, NOW_FLAG]), snapshot, f": {ref}: {field}: ")


def test_control_characters_are_escaped(cli: Run, tmp_path: Path) -> None:
    snapshot = write(tmp_path, broken("Node", "status.capacity.cpu", "1\n\x1b[31mred"))
    err = assert_one_line_error(cli(["plan", snapshot, NOW_FLAG]), "Node/w1: status.capacity.cpu: ")
    assert "\x1b" not in err and "\\n" in err


@pytest.mark.parametrize(("annotation", "meaning"), [
    pytest.param("rok.arrikto.com/capacity", "treated as absent", id="rok"),
    pytest.param("capacity.topolvm.io/ssd", "treated as no capacity", id="topolvm-device-class"),
])
def test_non_integer_storage_annotation_is_zero_capacity_not_an_error(cli: Run, tmp_path: Path, annotation: str,
                                                                      meaning: str) -> None:
    objects = base()
    find(objects, "Node")["metadata"]["annotations"][annotation] = "12GiB"
    code, out, err = cli(["plan", write(tmp_path, dump(objects)), NOW_FLAG])
    assert code == 0, err
    assert f"{annotation} '12GiB' is not an integer number of bytes; {meaning}" in out


@pytest.mark.parametrize("list_kind", ["NodeList", "PodList", "List"])
def test_lists_as_the_api_and_kubectl_return_them(cli: Run, tmp_path: Path, list_kind: str) -> None:
    objects = base()
    expected = json.loads(cli(["plan", write(tmp_path, dump(objects), "a.yaml"), NOW_FLAG])[1])
    kind = list_kind[:-4]
    members = [o for o in objects if not kind or o["kind"] == kind]
    rest = [o for o in objects if o not in members]
    if kind:
        for member in members:
            del member["kind"]
    listed = {"apiVersion": "v1", "kind": list_kind, "items": members}
    code, out, err = cli(["plan", write(tmp_path, dump([*rest, listed]), "b.yaml"), NOW_FLAG])
    assert code == 0, err
    assert json.loads(out) == expected


def test_items_of_an_untyped_list_need_a_kind(cli: Run, tmp_path: Path) -> None:
    node = find(base(), "Node")
    del node["kind"]
    snapshot = write(tmp_path, dump([{"kind": "List", "items": [node]}]))
    assert_one_line_error(cli(["plan", snapshot, NOW_FLAG]), snapshot, "?/w1: kind: required")


def test_unquoted_yaml_timestamps_are_read(cli: Run, tmp_path: Path) -> None:
    quoted = dump(base())
    unquoted = quoted.replace(f"'{'2026-05-01T00:00:00Z'}'", "2026-05-01T00:00:00Z")
    assert unquoted != quoted
    first = cli(["plan", write(tmp_path, quoted, "a.yaml"), NOW_FLAG])
    second = cli(["plan", write(tmp_path, unquoted, "b.yaml"), NOW_FLAG])
    assert first[0] == second[0] == 0 and first[1] == second[1]


@pytest.mark.parametrize(("text", "parts"), [
    pytest.param("- 5\n", ("document 1[0]", "expected a Kubernetes object"), id="array-of-numbers"),
    pytest.param("just words\n", ("document 1", "expected a Kubernetes object"), id="scalar-document"),
    pytest.param("kind: NodeList\nitems: 5\n", ("NodeList: items: expected a list",), id="items-not-a-list"),
    pytest.param("metadata: {name: a}\n", ("?/a: kind: required",), id="object-without-kind"),
    pytest.param("kind: Pod\nmetadata: [a]\n", ("Pod/?: metadata: expected a map",), id="metadata-list"),
    pytest.param("kind: Pod\nmetadata: {name: a}\nspec: {containers: [{resources: {requests: {cpu: 1, memory: "
                 "1}}}]}\n---\nkind: Pod\nmetadata: {name: b}\nspec: {containers: [{resources: {requests: "
                 "{cpu: true, memory: 1}}}]}\n", ("Pod/b: spec.containers[0].resources.requests.cpu",),
                 id="memo-does-not-confuse-true-and-1"),
    pytest.param("kind: Node\nmetadata:\n  name: a\n  name: b\n", ("invalid YAML at line 4", "duplicate key 'name'"),
                 id="duplicate-yaml-key"),
    pytest.param("kind: Node\nmetadata: {name: w1}\nstatus: {capacity: {cpu: '1'}}\n---\nkind: Node\nmetadata: "
                 "{name: w2}\nstatus: {capacity: {cpu: '-1'}}\n", ("Node/w2: status.capacity.cpu: ",),
                 id="second-document-names-its-object"),
    pytest.param("kind: StatefulSet\nmetadata: {name: db}\nspec:\n  volumeClaimTemplates:\n  - metadata: {name: data}"
                 "\n    spec: {resources: {requests: {storage: -1Gi}}}\n",
                 ("StatefulSet/db: spec.volumeClaimTemplates[0].spec.resources.requests.storage: ",),
                 id="claim-template-negative"),
    pytest.param("kind: Deployment\nmetadata: {name: web}\nspec: {template: {spec: {containers: [{name: c, "
                 "resources: {requests: {cpu: '-1'}}}]}}}\n",
                 ("Deployment/web: spec.template.spec.containers[0].resources.requests.cpu: ",),
                 id="deployment-template-negative"),
    pytest.param("kind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: 5}]}\n",
                 ("Pod/p: spec.containers[0].image: expected a string",), id="image-number"),
    pytest.param("kind: PodDisruptionBudget\nmetadata: {name: b}\nspec: {minAvailable: lots}\n",
                 ("PodDisruptionBudget/b: spec.minAvailable: ",), id="budget-min-available-word"),
])
def test_bad_documents(cli: Run, tmp_path: Path, text: str, parts: tuple[str, ...]) -> None:
    snapshot = write(tmp_path, text)
    assert_one_line_error(cli(["plan", snapshot, NOW_FLAG]), snapshot, *parts)

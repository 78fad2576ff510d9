"""The fake API server against the official client's generated API: it must look like a real one."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import urllib3
from kubernetes import client as k8s  # type: ignore[import-untyped]
from kubernetes import config as k8s_config
from kubernetes import watch as k8s_watch

from tests.factories import node_json, pod_json
from tests.fakeapi import FakeAPIServer


@pytest.fixture
def apis(api: FakeAPIServer, tmp_path: Path) -> Iterator[k8s.ApiClient]:
    configuration = k8s.Configuration()
    k8s_config.load_kube_config(str(api.write_kubeconfig(tmp_path / "kc")), client_configuration=configuration,
                                persist_config=False)
    configuration.retries = False
    with k8s.ApiClient(configuration) as api_client:
        yield api_client


def _status(exc: pytest.ExceptionInfo[Any]) -> int:
    return int(exc.value.status)


def test_list_carries_a_resource_version_and_watch_streams_events(api: FakeAPIServer, apis: k8s.ApiClient) -> None:
    core = k8s.CoreV1Api(apis)
    api.state.put(node_json("n0"))
    listed = core.list_node()
    assert [n.metadata.name for n in listed.items] == ["n0"]
    rv = listed.metadata.resource_version
    assert rv
    api.state.put(node_json("n1"))
    api.state.remove("Node", "n0")
    events = list(k8s_watch.Watch().stream(core.list_node, resource_version=rv, allow_watch_bookmarks=True,
                                           timeout_seconds=1))
    seen = [(e["type"], e["object"].metadata.name) for e in events if e["type"] != "BOOKMARK"]
    assert seen == [("ADDED", "n1"), ("DELETED", "n0")]
    assert any(e["type"] == "BOOKMARK" for e in events), "bookmarks every bookmark_seconds"


def test_watch_from_a_compacted_version_is_410(api: FakeAPIServer, apis: k8s.ApiClient) -> None:
    core = k8s.CoreV1Api(apis)
    api.state.put(node_json("n0"))
    rv = core.list_node().metadata.resource_version
    api.state.put(node_json("n1"))
    api.state.compact()
    with pytest.raises(k8s.ApiException) as err:
        list(k8s_watch.Watch().stream(core.list_node, resource_version=rv, timeout_seconds=1))
    assert _status(err) == 410


@pytest.mark.parametrize("body", [
    pytest.param({"spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]}}, id="strategic-merge"),
    pytest.param([{"op": "add", "path": "/spec/taints", "value": [{"key": "k", "effect": "NoSchedule"}]}],
                 id="json-patch"),
])
def test_patch_node(api: FakeAPIServer, apis: k8s.ApiClient, body: object) -> None:
    api.state.put(node_json("n0"))
    k8s.CoreV1Api(apis).patch_node("n0", body)
    assert api.state.get("Node", "n0")["spec"]["taints"] == [{"key": "k", "effect": "NoSchedule"}]


def test_put_with_a_stale_resource_version_conflicts(api: FakeAPIServer, apis: k8s.ApiClient) -> None:
    leases = k8s.CoordinationV1Api(apis)
    body = k8s.V1Lease(metadata=k8s.V1ObjectMeta(name="l"), spec=k8s.V1LeaseSpec(holder_identity="a"))
    created = leases.create_namespaced_lease("kube-system", body)
    created.spec.holder_identity = "b"
    leases.replace_namespaced_lease("l", "kube-system", created)
    created.spec.holder_identity = "c"  # still the first resourceVersion
    with pytest.raises(k8s.ApiException) as err:
        leases.replace_namespaced_lease("l", "kube-system", created)
    assert _status(err) == 409
    assert api.state.get("Lease", "l", "kube-system")["spec"]["holderIdentity"] == "b"


@pytest.mark.parametrize(("allowed", "present", "status"), [
    pytest.param(1, True, 201, id="allowed"),
    pytest.param(0, True, 429, id="pdb-refuses"),
    pytest.param(1, False, 404, id="gone"),
])
def test_eviction_subresource(api: FakeAPIServer, apis: k8s.ApiClient, allowed: int, present: bool,
                              status: int) -> None:
    if present:
        api.state.put(pod_json("p", node="n0", pending=False, labels={"app": "a"}))
    api.state.put({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "b"},
                   "spec": {"selector": {"matchLabels": {"app": "a"}}}, "status": {"disruptionsAllowed": allowed}})
    eviction = k8s.V1Eviction(metadata=k8s.V1ObjectMeta(name="p", namespace="default"))
    core = k8s.CoreV1Api(apis)
    if status == 201:
        core.create_namespaced_pod_eviction("p", "default", eviction)
        assert api.state.names("Pod") == []
        return
    with pytest.raises(k8s.ApiException) as err:
        core.create_namespaced_pod_eviction("p", "default", eviction)
    assert _status(err) == status


def test_events_in_both_groups(api: FakeAPIServer, apis: k8s.ApiClient) -> None:
    ref = k8s.V1ObjectReference(kind="Node", name="n0")
    k8s.CoreV1Api(apis).create_namespaced_event("default", k8s.CoreV1Event(
        metadata=k8s.V1ObjectMeta(generate_name="n0."), involved_object=ref, reason="ScaleDown"))
    k8s.EventsV1Api(apis).create_namespaced_event("default", k8s.EventsV1Event(
        metadata=k8s.V1ObjectMeta(name="e2"), event_time="2026-01-01T00:00:00.000000Z", reason="ScaleDown",
        action="Delete", reporting_controller="ca", reporting_instance="ca-1", type="Normal"))
    assert len(api.requests("POST", "/events$")) == 2


def test_faults_and_read_only(api: FakeAPIServer, apis: k8s.ApiClient) -> None:
    core = k8s.CoreV1Api(apis)
    api.fail("/nodes$", 500)
    with pytest.raises(k8s.ApiException) as err:
        core.list_node()
    assert _status(err) == 500
    api.fail("/nodes$", "timeout", delay=2.0)
    with pytest.raises(urllib3.exceptions.ReadTimeoutError):
        core.list_node(_request_timeout=(1, 0.3))
    assert core.list_node().items == []
    api.read_only = True
    with pytest.raises(k8s.ApiException) as err:
        core.create_node(k8s.V1Node(metadata=k8s.V1ObjectMeta(name="n")))
    assert _status(err) == 403
    assert [(r.method, r.path) for r in api.mutations] == [("POST", "/api/v1/nodes")]

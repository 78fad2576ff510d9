"""The pod webhook over real HTTP: AdmissionReview v1 in and out, JSONPatch, opt-in and opt-out."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from app.cli import build_parser
from app.scheduling_cmd import webhook_config
from scheduling.view import StaticView
from scheduling.webhook import WebhookConfig, mutate
from tests.factories import cluster, pod_json, pv, pvc, storage_class
from tests.scheduling.wire import Client, serving

Json = dict[str, Any]
SCHED = "storage-aware-scheduler"
LABEL = "autoscaler.storage.dev/scheduler-mutated"
#: The thesis webhook's opt-out annotation, the default: honoured when present, whatever its value.
OPT_OUT = "arrikto.com/skip-rok-scheduler-webhook"


def review(pod: Json, *, namespace: str = "default", operation: str = "CREATE", uid: str = "705ab4f5-6393") -> Json:
    """What the API server sends for a pod (admission.k8s.io/v1 AdmissionReview)."""
    pod = json.loads(json.dumps(pod))
    pod["spec"].setdefault("schedulerName", "default-scheduler")  # defaulted before admission
    return {
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {
            "uid": uid, "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "requestKind": {"group": "", "version": "v1", "kind": "Pod"},
            "requestResource": {"group": "", "version": "v1", "resource": "pods"},
            "name": pod["metadata"].get("name", ""), "namespace": namespace, "operation": operation,
            "userInfo": {"username": "system:serviceaccount:kube-system:statefulset-controller"},
            "object": pod, "oldObject": None, "dryRun": False,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"},
        },
    }


def patch_of(answer: Json) -> list[Json] | None:
    response = answer["response"]
    assert response["allowed"] is True
    if "patch" not in response:
        return None
    assert response["patchType"] == "JSONPatch"
    ops: list[Json] = json.loads(base64.b64decode(response["patch"]))
    return ops


def ask(config: WebhookConfig, body: object, view: StaticView | None = None) -> Json:
    with serving({"/mutate": lambda b: mutate(b, config, view)}) as client:
        answer: Json = client.post("/mutate", body)
    assert answer["apiVersion"] == "admission.k8s.io/v1" and answer["kind"] == "AdmissionReview"
    return answer


def with_annotations(pod: Json, annotations: dict[str, str]) -> Json:
    pod["metadata"]["annotations"] = annotations
    return pod


def no_labels(pod: Json) -> Json:
    del pod["metadata"]["labels"]
    return pod


def named_scheduler(pod: Json, name: str) -> Json:
    pod["spec"]["schedulerName"] = name
    return pod


ROUTED = [{"op": "replace", "path": "/spec/schedulerName", "value": SCHED},
          {"op": "add", "path": "/metadata/labels/autoscaler.storage.dev~1scheduler-mutated", "value": "true"}]

CASES = [
    pytest.param(WebhookConfig(), review(pod_json("p")), ROUTED, id="default-glob-routes-every-namespace"),
    pytest.param(WebhookConfig(namespaces=("data-*", "kafka")), review(pod_json("p"), namespace="data-eu"), ROUTED,
                 id="glob-opt-in-matches"),
    pytest.param(WebhookConfig(namespaces=("data-*", "kafka")), review(pod_json("p"), namespace="web"), None,
                 id="glob-opt-in-misses"),
    pytest.param(WebhookConfig(namespaces=("kafka",)), review(pod_json("p"), namespace="kafka-2"), None,
                 id="plain-name-is-exact"),
    pytest.param(WebhookConfig(), review(with_annotations(pod_json("p"), {OPT_OUT: "true"})), None, id="opt-out"),
    pytest.param(WebhookConfig(), review(with_annotations(pod_json("p"), {OPT_OUT: "false"})), None,
                 id="opt-out-present-false-still-opts-out"),
    pytest.param(WebhookConfig(), review(with_annotations(pod_json("p"), {OPT_OUT: ""})), None,
                 id="opt-out-present-empty-opts-out"),
    pytest.param(WebhookConfig(), review(with_annotations(pod_json("p"), {"other": "true"})), ROUTED,
                 id="other-annotation-routed"),
    pytest.param(WebhookConfig(opt_out_annotation="example.com/no"),
                 review(with_annotations(pod_json("p"), {"example.com/no": "no"})), None, id="opt-out-flag"),
    pytest.param(WebhookConfig(opt_out_annotation="example.com/no"),
                 review(with_annotations(pod_json("p"), {OPT_OUT: "true"})), ROUTED,
                 id="opt-out-flag-replaces-default"),
    pytest.param(WebhookConfig(), review(named_scheduler(pod_json("p"), "volcano")), None,
                 id="pod-naming-a-scheduler-is-left-alone"),
    pytest.param(WebhookConfig(), review(pod_json("p"), operation="UPDATE"), None, id="update-is-not-mutated"),
    pytest.param(WebhookConfig(), review(no_labels(pod_json("p"))),
                 [ROUTED[0], {"op": "add", "path": "/metadata/labels", "value": {LABEL: "true"}}],
                 id="pod-without-labels-gets-the-map"),
    pytest.param(WebhookConfig(scheduler_name="rok-scheduler"), review(pod_json("p")),
                 [{**ROUTED[0], "value": "rok-scheduler"}, ROUTED[1]], id="scheduler-name-flag"),
]


@pytest.mark.parametrize(("config", "body", "expected"), CASES)
def test_mutate(config: WebhookConfig, body: Json, expected: list[Json] | None) -> None:
    answer = ask(config, body)
    assert answer["response"]["uid"] == body["request"]["uid"]
    assert patch_of(answer) == expected


def _ephemeral(pod: Json, storage_class_name: str) -> Json:
    pod["spec"]["volumes"] = [{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {
        "storageClassName": storage_class_name, "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": "1Gi"}}}}}}]
    return pod


LOCAL_ONLY = WebhookConfig(only_local_storage=True)
STORAGE = cluster(storage_class("rok"), storage_class("net", "ebs.csi.aws.com"), pvc("local-claim", "1Gi", "rok"),
                  pvc("net-claim", "1Gi", "net"), pvc("bound-local", "1Gi", None, volume="pv-1"),
                  pv("pv-1", "1Gi", None, claim=("default", "bound-local")))


@pytest.mark.parametrize(("pod", "routed"), [
    pytest.param(pod_json("p", claims=["local-claim"]), True, id="local-claim-routed"),
    pytest.param(pod_json("p", claims=["net-claim"]), False, id="network-claim-left-alone"),
    pytest.param(pod_json("p"), False, id="no-claims-left-alone"),
    pytest.param(pod_json("p", claims=["net-claim", "local-claim"]), True, id="any-local-claim-routes"),
    pytest.param(pod_json("p", claims=["not-yet-created"]), True, id="unknown-claim-routed-to-be-safe"),
    pytest.param(pod_json("p", claims=["bound-local"]), True, id="bound-pv-of-the-local-driver"),
    pytest.param(_ephemeral(pod_json("p"), "rok"), True, id="ephemeral-local-volume"),
    pytest.param(_ephemeral(pod_json("p"), "net"), False, id="ephemeral-network-volume"),
])
def test_only_local_storage_pods(pod: Json, routed: bool) -> None:
    answer = ask(LOCAL_ONLY, review(pod), StaticView.of(STORAGE))
    assert (patch_of(answer) is not None) == routed


@pytest.mark.parametrize("body", [
    pytest.param(b"not json at all", id="not-json"),
    pytest.param(b"[]", id="not-an-object"),
    pytest.param(b'{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}', id="no-request"),
    pytest.param(b'{"request": {"uid": "u1", "operation": "CREATE", "object": "pod"}}', id="object-not-a-pod"),
    pytest.param(b'{"request": {"uid": "u1", "operation": "CREATE", "object": {"metadata": {}, "spec": []}}}',
                 id="spec-not-a-map"),
    pytest.param(b'{"request": {"uid": "u1", "namespace": "d", "object": {"metadata": {"annotations": 3}, '
                 b'"spec": {}}}}', id="annotations-not-a-map"),
])
def test_malformed_review_is_allowed_unchanged_and_logged(body: bytes, caplog: pytest.LogCaptureFixture) -> None:
    with serving({"/mutate": lambda b: mutate(b, WebhookConfig())}) as client:
        status, answer = client.post_raw("/mutate", body)
    assert status == 200
    assert answer["response"]["allowed"] is True
    assert "patch" not in answer["response"]
    assert any("malformed AdmissionReview" in r.getMessage() for r in caplog.records)


def test_keep_alive_serves_many_reviews_on_one_connection() -> None:
    with serving({"/mutate": lambda b: mutate(b, WebhookConfig())}) as client:
        assert isinstance(client, Client)
        uids = [client.post("/mutate", review(pod_json(f"p{i}"), uid=f"u{i}"))["response"]["uid"] for i in range(20)]
    assert uids == [f"u{i}" for i in range(20)]


@pytest.mark.parametrize(("flags", "expected"), [
    pytest.param([], WebhookConfig(local_provisioners=frozenset({"rok.arrikto.com"})), id="thesis-defaults"),
    pytest.param(["--annotation-optout=example.com/no", "--namespaces-optin=data-*, kafka",
                  "--scheduler-name=rok-scheduler"],
                 WebhookConfig(scheduler_name="rok-scheduler", namespaces=("data-*", "kafka"),
                               opt_out_annotation="example.com/no", local_provisioners=frozenset({"rok.arrikto.com"})),
                 id="thesis-flags"),
    pytest.param(["--opt-out-annotation=example.com/no", "--namespaces=kafka"],
                 WebhookConfig(namespaces=("kafka",), opt_out_annotation="example.com/no",
                               local_provisioners=frozenset({"rok.arrikto.com"})),
                 id="earlier-names-are-aliases"),
])
def test_webhook_flags(flags: list[str], expected: WebhookConfig) -> None:
    args = build_parser().parse_args(["pod-webhook", "--insecure-http", *flags])
    assert webhook_config(args) == expected


@pytest.mark.parametrize(("flags", "message"), [
    pytest.param(["--annotation-optout= "], "--annotation-optout", id="empty-annotation"),
    pytest.param(["--namespaces-optin= , "], "--namespaces-optin", id="no-globs"),
])
def test_bad_webhook_flags_name_the_flag(flags: list[str], message: str) -> None:
    args = build_parser().parse_args(["pod-webhook", "--insecure-http", *flags])
    with pytest.raises(Exception, match=message):
        webhook_config(args)

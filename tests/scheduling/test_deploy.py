"""``deploy/scheduling/``: every object validates offline, and the pieces fit each other.

Standard kinds are validated strictly against the Kubernetes 1.30 schemas
(``kubernetes_validate``; unknown fields fail). cert-manager objects and the
``KubeSchedulerConfiguration`` have no schema there, so their fields are checked here
against the fields their APIs define. The containers' arguments are parsed by our own
CLI parser, and the routes the scheduler and the API server call must be routes the
servers serve.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import kubernetes_validate  # type: ignore[import-untyped]
import pytest
import yaml

from app.cli import build_parser
from app.scheduling_cmd import MAX_REQUEST_BYTES
from kube.model import ClusterObjects
from kube.names import StorageNames
from scheduling.extender import Extender
from scheduling.live_view import scheduling_kinds
from scheduling.view import StaticView
from tests.deploy.policy import admits, selects

Json = dict[str, Any]

DEPLOY = Path(__file__).resolve().parents[2] / "deploy" / "scheduling"
KUBERNETES = "1.30"
NAMESPACE = "kube-system"
CERT_MANAGER = "cert-manager.io/v1"
CLUSTER_SCOPED = {"ClusterRole", "ClusterRoleBinding", "MutatingWebhookConfiguration"}
#: Fields of kube-scheduler's v1 ``Extender`` (k8s.io/kube-scheduler/config/v1/types.go).
EXTENDER_FIELDS = {"urlPrefix", "filterVerb", "preemptVerb", "prioritizeVerb", "weight", "bindVerb", "enableHTTPS",
                   "tlsConfig", "httpTimeout", "nodeCacheCapable", "managedResources", "ignorable"}
TLS_FIELDS = {"insecure", "serverName", "certFile", "keyFile", "caFile", "certData", "keyData", "caData"}
WRITE_VERBS = {"create", "update", "patch", "delete", "deletecollection", "*"}


def render() -> list[Json]:
    """The objects ``kubectl apply -k deploy/scheduling`` creates (namespace and images set)."""
    kustomization = yaml.safe_load((DEPLOY / "kustomization.yaml").read_text())
    image = kustomization["images"][0]
    objects = []
    for resource in kustomization["resources"]:
        for obj in yaml.safe_load_all((DEPLOY / resource).read_text()):
            if obj["kind"] not in CLUSTER_SCOPED:
                obj["metadata"]["namespace"] = kustomization["namespace"]
            for container in obj.get("spec", {}).get("template", {}).get("spec", {}).get("containers", []):
                if container["image"] == image["name"]:
                    container["image"] = f"{image['newName']}:{image['newTag']}"
            objects.append(obj)
    return objects


OBJECTS = render()


def one(kind: str, name: str) -> Json:
    found = [o for o in OBJECTS if o["kind"] == kind and o["metadata"]["name"] == name]
    assert len(found) == 1, f"{kind}/{name}: {len(found)} found"
    return found[0]


def container(deployment: str) -> Json:
    containers = one("Deployment", deployment)["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    result: Json = containers[0]
    return result


def scheduler_config() -> Json:
    config: Json = yaml.safe_load(one("ConfigMap", "storage-aware-scheduler-config")["data"]["config.yaml"])
    return config


@pytest.mark.parametrize("obj", [pytest.param(o, id=f"{o['kind']}/{o['metadata']['name']}") for o in OBJECTS
                                 if o["apiVersion"] != CERT_MANAGER])
def test_validates_strictly(obj: Json) -> None:
    kubernetes_validate.validate(obj, KUBERNETES, strict=True)


def test_cert_manager_objects_and_secrets_fit() -> None:
    certificates = {o["metadata"]["name"]: o for o in OBJECTS if o["kind"] == "Certificate"}
    issuers = {o["metadata"]["name"] for o in OBJECTS if o["kind"] == "Issuer"}
    for cert in certificates.values():
        assert set(cert["spec"]) <= {"secretName", "dnsNames", "duration", "renewBefore", "privateKey", "issuerRef",
                                     "isCA", "commonName", "usages"}
        assert cert["spec"]["issuerRef"]["name"] in issuers
    for service, certificate in (("storage-scheduler-extender", "storage-scheduler-extender"),
                                 ("storage-pod-webhook", "storage-pod-webhook")):
        assert f"{service}.{NAMESPACE}.svc" in certificates[certificate]["spec"]["dnsNames"]
        secret = certificates[certificate]["spec"]["secretName"]
        volumes = one("Deployment", service)["spec"]["template"]["spec"]["volumes"]
        assert {"name": "tls", "secret": {"secretName": secret}} in volumes
    webhook = one("MutatingWebhookConfiguration", "storage-pod-webhook")
    assert webhook["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] == f"{NAMESPACE}/storage-pod-webhook"


def test_scheduler_configuration_names_the_extender() -> None:
    config = scheduler_config()
    assert config["apiVersion"] == "kubescheduler.config.k8s.io/v1"
    assert config["kind"] == "KubeSchedulerConfiguration"
    assert [p["schedulerName"] for p in config["profiles"]] == ["storage-aware-scheduler"]
    (extender,) = config["extenders"]
    assert set(extender) <= EXTENDER_FIELDS
    assert set(extender["tlsConfig"]) <= TLS_FIELDS
    assert extender["nodeCacheCapable"] is True
    assert extender["ignorable"] is False
    assert extender["weight"] > 0
    assert extender["enableHTTPS"] is True
    served = Extender(StaticView.of(ClusterObjects()), StorageNames(), reservation_timeout=1,
                      clock=time.monotonic).routes()
    assert f"/{extender['filterVerb']}" in served and f"/{extender['prioritizeVerb']}" in served
    service = one("Service", "storage-scheduler-extender")
    assert extender["urlPrefix"] == f"https://{service['metadata']['name']}.{NAMESPACE}.svc:{service['spec']['ports'][0]['port']}"
    # kube-scheduler trusts the CA cert-manager put into the extender's Secret.
    scheduler = one("Deployment", "storage-aware-scheduler")["spec"]["template"]["spec"]
    mounts = {m["name"]: m["mountPath"] for m in scheduler["containers"][0]["volumeMounts"]}
    assert extender["tlsConfig"]["caFile"] == f"{mounts['extender-ca']}/ca.crt"
    volumes = {v["name"]: v for v in scheduler["volumes"]}
    assert volumes["extender-ca"]["secret"]["secretName"] == "storage-scheduler-extender-tls"
    assert f"--config={mounts['config']}/config.yaml" in scheduler["containers"][0]["command"]
    assert config["leaderElection"]["resourceName"] == "storage-aware-scheduler"


@pytest.mark.parametrize("deployment", ["storage-scheduler-extender", "storage-pod-webhook"])
def test_container_arguments_parse_with_our_cli(deployment: str) -> None:
    spec = container(deployment)
    assert spec["command"] == ["python", "-m", "autoscaler"]
    args = build_parser().parse_args(spec["args"])
    assert args.command == spec["args"][0]
    assert args.tls_cert_file and args.tls_private_key_file and not args.insecure_http
    port = next(p for p in spec["ports"] if p["name"] == "https")["containerPort"]
    assert args.port == port


def test_webhook_routes_pods_to_the_scheduler_and_never_blocks() -> None:
    config = one("MutatingWebhookConfiguration", "storage-pod-webhook")
    (hook,) = config["webhooks"]
    assert hook["failurePolicy"] == "Ignore"
    assert hook["admissionReviewVersions"] == ["v1"]
    assert hook["sideEffects"] == "None"
    assert hook["rules"] == [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                              "resources": ["pods"], "scope": "Namespaced"}]
    assert hook["clientConfig"]["service"]["path"] == "/mutate"
    service = one("Service", "storage-pod-webhook")
    assert hook["clientConfig"]["service"]["port"] == service["spec"]["ports"][0]["port"]
    selector = hook["namespaceSelector"]["matchExpressions"]
    excluded = next(e for e in selector if e["key"] == "kubernetes.io/metadata.name")
    assert NAMESPACE in excluded["values"]
    args = build_parser().parse_args(container("storage-pod-webhook")["args"])
    assert args.scheduler_name == scheduler_config()["profiles"][0]["schedulerName"]


@pytest.mark.parametrize("role", ["storage-scheduler-extender", "storage-pod-webhook",
                                  "storage-aware-scheduler-leader"])
def test_rbac_is_least_privilege(role: str) -> None:
    kind = "Role" if role.endswith("-leader") else "ClusterRole"
    rules = one(kind, role)["rules"]
    for rule in rules:
        assert "*" not in rule["resources"] and "*" not in rule["apiGroups"]
        if kind == "ClusterRole":
            assert not set(rule["verbs"]) & WRITE_VERBS, rule
            assert "get" not in rule["verbs"]  # caches list and watch; nothing reads one object
        else:
            assert set(rule["verbs"]) <= {"create", "get", "update"}


@pytest.mark.parametrize(("role", "webhook"), [pytest.param("storage-scheduler-extender", False, id="extender"),
                                              pytest.param("storage-pod-webhook", True, id="webhook")])
def test_role_covers_exactly_the_caches_it_starts(role: str, webhook: bool) -> None:
    granted = {r for rule in one("ClusterRole", role)["rules"] for r in rule["resources"]}
    assert {kind.name for kind in scheduling_kinds(webhook=webhook)} == granted


def _pod_labels(deployment: str) -> dict[str, str]:
    labels: dict[str, str] = one("Deployment", deployment)["spec"]["template"]["metadata"]["labels"]
    return labels


def test_the_extender_asks_kube_scheduler_for_its_client_certificate() -> None:
    """Mutual TLS end to end: the extender trusts the scheduling CA for clients, and the scheduler
    presents a client certificate that CA issued, through its extender tlsConfig."""
    args = build_parser().parse_args(container("storage-scheduler-extender")["args"])
    mounts = {m["name"]: m["mountPath"] for m in container("storage-scheduler-extender")["volumeMounts"]}
    assert args.client_ca_file == f"{mounts['tls']}/ca.crt"
    certificates = {o["metadata"]["name"]: o["spec"] for o in OBJECTS if o["kind"] == "Certificate"}
    client = certificates["storage-aware-scheduler-client"]
    assert "client auth" in client["usages"]
    assert client["issuerRef"] == certificates["storage-scheduler-extender"]["issuerRef"]
    tls = scheduler_config()["extenders"][0]["tlsConfig"]
    scheduler = one("Deployment", "storage-aware-scheduler")["spec"]["template"]["spec"]
    mounted = {m["name"]: m["mountPath"] for m in scheduler["containers"][0]["volumeMounts"]}
    assert (tls["certFile"], tls["keyFile"]) == (f"{mounted['client-tls']}/tls.crt", f"{mounted['client-tls']}/tls.key")
    volumes = {v["name"]: v for v in scheduler["volumes"]}
    assert volumes["client-tls"]["secret"]["secretName"] == client["secretName"]
    # The webhook's is documented, not on: managed API servers present no client certificate.
    hook = build_parser().parse_args(container("storage-pod-webhook")["args"])
    assert hook.client_ca_file is None
    assert "client auth" in certificates["storage-pod-webhook-apiserver-client"]["usages"]


@pytest.mark.parametrize("deployment", ["storage-scheduler-extender", "storage-pod-webhook"])
def test_request_limits_are_the_commands_defaults(deployment: str) -> None:
    args = build_parser().parse_args(container(deployment)["args"])
    assert args.max_request_bytes == MAX_REQUEST_BYTES[args.command]


def _policies_for(deployment: str) -> list[Json]:
    labels = _pod_labels(deployment)
    return [o for o in OBJECTS if o["kind"] == "NetworkPolicy" and selects(o["spec"]["podSelector"], labels)]


def _admitted(deployment: str, **peer: Any) -> bool:
    return any(admits(p, "https", **peer) for p in _policies_for(deployment))


def test_only_kube_scheduler_and_monitoring_reach_the_extender() -> None:
    assert _policies_for("storage-scheduler-extender")
    assert _admitted("storage-scheduler-extender", pod=_pod_labels("storage-aware-scheduler"))
    assert _admitted("storage-scheduler-extender", namespace={"kubernetes.io/metadata.name": "monitoring"})
    assert not _admitted("storage-scheduler-extender", pod=_pod_labels("storage-pod-webhook"))
    assert not _admitted("storage-scheduler-extender", pod={"app": "attacker"})
    assert not _admitted("storage-scheduler-extender", namespace={"kubernetes.io/metadata.name": "default"})
    ports = {p["name"] for p in container("storage-scheduler-extender")["ports"]}
    assert "https" in ports


def test_the_webhook_is_reached_by_the_api_server_on_its_port_only() -> None:
    policies = _policies_for("storage-pod-webhook")
    assert policies
    assert _admitted("storage-pod-webhook", ip="172.16.0.2")  # a control-plane address
    for policy in policies:
        assert policy["spec"]["policyTypes"] == ["Ingress"]
        for rule in policy["spec"]["ingress"]:
            assert [p["port"] for p in rule["ports"]] == ["https"]

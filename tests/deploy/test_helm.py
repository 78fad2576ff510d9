"""The Helm chart (``deploy/helm/storage-autoscaler``): lints, renders offline, validates, and ``run`` takes its args.

Rendering uses Helm's own engine through ``helm-python-sdk`` (no helm binary, no cluster).
The values are written as an operator writes them for the official cluster-autoscaler
chart; the rendered Deployment's args go through ``run``'s parser, so the chart cannot
pass a flag ``run`` rejects. Its RBAC must equal ``deploy/base``'s, which
``test_rbac.py`` holds to the adapter's calls.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import helm_python as helm
import kubernetes_validate  # type: ignore[import-untyped]
import pytest
import yaml

from app.cli import build_parser
from app.run.flags import settings_from_args
from autoscaler.config import options_from_args
from tests.deploy.kustomize import render as kustomize
from tests.deploy.rbac import grants

Json = dict[str, Any]

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "deploy" / "helm" / "storage-autoscaler"
KUBERNETES = "1.30"
#: Kinds of CRDs (Prometheus operator): no schema to validate against offline.
CUSTOM = frozenset({"ServiceMonitor", "PrometheusRule"})

AWS: Json = {
    "cloudProvider": "aws", "awsRegion": "eu-west-1", "autoDiscovery": {"clusterName": "prod"},
    "rbac": {"serviceAccount": {"name": "cluster-autoscaler", "annotations": {
        "eks.amazonaws.com/role-arn": "arn:aws:iam::111122223333:role/cluster-autoscaler"}}},
    "extraArgs": {"balance-similar-node-groups": True, "skip-nodes-with-system-pods": False,
                  "expander": "least-waste", "scale-down-unneeded-time": "5m"},
}
GCE: Json = {
    "cloudProvider": "gce", "gceProjectID": "my-project", "gceZones": ["europe-west4-a", "europe-west4-b"],
    "autoscalingGroupsnamePrefix": [{"name": "gke-prod-nvme", "minSize": 0, "maxSize": 10}],
    "rbac": {"serviceAccount": {"annotations": {
        "iam.gke.io/gcp-service-account": "autoscaler@my-project.iam.gserviceaccount.com"}}},
}
AZURE: Json = {
    "cloudProvider": "azure", "azureSubscriptionID": "00000000-0000-0000-0000-000000000000",
    "azureResourceGroup": "MC_rg_prod_westeurope", "azureUseWorkloadIdentityExtension": True,
    "autoDiscovery": {"clusterName": "prod"},
    "autoscalingGroups": [{"name": "aks-nvme-12345678-vmss", "minSize": 1, "maxSize": 20}],
    "rbac": {"serviceAccount": {"annotations": {"azure.workload.identity/client-id": "1111"}}},
}
MONITORING: Json = {"serviceMonitor": {"enabled": True}, "prometheusRule": {"enabled": True},
                    "dashboard": {"enabled": True}, "networkPolicy": {"enabled": True}}


def render(values: Json, namespace: str = "kube-system") -> list[Json]:
    chart = helm.Chart.load(str(CHART))
    manifests = chart.render(values, name="cluster-autoscaler", namespace=namespace, is_install=True)
    return [doc for path, text in sorted(manifests.items()) if path.endswith(".yaml")
            for doc in yaml.safe_load_all(text) if doc]


def _one(objects: list[Json], kind: str) -> Json:
    found = [o for o in objects if o["kind"] == kind]
    assert len(found) == 1, f"{len(found)} {kind} objects"
    return found[0]


def _args(objects: list[Json]) -> list[str]:
    args: list[str] = _one(objects, "Deployment")["spec"]["template"]["spec"]["containers"][0]["args"]
    return args


CLOUDS = [pytest.param(AWS, id="aws"), pytest.param(GCE, id="gce"), pytest.param(AZURE, id="azure")]


@pytest.mark.parametrize("values", CLOUDS)
def test_the_chart_lints_clean(values: Json) -> None:
    report = helm.lint(str(CHART), values, strict=True)
    assert report["errors"] == []
    assert [m for m in report["messages"] if m["severity"] >= 2] == []


@pytest.mark.parametrize("values", CLOUDS)
def test_every_rendered_object_validates_strictly(values: Json) -> None:
    objects = render({**values, **MONITORING})
    kinds = {o["kind"] for o in objects}
    assert {"Deployment", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "Service",
            "PodDisruptionBudget", "ServiceMonitor", "PrometheusRule", "NetworkPolicy", "ConfigMap"} <= kinds
    for obj in objects:
        if obj["kind"] not in CUSTOM:
            kubernetes_validate.validate(obj, KUBERNETES, strict=True)


@pytest.mark.parametrize(("values", "expected"), [
    pytest.param(AWS, ["--cloud-provider=aws", "--namespace=kube-system",
                       "--node-group-auto-discovery=asg:tag=k8s.io/cluster-autoscaler/enabled,"
                       "k8s.io/cluster-autoscaler/prod",
                       "--balance-similar-node-groups=true", "--logtostderr=true", "--stderrthreshold=info", "--v=4"],
                 id="aws-auto-discovery"),
    pytest.param(GCE, ["--cloud-provider=gce", "--node-group-auto-discovery=mig:namePrefix=gke-prod-nvme,min=0,max=10"],
                 id="gce-name-prefix"),
    pytest.param(AZURE, ["--cloud-provider=azure", "--nodes=1:20:aks-nvme-12345678-vmss",
                         "--node-group-auto-discovery=label:cluster-autoscaler-enabled=true,"
                         "cluster-autoscaler-name=prod"], id="azure-groups-and-labels"),
    pytest.param({**AWS, "autoDiscovery": {"clusterName": ""},
                  "autoscalingGroups": [{"name": "asg-a", "minSize": 1, "maxSize": 3},
                                        {"name": "asg-b", "minSize": 0, "maxSize": 9}]},
                 ["--nodes=1:3:asg-a", "--nodes=0:9:asg-b"], id="aws-static-groups"),
    pytest.param({**AWS, "extraArgs": {"ignore-taint_1": "a", "ignore-taint_2": "b", "scale-down-enabled": None}},
                 ["--ignore-taint=a", "--ignore-taint=b", "--scale-down-enabled"], id="extra-args-suffix-and-bare"),
])
def test_values_render_the_args_the_official_chart_renders(values: Json, expected: list[str]) -> None:
    args = _args(render(values))
    missing = [a for a in expected if a not in args]
    assert not missing, args


@pytest.mark.parametrize("values", CLOUDS)
def test_run_accepts_every_rendered_arg(values: Json) -> None:
    parsed = build_parser().parse_args(["run", *_args(render(values))])
    options = options_from_args(parsed)
    settings = settings_from_args(parsed, options.storage)
    assert settings.cloud_provider == values["cloudProvider"]
    assert settings.provider.auto_discovery or settings.provider.static_groups
    assert options.storage_aware


def test_rbac_has_no_wildcard_and_no_pod_deletes() -> None:
    for values in (AWS, GCE, AZURE):
        for obj in render(values):
            if obj["kind"] not in ("ClusterRole", "Role"):
                continue
            for rule in obj["rules"]:
                for key in ("apiGroups", "resources", "verbs"):
                    assert "*" not in rule[key], rule
            assert not any(g.resource == "pods" and g.verb in ("delete", "deletecollection")
                           for g in grants(obj["rules"]))


def test_rbac_equals_the_kustomize_base() -> None:
    """The same calls as ``deploy/base`` (held to the adapter's by ``test_rbac.py``); the Role names only the
    Lease and status ConfigMap this release uses, where the base names both CA's and the shadow's."""
    base = kustomize(ROOT / "deploy" / "overlays" / "eks")
    assert grants(_one(render(AWS), "ClusterRole")["rules"]) == grants(_one(base, "ClusterRole")["rules"])
    ours, theirs = grants(_one(render(AWS), "Role")["rules"]), grants(_one(base, "Role")["rules"])
    assert ours <= theirs
    assert {g.name for g in theirs - ours} == {"storage-autoscaler-shadow", "storage-autoscaler-shadow-status"}


def test_the_service_account_carries_the_cloud_identity() -> None:
    for values, annotation in ((AWS, "eks.amazonaws.com/role-arn"), (GCE, "iam.gke.io/gcp-service-account"),
                               (AZURE, "azure.workload.identity/client-id")):
        objects = render(values)
        account = _one(objects, "ServiceAccount")
        assert annotation in account["metadata"]["annotations"]
        pod = _one(objects, "Deployment")["spec"]["template"]["spec"]
        assert pod["serviceAccountName"] == account["metadata"]["name"]
    assert _one(render(AWS), "ServiceAccount")["metadata"]["name"] == "cluster-autoscaler"
    labels = _one(render(AZURE), "Deployment")["spec"]["template"]["metadata"]["labels"]
    assert labels["azure.workload.identity/use"] == "true"


@pytest.mark.parametrize(("values", "env"), [
    pytest.param(AWS, {"AWS_REGION": "eu-west-1"}, id="aws-region"),
    pytest.param(GCE, {"GCE_PROJECT": "my-project", "GCE_ZONES": "europe-west4-a,europe-west4-b"}, id="gce"),
])
def test_the_cloud_settings_reach_the_environment(values: Json, env: dict[str, str]) -> None:
    container = _one(render(values), "Deployment")["spec"]["template"]["spec"]["containers"][0]
    values_by_name = {e["name"]: e.get("value") for e in container["env"]}
    assert env.items() <= values_by_name.items()


def test_azure_ids_come_from_the_charts_secret() -> None:
    objects = render(AZURE)
    secret = _one(objects, "Secret")
    container = _one(objects, "Deployment")["spec"]["template"]["spec"]["containers"][0]
    refs = {e["name"]: e["valueFrom"]["secretKeyRef"] for e in container["env"] if "valueFrom" in e
            and "secretKeyRef" in e["valueFrom"]}
    assert {"ARM_SUBSCRIPTION_ID", "ARM_RESOURCE_GROUP"} <= set(refs)
    assert all(ref["name"] == secret["metadata"]["name"] and ref["key"] in secret["data"] for ref in refs.values())


def test_a_dry_run_shadow_uses_its_own_lease_and_status_configmap() -> None:
    objects = render({**AWS, "extraArgs": {"dry-run": True}})
    args = _args(objects)
    parsed = build_parser().parse_args(["run", *args])
    settings = settings_from_args(parsed, options_from_args(parsed).storage)
    names = {g.name for g in grants(_one(objects, "Role")["rules"]) if g.name}
    assert "cluster-autoscaler" not in names and "cluster-autoscaler-status" not in names
    assert settings.leader.resource_name in names and settings.status_config_map_name in names


def test_the_deployment_is_locked_down_and_probed() -> None:
    pod = _one(render(AWS), "Deployment")["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["startupProbe"]["httpGet"]["path"] == "/health-check"
    startup = container["startupProbe"]["periodSeconds"] * container["startupProbe"]["failureThreshold"]
    assert startup >= 300, "the port opens only after the caches sync"
    assert container["livenessProbe"]["httpGet"]["path"] == "/health-check"


def test_default_values_lint_and_install_no_deployment_as_the_official_chart() -> None:
    report = helm.lint(str(CHART), None, strict=True)
    assert report["errors"] == [] and [m for m in report["messages"] if m["severity"] >= 2] == []
    kinds = {o["kind"] for o in render({})}
    assert "Deployment" not in kinds and {"ClusterRole", "ServiceAccount"} <= kinds


@pytest.mark.parametrize(("values", "message"), [
    pytest.param({**AWS, "cloudProvider": "hetzner"}, "not supported", id="unknown-cloud"),
    pytest.param({**AZURE, "azureVMType": "standard"}, "only vmss", id="azure-vm-type"),
])
def test_values_it_cannot_honour_fail_the_render_with_a_reason(values: Json, message: str) -> None:
    with pytest.raises(helm.HelmError, match=message):
        render(values)


def test_the_priority_expander_configmap_follows_the_expander_flag() -> None:
    values = {**AWS, "extraArgs": {"expander": "priority,least-waste"}, "expanderPriorities": {10: [".*nvme.*"]}}
    (config,) = [o for o in render(values) if o["kind"] == "ConfigMap"]
    assert config["metadata"]["name"] == "cluster-autoscaler-priority-expander"
    assert yaml.safe_load(config["data"]["priorities"]) == {10: [".*nvme.*"]}
    assert not [o for o in render(AWS) if o["kind"] == "ConfigMap"]


def test_monitoring_objects_render_alerts_and_a_dashboard() -> None:
    objects = render({**AWS, **MONITORING})
    rule = _one(objects, "PrometheusRule")
    alerts = {r["alert"] for group in rule["spec"]["groups"] for r in group["rules"]}
    assert {"StorageAutoscalerNotSafeToAutoscale", "StorageAutoscalerLoopStalled", "StorageAutoscalerLoopErrors",
            "StorageAutoscalerPodsPendingTooLong", "StorageAutoscalerNodeGroupBackoff",
            "StorageAutoscalerScaleDownBlockedByPinnedData"} <= alerts
    (dashboard,) = [o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"].endswith("-dashboard")]
    panels = json.loads(dashboard["data"]["storage-autoscaler.json"])["panels"]
    assert len(panels) >= 10
    monitor = _one(objects, "ServiceMonitor")
    assert monitor["spec"]["endpoints"][0]["port"] == _one(objects, "Service")["spec"]["ports"][0]["name"]

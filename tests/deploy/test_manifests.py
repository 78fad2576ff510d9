"""``deploy/``: every overlay renders, validates offline against the Kubernetes schemas, and is safe.

Rendering uses ``tests.deploy.kustomize`` (no kustomize binary in CI); where ``kubectl``
is installed, its built-in kustomize must render the same objects. Validation is
``kubernetes_validate`` in strict mode (unknown fields fail). The Deployment's flags
are parsed by ``run``'s own parser, so a manifest cannot carry a flag ``run`` rejects.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate  # type: ignore[import-untyped]
import pytest
import yaml

from app.cli import build_parser
from app.run.flags import settings_from_args
from autoscaler.config import options_from_args
from tests.deploy.kustomize import render
from tests.deploy.policy import admits, selects

Json = dict[str, Any]

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
OVERLAYS = ("eks", "gke", "aks")
KUBERNETES = "1.30"

#: overlay -> (cloud provider flag, the service account annotation carrying the cloud identity).
CLOUD = {
    "eks": ("aws", "eks.amazonaws.com/role-arn"),
    "gke": ("gce", "iam.gke.io/gcp-service-account"),
    "aks": ("azure", "azure.workload.identity/client-id"),
}


def _one(objects: list[Json], kind: str) -> Json:
    found = [o for o in objects if o["kind"] == kind]
    assert len(found) == 1, f"{len(found)} {kind} objects"
    return found[0]


@pytest.fixture(scope="module", params=OVERLAYS)
def overlay(request: pytest.FixtureRequest) -> tuple[str, list[Json]]:
    name = str(request.param)
    return name, render(DEPLOY / "overlays" / name)


def test_every_object_validates_strictly(overlay: tuple[str, list[Json]]) -> None:
    _, objects = overlay
    assert {o["kind"] for o in objects} == {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role",
                                            "RoleBinding", "Deployment", "Service", "PodDisruptionBudget",
                                            "NetworkPolicy"}
    for obj in objects:
        kubernetes_validate.validate(obj, KUBERNETES, strict=True)


def test_strict_validation_catches_a_misspelt_field() -> None:
    deployment = _one(render(DEPLOY / "overlays" / "eks"), "Deployment")
    deployment["spec"]["template"]["spec"]["containers"][0]["livenesProbe"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, KUBERNETES, strict=True)


def test_the_deployment_is_locked_down(overlay: tuple[str, list[Json]]) -> None:
    _, objects = overlay
    deployment = _one(objects, "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    assert pod["priorityClassName"] == "system-cluster-critical"
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["serviceAccountName"] == _one(objects, "ServiceAccount")["metadata"]["name"]
    (container,) = pod["containers"]
    security = container["securityContext"]
    assert security["readOnlyRootFilesystem"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"]["drop"] == ["ALL"]
    assert {"cpu", "memory"} <= set(container["resources"]["requests"])
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    for kind in ("startupProbe", "livenessProbe"):
        probe = container[kind]["httpGet"]
        assert (probe["path"], ports[probe["port"]]) == ("/health-check", 8085)
    # The port opens only after the caches sync (--cache-sync-timeout, 60s): the start-up
    # probe must wait longer than that before the liveness probe may restart the pod.
    startup = container["startupProbe"]
    assert startup["periodSeconds"] * startup["failureThreshold"] > 60
    assert container["image"].startswith("ghcr.io/storage-autoscaler/storage-autoscaler:")
    budget = _one(objects, "PodDisruptionBudget")
    assert budget["spec"]["selector"]["matchLabels"].items() <= pod_labels(deployment).items()
    assert deployment["spec"]["replicas"] > budget["spec"]["minAvailable"]


def pod_labels(deployment: Json) -> dict[str, str]:
    labels: dict[str, str] = deployment["spec"]["template"]["metadata"]["labels"]
    return labels


def test_the_overlay_sets_its_cloud_and_identity(overlay: tuple[str, list[Json]]) -> None:
    name, objects = overlay
    provider, annotation = CLOUD[name]
    args = _one(objects, "Deployment")["spec"]["template"]["spec"]["containers"][0]["args"]
    parsed = build_parser().parse_args(["run", *args])
    options = options_from_args(parsed)
    settings = settings_from_args(parsed, options.storage)
    assert settings.cloud_provider == provider
    assert settings.provider.auto_discovery or settings.provider.static_groups
    assert settings.leader.enabled
    assert settings.address == ("0.0.0.0", 8085)
    assert annotation in _one(objects, "ServiceAccount")["metadata"]["annotations"]
    if name == "aks":
        assert pod_labels(_one(objects, "Deployment"))["azure.workload.identity/use"] == "true"


def test_everything_lands_in_one_namespace_and_binds_the_service_account(overlay: tuple[str, list[Json]]) -> None:
    _, objects = overlay
    namespaced = [o for o in objects if o["kind"] not in ("ClusterRole", "ClusterRoleBinding")]
    assert {o["metadata"]["namespace"] for o in namespaced} == {"kube-system"}
    account = _one(objects, "ServiceAccount")["metadata"]["name"]
    for kind, role in (("ClusterRoleBinding", "ClusterRole"), ("RoleBinding", "Role")):
        binding = _one(objects, kind)
        assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": role,
                                      "name": _one(objects, role)["metadata"]["name"]}
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": account, "namespace": "kube-system"}]


def test_only_the_monitoring_namespace_reaches_the_metrics(overlay: tuple[str, list[Json]]) -> None:
    _, objects = overlay
    policy = _one(objects, "NetworkPolicy")
    labels = pod_labels(_one(objects, "Deployment"))
    assert selects(policy["spec"]["podSelector"], labels)
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    monitoring = {"kubernetes.io/metadata.name": "monitoring"}
    assert admits(policy, "http-metrics", namespace=monitoring)
    assert not admits(policy, "http-metrics", namespace={"kubernetes.io/metadata.name": "default"})
    assert not admits(policy, "http-metrics", pod={"app": "anything"})
    assert not admits(policy, "http-metrics", ip="10.0.0.7")
    ports = [p["name"] for c in _one(objects, "Deployment")["spec"]["template"]["spec"]["containers"]
             for p in c["ports"]]
    assert "http-metrics" in ports


def _key(obj: Json) -> tuple[str, str]:
    return obj["kind"], obj["metadata"]["name"]


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl (built-in kustomize) not installed")
@pytest.mark.parametrize("name", OVERLAYS)
def test_the_renderer_agrees_with_kubectl_kustomize(name: str) -> None:
    result = subprocess.run(["kubectl", "kustomize", str(DEPLOY / "overlays" / name)], capture_output=True,
                            text=True, timeout=60, check=True)
    theirs = {_key(o): o for o in yaml.safe_load_all(result.stdout) if o}
    ours = {_key(o): o for o in render(DEPLOY / "overlays" / name)}
    assert ours == theirs


def test_the_image_runs_as_non_root_without_build_tools() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    stages = re.split(r"^FROM ", dockerfile, flags=re.MULTILINE)[1:]
    assert len(stages) == 2, "a build stage and a final stage"
    final = stages[1]
    assert "USER 65532:65532" in final
    assert "COPY --from=build /opt/autoscaler /opt/autoscaler" in final
    for tool in ("gcc", "build-essential", "apt-get install", "pip install"):
        assert tool not in final
    assert 'ENTRYPOINT ["python", "-m", "autoscaler", "run"]' in final
    deployment = _one(render(DEPLOY / "overlays" / "eks"), "Deployment")
    assert deployment["spec"]["template"]["spec"]["securityContext"]["runAsUser"] == 65532

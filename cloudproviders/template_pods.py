"""Pods a cloud's template says a fresh node runs from the start, besides DaemonSet pods.

Upstream's AWS, GCE and Azure providers build their ``TemplateNodeInfo`` with one pod on
the template node: ``cloudprovider.BuildKubeProxy(group)``, a kube-proxy mirror pod in
``kube-system`` requesting 100m CPU (``KubeProxyCpuRequestMillis``;
``cloudprovider/aws/aws_cloud_provider.go``, ``gce/gce_cloud_provider.go``,
``azure/azure_scale_set.go``). Sanitizing keeps mirror pods (``simulator/node_info_utils.go``
``podsExpectedOnFreshNode``), so a node built from a cloud template has 100m CPU less room
than its allocatable: a pod asking for all of it does not fit, as upstream decides.
"""

from __future__ import annotations

from kube.model import OwnerRef, Pod, PodScheduling, Resources

__all__ = ["KUBE_PROXY_CPU_MILLIS", "kube_proxy_pod"]

#: Upstream ``cloudprovider.KubeProxyCpuRequestMillis``.
KUBE_PROXY_CPU_MILLIS = 100

_NO_OWNER: OwnerRef | None = None


def kube_proxy_pod(group: str) -> Pod:
    """Upstream ``BuildKubeProxy(group)``: named after the group (upstream adds a random number)."""
    name = f"kube-proxy-{group}"
    return Pod(
        namespace="kube-system", name=name, uid=f"template-{name}",
        labels={"component": "kube-proxy", "tier": "node"}, owner=_NO_OWNER, node_name="",
        phase="Running", requests=Resources(cpu=KUBE_PROXY_CPU_MILLIS), scheduling=PodScheduling(),
        is_mirror=True,
    )

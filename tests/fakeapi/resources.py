"""The resources the fake API server knows: URL plural, kind, API group and scope."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["BY_KIND", "BY_PATH", "Resource", "resource_for"]


@dataclass(frozen=True, slots=True)
class Resource:
    #: ``""`` for the core group (``/api/v1``), else e.g. ``apps``.
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def key(self) -> str:
        """Unique per resource: ``events`` exists in two groups."""
        return f"{self.group or 'core'}/{self.plural}"

    @property
    def prefix(self) -> str:
        return f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"


_ALL = (
    Resource("", "v1", "nodes", "Node", False),
    Resource("", "v1", "pods", "Pod", True),
    Resource("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", True),
    Resource("", "v1", "persistentvolumes", "PersistentVolume", False),
    Resource("", "v1", "namespaces", "Namespace", False),
    Resource("", "v1", "configmaps", "ConfigMap", True),
    Resource("", "v1", "events", "Event", True),
    Resource("", "v1", "replicationcontrollers", "ReplicationController", True),
    Resource("storage.k8s.io", "v1", "storageclasses", "StorageClass", False),
    Resource("storage.k8s.io", "v1", "csinodes", "CSINode", False),
    Resource("storage.k8s.io", "v1", "csidrivers", "CSIDriver", False),
    Resource("storage.k8s.io", "v1", "csistoragecapacities", "CSIStorageCapacity", True),
    Resource("storage.k8s.io", "v1", "volumeattachments", "VolumeAttachment", False),
    Resource("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True),
    Resource("apps", "v1", "replicasets", "ReplicaSet", True),
    Resource("apps", "v1", "statefulsets", "StatefulSet", True),
    Resource("apps", "v1", "deployments", "Deployment", True),
    Resource("apps", "v1", "daemonsets", "DaemonSet", True),
    Resource("batch", "v1", "jobs", "Job", True),
    Resource("events.k8s.io", "v1", "events", "Event", True),
    Resource("coordination.k8s.io", "v1", "leases", "Lease", True),
)

#: (prefix, plural) -> resource.
BY_PATH: dict[tuple[str, str], Resource] = {(r.prefix, r.plural): r for r in _ALL}
#: (apiVersion, kind) -> resource; a bare kind maps to its first (core) resource too.
BY_KIND: dict[tuple[str, str], Resource] = {(r.api_version, r.kind): r for r in _ALL}


def resource_for(kind: str, api_version: str | None = None) -> Resource:
    """The resource of an object: by apiVersion and kind, or by kind alone."""
    if api_version is not None:
        found = BY_KIND.get((api_version, kind))
        if found is not None:
            return found
    for resource in _ALL:
        if resource.kind == kind:
            return resource
    raise KeyError(f"the fake API server has no resource of kind {kind!r}")

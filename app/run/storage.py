"""The storage numbers ``run`` exports: local bytes per node group, pods pending on local storage."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from kube.model import ClusterObjects, Node
from kube.names import StorageNames

__all__ = ["local_storage_by_group", "pods_pending_on_local_storage"]


def local_storage_by_group(nodes: Iterable[Node], group_of: Mapping[str, str | None]) -> tuple[
        dict[str, int], dict[str, int]]:
    """(free, total) local bytes per group, summed over nodes whose driver reported them."""
    free: dict[str, int] = {}
    total: dict[str, int] = {}
    for node in nodes:
        group = group_of.get(node.name)
        if group is None:
            continue
        if node.free_local_bytes is not None:
            free[group] = free.get(group, 0) + node.free_local_bytes
        if node.max_local_bytes is not None:
            total[group] = total.get(group, 0) + node.max_local_bytes
    return free, total


def pods_pending_on_local_storage(objects: ClusterObjects, storage: StorageNames) -> int:
    """Unbound, live pods with a claim of the local provisioner's class that has no volume yet."""
    local_classes = {name for name, sc in objects.storage_classes.items() if sc.provisioner == storage.provisioner}
    count = 0
    for pod in objects.pods:
        if pod.node_name or pod.is_terminal or pod.deleted is not None:
            continue
        for claim_name in pod.claims:
            claim = objects.claims.get((pod.namespace, claim_name))
            if claim is not None and claim.storage_class in local_classes and not claim.volume_name:
                count += 1
                break
    return count

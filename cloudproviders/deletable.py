"""The checks every provider makes before deleting a group's nodes, in one place.

``delete_nodes`` of a node group refuses, before any cloud call: a node named twice (one
instance would be deleted and the target lowered twice), a node that is not one of the
group's instances (after one reload of the instance list, for a node newer than the cache),
and a deletion that takes the target below the group's minimum. CA's providers make the same
refusals (``cloudprovider/aws/aws_cloud_provider.go`` ``DeleteNodes`` and ``Belongs``;
``gce/gce_cloud_provider.go``; ``azure/azure_scale_set.go``: "min size reached", "belongs to a
different group").
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from cloudproviders.interface import CloudError
from kube.model import Node

__all__ = ["check_deletable"]


def check_deletable(label: str, nodes: Sequence[Node], keys: Sequence[str], *, is_member: Callable[[str], bool],
                    target: int, min_size: int, reload: Callable[[], None] | None = None,
                    member: str = "one of its instances") -> None:
    """Raise ``CloudError`` naming ``label`` (e.g. ``MIG web``) and the node if ``nodes`` may not be deleted.

    ``keys`` are the nodes' instance keys as the group indexes them (one per node);
    ``is_member`` answers from the group's current instance list; ``reload`` re-reads that
    list, called at most once and only when a key is unknown; ``member`` says what a node
    outside the group is not (``an instance of this scale set``).
    """
    if len(set(keys)) != len(keys):
        raise CloudError(f"{label}: nodes repeated in {[n.name for n in nodes]}")
    if reload is not None and not all(is_member(k) for k in keys):
        reload()  # a node newer than the cache
    for node, key in zip(nodes, keys, strict=True):
        if not is_member(key):
            raise CloudError(f"{label}: node {node.name} ({node.provider_id or 'no providerID'}) "
                             f"is not {member}")
    if target - len(nodes) < min_size:
        raise CloudError(f"{label}: deleting {len(nodes)} node(s) from {target} goes below min size {min_size}")

"""Which VolumeAttachments a drained node must lose before its instance is deleted.

Deleting an instance whose network volumes (EBS, PD, Azure Disk) are still attached
leaves them to the attach-detach controller's force-detach, 6 minutes later
(``reconcilerMaxWaitForUnmountDuration`` in kubernetes/kubernetes
``pkg/controller/volume/attachdetach/attach_detach_controller.go``); only then can the
moved pods' volumes attach to their new nodes, and meanwhile those pods wait. Karpenter therefore waits for a node's
VolumeAttachments to go before it terminates the instance (kubernetes-sigs/karpenter
``pkg/controllers/node/termination/controller.go``); upstream CA does not. The
actuator does, for up to ``--max-volume-detach-time`` (``actuator.py``, one check per
loop: the loop is never blocked).

A VolumeAttachment counts while it exists, whatever its ``status.attached`` says: the
attach-detach controller deletes it once the volume is detached, so an existing one
may still be attached, attaching or detaching. As Karpenter's
``filterVolumeAttachments``, those of volumes used by pods that stay on the node (the
drain did not evict them: DaemonSet or mirror pods) are not waited for: they detach
only when the instance goes.
"""

from __future__ import annotations

from collections.abc import Collection

from kube.model import ClusterObjects

__all__ = ["attachments_to_wait_for"]

PodKey = tuple[str, str]


def attachments_to_wait_for(objects: ClusterObjects, node: str, drained: Collection[PodKey]) -> list[str]:
    """Names of the VolumeAttachments on ``node`` worth waiting for, sorted; ``drained``: the pods evicted."""
    on_node = [va for va in objects.volume_attachments if va.node == node]
    if not on_node:
        return []
    staying: set[str] = set()
    for pod in objects.pods:
        if pod.node_name != node or (pod.namespace, pod.name) in drained or pod.deleted is not None \
                or pod.is_terminal:
            continue
        for claim_name in pod.claims:
            claim = objects.claims.get((pod.namespace, claim_name))
            if claim is not None and claim.volume_name:
                staying.add(claim.volume_name)
    return sorted(va.name for va in on_node if va.volume is None or va.volume not in staying)

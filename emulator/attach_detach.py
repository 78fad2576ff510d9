"""The attach-detach controller and the CSI attacher, as the autoscaler sees them: VolumeAttachments.

* A network volume (a bound PV of a CSI driver that needs attaching: not the local
  provisioner's, not pinned to one node, and not of a ``CSIDriver`` with
  ``attachRequired: false``) gets a VolumeAttachment on a node as soon as a running pod
  there uses it (terminating pods keep theirs mounted until they are gone).
* When no such pod is left on the node, the VolumeAttachment goes ``volumeDetachDelay``
  seconds later (the kubelet unmounts, the driver detaches, the controller deletes the
  object), unless a pod there uses the volume again first.
* When the node is deleted with VolumeAttachments left (a detach under way included),
  the controller cannot confirm the unmount: it force-detaches after ``FORCE_DETACH_SECONDS`` (upstream's
  ``maxWaitForUnmountDuration``), counted in ``Metrics.force_detaches``: the moved pods'
  volumes could not attach elsewhere meanwhile.

The autoscaler's actuator waits for a drained node's VolumeAttachments to go before it
deletes the node (``autoscaler/actuation/detach.py``).
"""

from __future__ import annotations

import hashlib

from emulator.clock import SimClock
from emulator.cluster import SimCluster, pinned_host
from emulator.timeline import Timeline
from kube.model import PersistentVolume, VolumeAttachment

__all__ = ["FORCE_DETACH_SECONDS", "AttachDetachController", "attachment_name"]

#: The attach-detach controller's ``reconcilerMaxWaitForUnmountDuration`` (kubernetes/kubernetes
#: ``pkg/controller/volume/attachdetach/attach_detach_controller.go``).
FORCE_DETACH_SECONDS = 360.0


def attachment_name(driver: str, volume: str, node: str) -> str:
    """``csi-`` and a SHA-256 of volume, driver and node, as the attach-detach controller names them."""
    return "csi-" + hashlib.sha256(f"{volume}{driver}{node}".encode()).hexdigest()


class AttachDetachController:
    def __init__(self, cluster: SimCluster, clock: SimClock, timeline: Timeline, *, detach_delay: float) -> None:
        self.cluster = cluster
        self.clock = clock
        self.timeline = timeline
        self.detach_delay = detach_delay
        #: VolumeAttachment name -> generation of its scheduled removal (bumped to call it off).
        self._detaching: dict[str, int] = {}
        self._generation = 0
        #: VolumeAttachments of deleted nodes, waiting for the force-detach.
        self._forced: set[str] = set()

    def needs_attaching(self, pv: PersistentVolume) -> bool:
        if pv.driver in ("", "local", "hostPath") or self.cluster.is_local_volume(pv) or pinned_host(pv) is not None:
            return False
        driver = self.cluster.csi_drivers.get(pv.driver)
        return driver is None or driver.attach_required

    def _in_use(self, node: str) -> dict[str, str]:
        """Network volumes the running pods on ``node`` use: PV name -> driver."""
        used: dict[str, str] = {}
        for pod in self.cluster.pods_on(node):
            if not pod.claims or pod.phase != "Running":
                continue
            for claim_name in pod.claims:
                claim = self.cluster.claim(pod.namespace, claim_name)
                pv = self.cluster.volume(claim.volume_name) if claim is not None and claim.volume_name else None
                if pv is not None and self.needs_attaching(pv):
                    used[pv.name] = pv.driver
        return used

    def reconcile(self, node: str) -> None:
        attachments = self.cluster.volume_attachments
        here = {name: va for name, va in attachments.items() if va.node == node}
        if self.cluster.node(node) is None:
            for name in here:
                if name not in self._forced:  # a detach under way is cut short too
                    self._forced.add(name)
                    self.cluster.metrics.force_detaches += 1
                    self._remove_later(name, FORCE_DETACH_SECONDS, "force-detached")
            return
        used = self._in_use(node)
        for volume, driver in used.items():
            name = attachment_name(driver, volume, node)
            self._detaching.pop(name, None)  # used again: a scheduled detach is called off
            if name not in attachments:
                attachments[name] = VolumeAttachment(name, node, driver, volume, attached=True)
        for name, va in here.items():
            if va.volume not in used and name not in self._detaching:
                self._remove_later(name, self.detach_delay, "detached")

    def _remove_later(self, name: str, delay: float, what: str) -> None:
        self._generation += 1
        generation = self._detaching[name] = self._generation

        def remove() -> None:
            if self._detaching.get(name) == generation:
                del self._detaching[name]
                self._forced.discard(name)
                self.cluster.volume_attachments.pop(name, None)

        if delay <= 0:
            remove()
            return
        self.timeline.schedule(self.clock.now + delay, f"VolumeAttachment {name} {what}", remove)

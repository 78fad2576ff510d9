"""The objects behind a storage verdict: claims, classes, PVs and where they are pinned, CSI capacity.

Read from the snapshot's objects, for ``explain``'s answers: which claim did not fit,
which PV pins the pod to which node (or to one that no longer exists), which
CSIStorageCapacity is short and by how many bytes, and how many bytes of migratable
local volumes a node's removal would unpin.
"""

from __future__ import annotations

from kube.model import ClusterObjects, PersistentVolume, Pod
from kube.names import StorageNames
from simulator.volumes import NodeMatcher

__all__ = ["StorageFacts", "StoragePlugins", "size"]

#: The scheduler plugins whose refusals are about volumes.
StoragePlugins = frozenset({"VolumeBinding", "VolumeZone", "VolumeRestrictions", "NodeVolumeLimits"})


def size(count: int) -> str:
    """Bytes for people, with the exact count: ``40Gi (42949672960 bytes)``."""
    for unit, scale in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20)):
        if count >= scale:
            return f"{count / scale:.4g}{unit} ({count} bytes)"
    return f"{count} bytes"


def _named_node(pv: PersistentVolume) -> str | None:
    """The node a PV's affinity names by a single-value In requirement, whatever the key."""
    if pv.node_affinity is None:
        return None
    for term in pv.node_affinity.terms:
        for req in (*term.requirements, *term.fields):
            if req.operator == "In" and len(req.values) == 1:
                return req.values[0]
    return None


class StorageFacts:
    """Lookups over one snapshot's storage objects (read only; built once per explain)."""

    def __init__(self, objects: ClusterObjects, names: StorageNames) -> None:
        self.objects = objects
        self.names = names
        self.matcher = NodeMatcher(objects.nodes)
        self._local_pins: dict[str, str] | None = None

    @classmethod
    def of(cls, objects: ClusterObjects, names: StorageNames) -> StorageFacts:
        return cls(objects, names)

    def _local_pinned(self) -> dict[str, str]:
        """PV name -> the node a bound volume of the migratable local provisioner is pinned to (once)."""
        if self._local_pins is None:
            self._local_pins = {}
            for pv in self.objects.volumes.values():
                if pv.driver == self.names.provisioner and pv.claim is not None and pv.node_affinity is not None:
                    node = self.matcher.only_match(pv.node_affinity)
                    if node is not None:
                        self._local_pins[pv.name] = node
        return self._local_pins

    def pinned_to(self, pv: PersistentVolume) -> str | None:
        """``Node/name``, ``Node/name (no longer exists)``, or None when the PV is not pinned to one node."""
        if pv.node_affinity is None:
            return None
        node = self.matcher.only_match(pv.node_affinity)
        if node is not None:
            return f"Node/{node}"
        named = _named_node(pv)
        return f"Node/{named} (no longer exists)" if named else None

    def claim_objects(self, pod: Pod) -> tuple[list[str], list[str]]:
        """The objects behind a pod's volumes, and notes (missing objects, capacity short)."""
        objects: list[str] = []
        notes: list[str] = []
        for claim_name in pod.claims:
            claim = self.objects.claims.get((pod.namespace, claim_name))
            objects.append(f"PersistentVolumeClaim/{pod.namespace}/{claim_name}")
            if claim is None:
                notes.append(f"claim {pod.namespace}/{claim_name} does not exist")
                continue
            if claim.storage_class:
                objects.append(f"StorageClass/{claim.storage_class}")
                if claim.storage_class not in self.objects.storage_classes:
                    notes.append(f"StorageClass {claim.storage_class} does not exist")
            if claim.volume_name:
                self._bound(claim.volume_name, objects, notes)
            elif claim.storage_class:
                self._capacity(claim.storage_class, claim.request, objects, notes)
        return list(dict.fromkeys(objects)), notes

    def _bound(self, volume: str, objects: list[str], notes: list[str]) -> None:
        pv = self.objects.volumes.get(volume)
        objects.append(f"PersistentVolume/{volume}")
        if pv is None:
            notes.append(f"PersistentVolume {volume} does not exist")
            return
        pinned = self.pinned_to(pv)
        if pinned is not None:
            objects.append(pinned)
            notes.append(f"PersistentVolume {volume} is pinned to {pinned.removeprefix('Node/')}")
        for key, values in pv.zones:
            notes.append(f"PersistentVolume {volume} is in {key}={','.join(sorted(values))}")

    def _capacity(self, storage_class: str, request: int, objects: list[str], notes: list[str]) -> None:
        for cap in self.objects.csi_capacities:
            if cap.storage_class != storage_class:
                continue
            objects.append(f"CSIStorageCapacity/{cap.namespace}/{cap.name}")
            available = cap.capacity if cap.maximum_volume_size is None else cap.maximum_volume_size
            if available is not None and available < request:
                notes.append(f"CSIStorageCapacity {cap.namespace}/{cap.name} offers {size(available)}: "
                             f"{size(request - available)} short of claim's {size(request)}")
        sc = self.objects.storage_classes.get(storage_class)
        if sc is not None and sc.provisioner == self.names.provisioner:
            notes.append(f"needs {size(request)} of local capacity on one node (free bytes: node annotation "
                         f"{self.names.capacity_annotation}; a new node: label {self.names.max_capacity_label})")

    def unpin_bytes(self, pod: Pod, node: str) -> int:
        """Bytes of the pod's migratable local volumes pinned to ``node`` (what its removal would unpin)."""
        if not pod.claims:
            return 0
        pins = self._local_pinned()
        total = 0
        for claim_name in pod.claims:
            claim = self.objects.claims.get((pod.namespace, claim_name))
            if claim is not None and pins.get(claim.volume_name) == node:
                total += self.objects.volumes[claim.volume_name].capacity
        return total

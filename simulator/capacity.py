"""Where free local capacity comes from: one seam, a source per StorageClass provisioner.

Three sources fit the model (storage-semantics section 5):

* ``AnnotationCapacity``: Rok's node annotation (free bytes) and max-capacity label
  (total bytes), already parsed into ``Node.free_local_bytes`` / ``max_local_bytes``;
* ``TopoLVMCapacity``: TopoLVM's per device class node annotation
  ``capacity.topolvm.io/<device-class>`` (free bytes); the device class of a
  StorageClass is its ``topolvm.io/device-class`` parameter, given here per class
  name (the model's ``StorageClass`` does not carry parameters yet), default
  ``00default`` as TopoLVM names its default class;
* ``CSIStorageCapacitySource``: ``storage.k8s.io/v1`` CSIStorageCapacity objects, per
  StorageClass and topology segment: the most any segment matching the node offers,
  and its ``maximumVolumeSize`` as the largest single volume.

``CapacitySources`` picks the source by the class's provisioner, so one cluster can mix
them. A missing or malformed value is *no capacity* (zero), never a guess: the driver
is not running there. Which pool a claim draws from (``pool``) tells callers which
claims must be summed together: claims of one pool on one node share its free bytes.

Status: the extender and the autoscaler's predicates still read the single local pool
of ``StorageNames`` (``Node.free_local_bytes``); this module is the seam they are to
read through (see the README's "Scheduling side").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from kube.model import CSIStorageCapacity, Node, StorageClass

__all__ = [
    "TOPOLVM_ANNOTATION_PREFIX",
    "TOPOLVM_DEFAULT_DEVICE_CLASS",
    "TOPOLVM_PROVISIONER",
    "AnnotationCapacity",
    "CSIStorageCapacitySource",
    "CapacitySource",
    "CapacitySources",
    "TopoLVMCapacity",
]

TOPOLVM_PROVISIONER = "topolvm.io"
TOPOLVM_ANNOTATION_PREFIX = "capacity.topolvm.io/"
TOPOLVM_DEFAULT_DEVICE_CLASS = "00default"


class CapacitySource(Protocol):
    """Free and total bytes a node offers to new volumes of one StorageClass."""

    def pool(self, storage_class: StorageClass) -> str:
        """Claims of classes with the same pool on one node share its free bytes (sum them)."""
        ...

    def free_bytes(self, node: Node, storage_class: StorageClass) -> int:
        """Free bytes for new volumes of ``storage_class`` on ``node``; 0 when unknown."""
        ...

    def max_volume_bytes(self, node: Node, storage_class: StorageClass) -> int | None:
        """The largest single volume, when the source limits it below ``free_bytes``."""
        ...

    def total_bytes(self, node: Node, storage_class: StorageClass) -> int | None:
        """All bytes of the pool on ``node`` (for utilization); None when not published."""
        ...


@dataclass(frozen=True, slots=True)
class AnnotationCapacity:
    """Rok: the capacity annotation and max-capacity label, parsed at the edge."""

    name: str = "rok"

    def pool(self, storage_class: StorageClass) -> str:
        return self.name

    def free_bytes(self, node: Node, storage_class: StorageClass) -> int:
        return node.free_local_bytes or 0

    def max_volume_bytes(self, node: Node, storage_class: StorageClass) -> int | None:
        return None

    def total_bytes(self, node: Node, storage_class: StorageClass) -> int | None:
        return node.max_local_bytes


def _bytes(text: str | None) -> int:
    """An integer byte count as drivers write it; anything else is no capacity."""
    if text is None:
        return 0
    value = text.strip()
    return int(value) if value.isdigit() else 0


@dataclass(frozen=True, slots=True)
class TopoLVMCapacity:
    """TopoLVM: ``capacity.topolvm.io/<device-class>`` on the node, one pool per device class."""

    #: StorageClass name -> its ``topolvm.io/device-class`` parameter.
    device_classes: Mapping[str, str] = field(default_factory=dict)

    def device_class(self, storage_class: StorageClass) -> str:
        return self.device_classes.get(storage_class.name, TOPOLVM_DEFAULT_DEVICE_CLASS)

    def pool(self, storage_class: StorageClass) -> str:
        return f"topolvm/{self.device_class(storage_class)}"

    def free_bytes(self, node: Node, storage_class: StorageClass) -> int:
        return _bytes(node.annotations.get(TOPOLVM_ANNOTATION_PREFIX + self.device_class(storage_class)))

    def max_volume_bytes(self, node: Node, storage_class: StorageClass) -> int | None:
        return None

    def total_bytes(self, node: Node, storage_class: StorageClass) -> int | None:
        return None


@dataclass(frozen=True, slots=True)
class CSIStorageCapacitySource:
    """CSIStorageCapacity objects: per StorageClass and topology segment (kube-scheduler's view)."""

    capacities: Sequence[CSIStorageCapacity] = ()

    def pool(self, storage_class: StorageClass) -> str:
        return f"csi/{storage_class.name}"

    def _segments(self, node: Node, storage_class: StorageClass) -> list[CSIStorageCapacity]:
        # An object without a topology selects no node (kube-scheduler's volumebinding).
        return [c for c in self.capacities if c.storage_class == storage_class.name
                and c.node_topology is not None and c.node_topology.matches(node.labels)]

    def free_bytes(self, node: Node, storage_class: StorageClass) -> int:
        return max((c.capacity or 0 for c in self._segments(node, storage_class)), default=0)

    def max_volume_bytes(self, node: Node, storage_class: StorageClass) -> int | None:
        limits = [c.maximum_volume_size for c in self._segments(node, storage_class)
                  if c.maximum_volume_size is not None]
        return max(limits) if limits else None

    def total_bytes(self, node: Node, storage_class: StorageClass) -> int | None:
        return None


@dataclass(frozen=True, slots=True)
class CapacitySources:
    """The source for each provisioner; provisioners without one have no local capacity model."""

    by_provisioner: Mapping[str, CapacitySource]

    @classmethod
    def default(cls, local_provisioner: str, capacities: Sequence[CSIStorageCapacity] = (),
                csi_provisioners: Sequence[str] = (), device_classes: Mapping[str, str] | None = None
                ) -> CapacitySources:
        """Rok's annotation for ``local_provisioner``, TopoLVM's for ``topolvm.io``, CSIStorageCapacity
        for the ``csi_provisioners`` (the CSI drivers with ``storageCapacity: true``)."""
        sources: dict[str, CapacitySource] = {TOPOLVM_PROVISIONER: TopoLVMCapacity(dict(device_classes or {}))}
        csi = CSIStorageCapacitySource(tuple(capacities))
        for name in csi_provisioners:
            sources[name] = csi
        sources[local_provisioner] = AnnotationCapacity()
        return cls(sources)

    def source_for(self, storage_class: StorageClass) -> CapacitySource | None:
        return self.by_provisioner.get(storage_class.provisioner)

    def fits(self, node: Node, claims: Sequence[tuple[StorageClass, int]]) -> bool:
        """Do these new volumes fit ``node``: claims summed per pool, each within its volume limit?"""
        need: dict[str, int] = {}
        free: dict[str, int] = {}
        for storage_class, size in claims:
            source = self.source_for(storage_class)
            if source is None:
                continue  # not a capacity-tracked provisioner: upstream behaviour, no check
            limit = source.max_volume_bytes(node, storage_class)
            if limit is not None and size > limit:
                return False
            pool = source.pool(storage_class)
            need[pool] = need.get(pool, 0) + size
            free.setdefault(pool, source.free_bytes(node, storage_class))
        return all(need[pool] <= free[pool] for pool in need)

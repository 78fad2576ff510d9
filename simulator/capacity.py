"""Where free local capacity comes from: one seam, a source per StorageClass provisioner.

Three sources (storage-semantics section 5), chosen by the class's provisioner so one
cluster can mix them:

* ``AnnotationCapacity`` (the local provisioner of ``StorageNames``, Rok by default):
  the capacity annotation (free bytes) and max-capacity label (total bytes), parsed at
  the edge into ``Node.free_local_bytes`` / ``max_local_bytes``. One pool, ``ROK_POOL``,
  kept in the snapshot's ``free_local`` array (the fast path of every simulation).
* ``TopoLVMCapacity`` (provisioner ``topolvm.io``): the node annotation
  ``capacity.topolvm.io/<device-class>`` (free bytes), one pool per device class; the
  class's device class is its ``topolvm.io/device-class`` parameter, default
  ``00default`` as TopoLVM names its default class. No total is published.
* ``CSIStorageCapacitySource``: ``storage.k8s.io/v1`` CSIStorageCapacity objects, per
  StorageClass and topology segment, for classes whose CSIDriver sets
  ``storageCapacity: true``. Checked one claim at a time, as kube-scheduler's
  VolumeBinding does; not a pool.

Claims of one pool on one node share its free bytes, so a pod's claims are **summed per
pool** (the thesis' fix to per-claim checks). A missing or malformed annotation is *no
capacity* (zero), never a guess: the driver is not running there. The one exception is a
live node of a class whose driver also publishes CSIStorageCapacity: there the objects
are what kube-scheduler reads, so a node without the annotation is left to them
(``NOT_PUBLISHED`` in the snapshot's pool arrays; see ``simulator/localcapacity.py``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from kube.model import UNBOUNDED_BYTES, CSIStorageCapacity, Node, StorageClass
from kube.names import TOPOLVM_CAPACITY_PREFIX

__all__ = [
    "NOT_PUBLISHED",
    "ROK_POOL",
    "TOPOLVM_ANNOTATION_PREFIX",
    "TOPOLVM_DEFAULT_DEVICE_CLASS",
    "TOPOLVM_DEVICE_CLASS_PARAMETER",
    "TOPOLVM_PROVISIONER",
    "AnnotationCapacity",
    "CSIStorageCapacitySource",
    "CapacitySource",
    "CapacitySources",
    "TopoLVMCapacity",
    "annotation_bytes",
    "pool_free",
]

TOPOLVM_PROVISIONER = "topolvm.io"
TOPOLVM_ANNOTATION_PREFIX = TOPOLVM_CAPACITY_PREFIX
TOPOLVM_DEVICE_CLASS_PARAMETER = "topolvm.io/device-class"
TOPOLVM_DEFAULT_DEVICE_CLASS = "00default"
#: The local provisioner's pool (the snapshot's ``free_local``).
ROK_POOL = "rok"
#: A pool array's value on a node without the pool's annotation.
NOT_PUBLISHED = -1


class CapacitySource(Protocol):
    """Free and total bytes of the pool a StorageClass's new volumes draw from."""

    def pool(self, storage_class: StorageClass) -> str:
        """Claims of classes with the same pool on one node share its free bytes (sum them)."""
        ...

    def free_bytes(self, node: Node, pool: str) -> int | None:
        """Free bytes of ``pool`` on ``node``; None when the driver published none, 0 when malformed."""
        ...

    def total_bytes(self, node: Node, pool: str) -> int | None:
        """All bytes of the pool on ``node`` (for utilization); None when not published."""
        ...


def annotation_bytes(text: str | None) -> int | None:
    """An integer byte count as drivers write it: None when absent, 0 when malformed."""
    if text is None:
        return None
    value = text.strip()
    return min(int(value), UNBOUNDED_BYTES) if value.isdigit() else 0


@dataclass(frozen=True, slots=True)
class AnnotationCapacity:
    """The local provisioner: the capacity annotation and max-capacity label, parsed at the edge."""

    def pool(self, storage_class: StorageClass) -> str:
        return ROK_POOL

    def free_bytes(self, node: Node, pool: str) -> int | None:
        return node.free_local_bytes

    def total_bytes(self, node: Node, pool: str) -> int | None:
        return node.max_local_bytes


@dataclass(frozen=True, slots=True)
class TopoLVMCapacity:
    """TopoLVM: ``capacity.topolvm.io/<device-class>`` on the node, one pool per device class.

    The pool's name is the annotation's name, so the snapshot reads a pool's free bytes
    straight off a node (``pool_free``), templates included.
    """

    @staticmethod
    def device_class(storage_class: StorageClass) -> str:
        return storage_class.parameters.get(TOPOLVM_DEVICE_CLASS_PARAMETER) or TOPOLVM_DEFAULT_DEVICE_CLASS

    def pool(self, storage_class: StorageClass) -> str:
        return TOPOLVM_ANNOTATION_PREFIX + self.device_class(storage_class)

    def free_bytes(self, node: Node, pool: str) -> int | None:
        return annotation_bytes(node.annotations.get(pool))

    def total_bytes(self, node: Node, pool: str) -> int | None:
        return None  # TopoLVM publishes free bytes only


def pool_free(node: Node, pool: str) -> int:
    """A non-local pool's free bytes on ``node`` for the snapshot: ``NOT_PUBLISHED`` when absent."""
    free = annotation_bytes(node.annotations.get(pool))  # TopoLVM: a pool is named by its annotation
    return NOT_PUBLISHED if free is None else free


@dataclass(frozen=True, slots=True)
class CSIStorageCapacitySource:
    """CSIStorageCapacity objects, per StorageClass and topology segment (kube-scheduler's view)."""

    capacities: Sequence[CSIStorageCapacity] = ()

    def fits(self, storage_class: StorageClass, size: int, node: Node) -> bool:
        """A capacity object of the class, visible from the node, that holds one volume of ``size``.

        Upstream ``hasEnoughCapacity`` (pkg/scheduler/framework/plugins/volumebinding/binder.go):
        a claim without a storage request needs none; ``maximumVolumeSize`` is preferred over
        ``capacity``; an object without node topology is visible nowhere; each claim is
        checked on its own.
        """
        if size <= 0:
            return True
        for cap in self.capacities:
            if cap.storage_class != storage_class.name:
                continue
            if cap.node_topology is None or not cap.node_topology.matches(node.labels):
                continue
            limit = cap.maximum_volume_size if cap.maximum_volume_size is not None else cap.capacity
            if limit is not None and limit >= size:
                return True
        return False


@dataclass(frozen=True, slots=True)
class CapacitySources:
    """The summed source for each provisioner, and the CSIStorageCapacity objects.

    Provisioners without a summed source keep upstream behaviour (CSIStorageCapacity per
    claim when their driver publishes it, nothing otherwise).
    """

    by_provisioner: Mapping[str, CapacitySource]
    csi: CSIStorageCapacitySource = CSIStorageCapacitySource()

    @classmethod
    def default(cls, local_provisioner: str, capacities: Sequence[CSIStorageCapacity] = ()) -> CapacitySources:
        """The annotation for ``local_provisioner`` (it wins when it is ``topolvm.io`` too: a
        cluster configured with TopoLVM as *the* local provisioner keeps that behaviour),
        TopoLVM's per device class annotation for ``topolvm.io``."""
        sources: dict[str, CapacitySource] = {TOPOLVM_PROVISIONER: TopoLVMCapacity()}
        sources[local_provisioner] = AnnotationCapacity()
        return cls(sources, CSIStorageCapacitySource(tuple(capacities)))

    def source_for(self, storage_class: StorageClass) -> CapacitySource | None:
        return self.by_provisioner.get(storage_class.provisioner)

    def pool_of(self, storage_class: StorageClass) -> str | None:
        """The pool a new volume of the class draws from; None when the class is not summed."""
        source = self.source_for(storage_class)
        return None if source is None else source.pool(storage_class)

    def free_bytes(self, node: Node, storage_class: StorageClass) -> int:
        """Free bytes for new volumes of the class on ``node``; 0 when unknown or not a summed class."""
        source = self.source_for(storage_class)
        if source is None:
            return 0
        return source.free_bytes(node, source.pool(storage_class)) or 0

    def fits(self, node: Node, claims: Sequence[tuple[StorageClass, int]], published: Sequence[str] = ()) -> bool:
        """Do these new volumes fit ``node``: summed per pool, and per claim by CSIStorageCapacity for
        classes whose provisioner is in ``published`` (CSIDriver ``storageCapacity: true``).

        The reference the snapshot's vector checks are tested against (no consumption, one node).
        """
        need: dict[str, int] = {}
        free: dict[str, int | None] = {}
        lenient: set[str] = set()
        for storage_class, size in claims:
            csi = storage_class.provisioner in published
            if csi and not self.csi.fits(storage_class, size, node):
                return False
            source = self.source_for(storage_class)
            if source is None:
                continue
            pool = source.pool(storage_class)
            if csi and pool == ROK_POOL:
                continue  # the local provisioner on a live node: CSIStorageCapacity alone (kube-scheduler)
            need[pool] = need.get(pool, 0) + size
            free.setdefault(pool, source.free_bytes(node, pool))
            if csi:
                lenient.add(pool)
        for pool, size in need.items():
            value = free[pool]
            if value is None and pool in lenient:
                continue  # left to CSIStorageCapacity, as kube-scheduler does
            if size > (value or 0):
                return False
        return True

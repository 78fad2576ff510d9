"""Node utilization as scale-down measures it (thesis Algorithm 7, upstream ``utilization``).

CPU and memory: requests of the node's pods over allocatable. Pods excluded by
``--ignore-daemonsets-utilization`` / ``--ignore-mirror-pods-utilization`` are taken out
of both sides; long-terminating pods do not count. Storage (storage-semantics 3.1):
``(max - free) / max`` from the max-capacity label and the capacity annotation,
unknown unless both are present.

Storage utilization comes only from capacity pools with a known total, which today is
the local provisioner's (Rok's max-capacity label; ``AnnotationCapacity.total_bytes``).
TopoLVM publishes free bytes per device class and no total (``TopoLVMCapacity.total_bytes``
is None), and CSIStorageCapacity objects tell what fits, not what is used, so neither adds
a storage dimension: a node's use of them cannot be told from free bytes alone, and a
guessed total would make scale-down keep or remove nodes on made-up numbers. Their volumes
still count where they must: pinned volumes keep the node (drainability), and claims are
summed against free bytes wherever pods are placed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kube.model import Node, Pod

__all__ = ["Utilization", "is_long_terminating", "node_utilization"]

#: Upstream ``drain.PodLongTerminatingExtraThreshold``: grace period plus this, past deletion.
LONG_TERMINATING_EXTRA_SECONDS = 30.0
#: Upstream's GPU resource: a node with some allocatable is a GPU node, judged by GPU use.
GPU_RESOURCE = "nvidia.com/gpu"


@dataclass(frozen=True, slots=True)
class Utilization:
    cpu: float
    memory: float
    storage: float | None
    #: Why upstream could not compute it (no cpu or memory allocatable): the node is
    #: then unremovable with ``UnexpectedError``.
    error: str | None = None
    #: GPU utilization of a node with GPUs; then it alone decides (upstream ``Calculate``).
    gpu: float | None = None

    @property
    def resource(self) -> str:
        """The dimension that decides underutilization (memory wins a tie, as upstream)."""
        if self.gpu is not None:
            return GPU_RESOURCE
        return "cpu" if self.cpu > self.memory else "memory"

    @property
    def value(self) -> float:
        return self.gpu if self.gpu is not None else max(self.cpu, self.memory)


def is_long_terminating(pod: Pod, now: float) -> bool:
    """Upstream ``drain.IsPodLongTerminating``: deleted longer ago than its grace period plus 30 s."""
    if pod.deleted is None:
        return False
    return pod.deleted + pod.grace_seconds + LONG_TERMINATING_EXTRA_SECONDS < now


def _ratio(used: int, ignored: int, allocatable: int) -> float:
    """``used`` over what is left of ``allocatable`` once ``ignored`` pods are taken out."""
    denominator = allocatable - ignored
    if denominator <= 0:
        return 0.0  # upstream reports an error and the node counts as unused
    return max(0.0, used / denominator)


def storage_utilization(node: Node) -> float | None:
    total, free = node.max_local_bytes, node.free_local_bytes
    if total is None or free is None or total <= 0:
        return None
    return min(1.0, max(0.0, (total - free) / total))


def node_utilization(node: Node, pods: Iterable[Pod], now: float, *, ignore_daemonsets: bool = False,
                     ignore_mirror: bool = False, storage_aware: bool = True) -> Utilization:
    alloc = node.allocatable
    gpus = alloc.get_extended(GPU_RESOURCE) if alloc.extended else 0
    cpu = memory = gpu = ignored_cpu = ignored_memory = ignored_gpu = 0
    for pod in pods:
        req = pod.requests
        if (ignore_daemonsets and pod.is_daemonset) or (ignore_mirror and pod.is_mirror):
            # Upstream takes these out of allocatable whether or not they are terminating.
            ignored_cpu += req.cpu
            ignored_memory += req.memory
            if gpus:
                ignored_gpu += req.get_extended(GPU_RESOURCE)
            continue
        if is_long_terminating(pod, now):
            continue
        cpu += req.cpu
        memory += req.memory
        if gpus:
            gpu += req.get_extended(GPU_RESOURCE)
    if gpus > 0:
        # Upstream ``utilization.Calculate``: GPU nodes are judged by GPU use alone
        # (against --scale-down-gpu-utilization-threshold).
        return Utilization(_ratio(cpu, ignored_cpu, alloc.cpu), _ratio(memory, ignored_memory, alloc.memory),
                           storage_utilization(node) if storage_aware else None,
                           gpu=_ratio(gpu, ignored_gpu, gpus))
    error = None
    if alloc.cpu <= 0 or alloc.memory <= 0:
        # Upstream ``CalculateUtilizationOfResource`` fails on a zero or missing allocatable.
        error = f"{'cpu' if alloc.cpu <= 0 else 'memory'} is 0 at {node.name}"
    return Utilization(
        _ratio(cpu, ignored_cpu, alloc.cpu),
        _ratio(memory, ignored_memory, alloc.memory),
        storage_utilization(node) if storage_aware else None,
        error,
    )

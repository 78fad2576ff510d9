"""A forkable cluster snapshot: nodes, the pods on them, and per-node free resources.

Free CPU, memory, ephemeral storage, pod slots and local storage are numpy arrays
indexed by node, so a predicate can test one pod against every node in a few
vector operations. Local storage is one array per capacity pool
(``simulator/capacity.py``): ``free_local`` for the local provisioner's pool, and
``pool_free(pool)`` for each other pool (TopoLVM device classes), built on first use
so a cluster without them pays nothing. Simulations mutate the snapshot through ``add_pod``,
``add_node`` and ``disable_node``; every mutation is journaled, so ``fork`` /
``revert`` / ``commit`` nest and cost only what was changed (upstream CA's
``ClusterSnapshot.Fork/Revert/Commit``).

Nodes are never removed from the arrays: a removed node is *disabled* and stops
being a destination and a place where pods are counted. Nodes added during a
simulation (templates, upcoming nodes) are appended after the ``base_count``
nodes of the real cluster.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from kube.model import UNBOUNDED_BYTES, Node, Pod
from simulator.capacity import pool_free

__all__ = ["BoolArray", "ClusterSnapshot", "IntArray", "NodeRole"]

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

#: Where a node in the snapshot came from.
NodeRole = Literal["live", "upcoming", "template"]


@dataclass(slots=True)
class _Journal:
    entries: list[tuple[object, ...]]
    marks: list[int]


class ClusterSnapshot:
    """Nodes and pods, with resources free on each node kept as arrays."""

    def __init__(self, nodes: Iterable[Node] = (), capacity: int = 16) -> None:
        node_list = list(nodes)
        size = max(capacity, len(node_list) + 16)
        self.nodes: list[Node] = []
        self.roles: list[NodeRole] = []
        self.index: dict[str, int] = {}
        self.pods_on: list[list[Pod]] = []
        #: local bytes each pod provisioned on its node, by (node index, pod ref).
        self._local_used: dict[tuple[int, str], int] = {}
        self.free_cpu: IntArray = np.zeros(size, np.int64)
        self.free_memory: IntArray = np.zeros(size, np.int64)
        self.free_ephemeral: IntArray = np.zeros(size, np.int64)
        self.free_pods: IntArray = np.zeros(size, np.int64)
        self.free_local: IntArray = np.zeros(size, np.int64)
        #: Free bytes of the other pools, by pool name (``NOT_PUBLISHED`` where a node has no value).
        self.pools: dict[str, IntArray] = {}
        self.enabled: BoolArray = np.zeros(size, np.bool_)
        #: A number no other node added to this snapshot ever had, per index: caches keyed
        #: by node index compare it to tell a reverted-and-reused index from the same node.
        self.serial: IntArray = np.zeros(size, np.int64)
        self._serials = 0
        self.extended: dict[str, IntArray] = {}
        self.count = 0
        self.base_count = 0
        self._journal = _Journal([], [])
        #: Nodes whose pods use host ports or carry required anti-affinity (scanned by predicates).
        self.pods_with_ports: dict[int, list[Pod]] = {}
        self.anti_affinity_pods: list[tuple[int, Pod]] = []
        #: Bumped on every mutation; lets callers cache per state.
        self.version = 0
        for node in node_list:
            self._append(node, "live")
        self.base_count = self.count
        self._journal.entries.clear()

    # --- reading -----------------------------------------------------------
    def view(self, array: IntArray) -> IntArray:
        """The live part of one of the per-node arrays."""
        return array[: self.count]

    def enabled_view(self) -> BoolArray:
        return self.enabled[: self.count]

    def node_pods(self, idx: int) -> list[Pod]:
        return self.pods_on[idx]

    def iter_pods(self) -> Iterator[tuple[int, Pod]]:
        """Every pod on an enabled node, with its node's index."""
        for idx in range(self.count):
            if self.enabled[idx]:
                for pod in self.pods_on[idx]:
                    yield idx, pod

    def extended_free(self, name: str) -> IntArray:
        array = self.extended.get(name)
        if array is None:
            array = np.zeros(len(self.free_cpu), np.int64)
            for idx in range(self.count):
                array[idx] = self.nodes[idx].allocatable.get_extended(name) - sum(
                    p.requests.get_extended(name) for p in self.pods_on[idx])
            self.extended[name] = array
        return array[: self.count]

    def pool_free(self, pool: str) -> IntArray:
        """Free bytes of a non-local pool on every node (read off the nodes on first use).

        Every consumption goes through ``add_pod``, which builds the array first, so a
        fresh array has nothing simulated to subtract.
        """
        array = self.pools.get(pool)
        if array is None:
            array = np.zeros(len(self.free_cpu), np.int64)
            nodes = self.nodes
            for idx in range(self.count):
                array[idx] = pool_free(nodes[idx], pool)
            self.pools[pool] = array
        return array[: self.count]

    # --- mutation -----------------------------------------------------------
    def _grow(self) -> None:
        size = len(self.free_cpu) * 2
        for attr in ("free_cpu", "free_memory", "free_ephemeral", "free_pods", "free_local", "enabled", "serial"):
            old = getattr(self, attr)
            new = np.zeros(size, old.dtype)
            new[: len(old)] = old
            setattr(self, attr, new)
        for arrays in (self.extended, self.pools):
            for name, old in list(arrays.items()):
                new = np.zeros(size, np.int64)
                new[: len(old)] = old
                arrays[name] = new

    def _append(self, node: Node, role: NodeRole) -> int:
        if self.count == len(self.free_cpu):
            self._grow()
        idx = self.count
        self.count += 1
        self.nodes.append(node)
        self.roles.append(role)
        self.index[node.name] = idx
        self.pods_on.append([])
        alloc = node.allocatable
        self.free_cpu[idx] = alloc.cpu
        self.free_memory[idx] = alloc.memory
        self.free_ephemeral[idx] = alloc.ephemeral_storage
        self.free_pods[idx] = alloc.pods
        free_local = node.free_local_bytes
        self.free_local[idx] = 0 if free_local is None else min(free_local, UNBOUNDED_BYTES)
        self.enabled[idx] = True
        self._serials += 1
        self.serial[idx] = self._serials
        for name, array in self.extended.items():
            array[idx] = alloc.get_extended(name)
        for pool, array in self.pools.items():
            array[idx] = pool_free(node, pool)
        self._journal.entries.append(("node", idx))
        self.version += 1
        return idx

    def add_node(self, node: Node, pods: Iterable[Pod] = (), role: NodeRole = "template") -> int:
        """Append a node (with pods already on it, e.g. DaemonSet pods); returns its index."""
        idx = self._append(node, role)
        for pod in pods:
            self.add_pod(pod, idx)
        return idx

    def add_pod(self, pod: Pod, idx: int, local_bytes: int = 0, pools: Sequence[tuple[str, int]] = ()) -> None:
        """Place a pod on node ``idx``; ``local_bytes`` of local storage are provisioned for it,
        and ``pools``' bytes in each other pool."""
        req = pod.requests
        self.free_cpu[idx] -= req.cpu
        self.free_memory[idx] -= req.memory
        self.free_ephemeral[idx] -= req.ephemeral_storage
        self.free_pods[idx] -= 1
        for name, value in req.extended:
            self.extended_free(name)
            self.extended[name][idx] -= value
        if local_bytes:
            self.free_local[idx] -= local_bytes
            self._local_used[(idx, pod.ref)] = local_bytes
        for pool, size in pools:
            self.pool_free(pool)
            self.pools[pool][idx] -= size
        self.pods_on[idx].append(pod)
        sched = pod.scheduling
        if sched.host_ports:
            self.pods_with_ports.setdefault(idx, []).append(pod)
        if sched.anti_affinity:
            self.anti_affinity_pods.append((idx, pod))
        self._journal.entries.append(("pod", idx, pod, local_bytes, tuple(pools)))
        self.version += 1

    def add_copies(self, pods: Sequence[Pod], idx: int, local_bytes: int = 0,
                   pools: Sequence[tuple[str, int]] = ()) -> None:
        """``add_pod`` for each of ``pods``, equivalent pods that ask the same (requests, local
        bytes, pools) and share their scheduling constraints' host ports and anti-affinity:
        one update per array and one journal entry, so that packing thousands of equivalent
        pods onto a node (the estimator) and reverting it cost little per pod."""
        if not pods:
            return
        first = pods[0].requests
        count = len(pods)
        self.free_cpu[idx] -= first.cpu * count
        self.free_memory[idx] -= first.memory * count
        self.free_ephemeral[idx] -= first.ephemeral_storage * count
        self.free_pods[idx] -= count
        for name, value in first.extended:
            self.extended_free(name)
            self.extended[name][idx] -= value * count
        if local_bytes:
            self.free_local[idx] -= local_bytes * count
            for pod in pods:
                self._local_used[(idx, pod.ref)] = local_bytes
        for pool, size in pools:
            self.pool_free(pool)
            self.pools[pool][idx] -= size * count
        self.pods_on[idx].extend(pods)
        sched = pods[0].scheduling
        if sched.host_ports:
            self.pods_with_ports.setdefault(idx, []).extend(pods)
        if sched.anti_affinity:
            self.anti_affinity_pods.extend((idx, pod) for pod in pods)
        self._journal.entries.append(("copies", idx, tuple(pods), local_bytes, tuple(pools)))
        self.version += 1

    def disable_node(self, idx: int) -> None:
        """Take a node out of the simulation (removed, or not a destination)."""
        if self.enabled[idx]:
            self.enabled[idx] = False
            self._journal.entries.append(("disable", idx))
            self.version += 1

    def load_pods(self, pods: Iterable[Pod]) -> list[Pod]:
        """Bulk-place the cluster's scheduled pods (not journaled); returns pods on unknown nodes."""
        orphans = []
        cpu = np.zeros(self.count, np.int64)
        mem = np.zeros(self.count, np.int64)
        eph = np.zeros(self.count, np.int64)
        count = np.zeros(self.count, np.int64)
        index = self.index
        pods_on = self.pods_on
        for pod in pods:
            idx = index.get(pod.node_name)
            if idx is None:
                orphans.append(pod)
                continue
            req = pod.requests
            cpu[idx] += req.cpu
            mem[idx] += req.memory
            eph[idx] += req.ephemeral_storage
            count[idx] += 1
            if req.extended:
                for name, value in req.extended:
                    self.extended_free(name)  # computed from pods_on: before this pod joins it
                    self.extended[name][idx] -= value
            pods_on[idx].append(pod)
            sched = pod.scheduling
            if sched.host_ports:
                self.pods_with_ports.setdefault(idx, []).append(pod)
            if sched.anti_affinity:
                self.anti_affinity_pods.append((idx, pod))
        n = self.count
        self.free_cpu[:n] -= cpu
        self.free_memory[:n] -= mem
        self.free_ephemeral[:n] -= eph
        self.free_pods[:n] -= count
        self.version += 1
        return orphans

    def load_grouped(self, groups: Mapping[str, Sequence[Pod]], totals: Mapping[str, tuple[int, int, int]],
                     ports: Iterable[Pod], anti_affinity: Iterable[Pod]) -> list[str]:
        """``load_pods`` for pods already grouped per node name; returns the names not in the snapshot.

        ``groups``: each node's pods in the order ``load_pods`` would meet them; ``totals``:
        their summed CPU, memory and ephemeral-storage requests per node; ``ports`` and
        ``anti_affinity``: the pods with host ports and with required anti-affinity, in that
        order. The result is the state ``load_pods`` leaves (extended resources are counted
        when first read, from ``pods_on``, as for every snapshot). Not journaled.
        """
        index = self.index
        pods_on = self.pods_on
        rows: list[int] = []
        sums: list[tuple[int, int, int, int]] = []
        missing: list[str] = []
        for name, pods in groups.items():
            idx = index.get(name)
            if idx is None:
                missing.append(name)
                continue
            pods_on[idx].extend(pods)
            cpu, memory, ephemeral = totals[name]
            rows.append(idx)
            sums.append((cpu, memory, ephemeral, len(pods)))
        if rows:
            at = np.array(rows, np.intp)
            values = np.array(sums, np.int64)
            self.free_cpu[at] -= values[:, 0]
            self.free_memory[at] -= values[:, 1]
            self.free_ephemeral[at] -= values[:, 2]
            self.free_pods[at] -= values[:, 3]
        for name in list(self.extended):
            del self.extended[name]  # recomputed from pods_on when next read
        for pod in ports:
            idx = index.get(pod.node_name)
            if idx is not None:
                self.pods_with_ports.setdefault(idx, []).append(pod)
        for pod in anti_affinity:
            idx = index.get(pod.node_name)
            if idx is not None:
                self.anti_affinity_pods.append((idx, pod))
        self.version += 1
        return missing

    # --- fork / revert / commit ---------------------------------------------------
    def fork(self) -> None:
        """Start a nested simulation; ``revert`` undoes everything done since."""
        self._journal.marks.append(len(self._journal.entries))

    def commit(self) -> None:
        """Keep the changes of the innermost fork (they merge into the enclosing one)."""
        self._journal.marks.pop()

    def revert(self) -> None:
        mark = self._journal.marks.pop()
        entries = self._journal.entries
        while len(entries) > mark:
            self._undo(entries.pop())
        self.version += 1

    def _undo(self, entry: tuple[object, ...]) -> None:
        kind = entry[0]
        if kind == "pod":
            _, idx, pod, local_bytes, pools = entry
            assert isinstance(idx, int) and isinstance(pod, Pod) and isinstance(local_bytes, int)
            assert isinstance(pools, tuple)
            req = pod.requests
            self.free_cpu[idx] += req.cpu
            self.free_memory[idx] += req.memory
            self.free_ephemeral[idx] += req.ephemeral_storage
            self.free_pods[idx] += 1
            for name, value in req.extended:
                self.extended[name][idx] += value
            if local_bytes:
                self.free_local[idx] += local_bytes
                self._local_used.pop((idx, pod.ref), None)
            for pool, size in pools:
                self.pools[pool][idx] += size
            removed = self.pods_on[idx].pop()
            assert removed is pod
            if pod.scheduling.host_ports:
                self.pods_with_ports[idx].pop()
            if pod.scheduling.anti_affinity:
                self.anti_affinity_pods.pop()
        elif kind == "copies":
            self._undo_copies(entry)
        elif kind == "node":
            idx = entry[1]
            assert idx == self.count - 1
            node = self.nodes.pop()
            self.roles.pop()
            self.pods_on.pop()
            del self.index[node.name]
            self.enabled[idx] = False
            self.count -= 1
        elif kind == "disable":
            idx = entry[1]
            assert isinstance(idx, int)
            self.enabled[idx] = True
        else:  # pragma: no cover - journal entries are written above only
            raise AssertionError(f"unknown journal entry {kind!r}")

    def _undo_copies(self, entry: tuple[object, ...]) -> None:
        _, idx, pods, local_bytes, pools = entry
        assert isinstance(idx, int) and isinstance(pods, tuple) and isinstance(local_bytes, int)
        assert isinstance(pools, tuple)
        first = pods[0].requests
        count = len(pods)
        self.free_cpu[idx] += first.cpu * count
        self.free_memory[idx] += first.memory * count
        self.free_ephemeral[idx] += first.ephemeral_storage * count
        self.free_pods[idx] += count
        for name, value in first.extended:
            self.extended[name][idx] += value * count
        if local_bytes:
            self.free_local[idx] += local_bytes * count
            for pod in pods:
                self._local_used.pop((idx, pod.ref), None)
        for pool, size in pools:
            self.pools[pool][idx] += size * count
        on_node = self.pods_on[idx]
        assert on_node[-1] is pods[-1]
        del on_node[len(on_node) - count:]
        sched = pods[0].scheduling
        if sched.host_ports:
            del self.pods_with_ports[idx][-count:]
        if sched.anti_affinity:
            del self.anti_affinity_pods[-count:]

    def local_bytes_used(self, idx: int, pod: Pod) -> int:
        """Local bytes the simulation provisioned for ``pod`` on node ``idx``."""
        return self._local_used.get((idx, pod.ref), 0)

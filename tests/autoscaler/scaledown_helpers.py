"""Scale-down test helpers on top of ``tests.factories``: owners, PDBs, groups, reading a plan.

Upstream's drain rules block a node whose pod's controller is missing from the
snapshot (``ControllerNotFound``), so ``scaled_cluster`` adds a controller object for
every pod owner the test did not supply; tests that want the block pass
``owners=False``. ``cluster(...)`` has no slot for PDBs, so they are a keyword here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from autoscaler.runonce import LoopDecision, run_once
from autoscaler.scaledown.types import ScaleDownMemory, ScaleDownPlan
from cloudproviders.snapshot import SnapshotProvider
from kube.convert import convert_pdb, convert_pod
from kube.model import ClusterObjects, Controller, NodeGroupSpec, Pod, PodDisruptionBudget
from kube.names import MIRROR_ANNOTATION
from tests.factories import NOW, ClusterObject, cluster, node_group, options, plan, pod_json, rfc3339

__all__ = [
    "GUARD_LABELS",
    "Remembered",
    "controller",
    "details",
    "group",
    "loop",
    "mirror_pod",
    "pdb",
    "pod_with",
    "reasons",
    "scale_down",
    "scaled_cluster",
    "verdicts",
]

#: Labels of the storage guard pods (``--storage-guard-pod-selector`` default).
GUARD_LABELS: Mapping[str, str] = {"app": "rok-csi-guard"}


def controller(name: str = "rs", kind: str = "ReplicaSet", namespace: str = "default",
               replicas: int | None = 3) -> Controller:
    """A workload owner as the snapshot's ``ReplicaSet``/``StatefulSet``/... would give it."""
    return Controller(kind, namespace, name, f"uid-{kind}-{name}", replicas)


def pod_with(name: str, cpu: str | None = "1", memory: str | None = "1Gi", node: str = "", *,
             annotations: Mapping[str, str] | None = None, deleted: float | None = None,
             grace_seconds: int | None = None, volumes: Sequence[Mapping[str, Any]] = (), **kw: Any) -> Pod:
    """``pod(...)`` with what the factory lacks: annotations, a deletion in progress, raw volumes."""
    obj = pod_json(name, cpu, memory, node, **kw)
    if volumes:
        obj["spec"].setdefault("volumes", []).extend(dict(v) for v in volumes)
    if annotations:
        obj["metadata"]["annotations"] = dict(annotations)
    if deleted is not None:
        obj["metadata"]["deletionTimestamp"] = rfc3339(deleted)
    if grace_seconds is not None:
        obj["spec"]["terminationGracePeriodSeconds"] = grace_seconds
    return convert_pod(obj)


def mirror_pod(name: str, cpu: str = "1", memory: str = "1Gi", node: str = "") -> Pod:
    """A static pod as its API mirror shows it (owned by the Node, the mirror annotation set)."""
    return pod_with(name, cpu, memory, node, owner=("Node", node), annotations={MIRROR_ANNOTATION: "hash"})


def pdb(name: str, match: Mapping[str, str], allowed: int, namespace: str = "default") -> PodDisruptionBudget:
    """A PDB over pods labelled ``match`` with ``allowed`` disruptions left (its status)."""
    return convert_pdb({
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"selector": {"matchLabels": dict(match)}},
        "status": {"disruptionsAllowed": allowed},
    })


def group(name: str, *nodes: str, min_size: int = 0, max_size: int = 10, price: float | None = None,
          **kw: Any) -> NodeGroupSpec:
    """A node group whose members are ``nodes`` by name."""
    return node_group(name, min_size, max_size, nodes=nodes, price=price, **kw)


def scaled_cluster(*objects: ClusterObject, pdbs: Iterable[PodDisruptionBudget] = (),
                   owners: bool = True) -> ClusterObjects:
    """``cluster(*objects)`` plus PDBs and, when ``owners``, a controller for every pod owner."""
    out = cluster(*objects)
    out.pdbs.extend(pdbs)
    if owners:
        for p in out.pods:
            if p.owner is None:
                continue
            key = (p.owner.kind, p.namespace, p.owner.name)
            if key not in out.controllers:
                out.controllers[key] = controller(p.owner.name, p.owner.kind, p.namespace)
    return out


def scale_down(objects: ClusterObjects, *flags: str) -> ScaleDownPlan:
    """The steady-state scale-down decision (what ``autoscaler plan`` prints)."""
    return plan(objects, *flags).scale_down


@dataclass(slots=True)
class Remembered:
    """The scale-down memory as the live loop keeps it: replaced after each iteration, never edited."""

    memory: ScaleDownMemory = field(default_factory=ScaleDownMemory)

    @property
    def unneeded_since(self) -> Mapping[str, float]:
        return self.memory.unneeded_since


def loop(objects: ClusterObjects, *flags: str, now: float = NOW, memory: Remembered,
         steady_state: bool = False) -> LoopDecision:
    """One live-loop iteration at ``now``; ``memory`` is updated from the plan as ``Autoscaler`` does."""
    provider = SnapshotProvider(objects.node_groups, objects.nodes)
    decision = run_once(objects, provider, options(*flags), now, memory=memory.memory, steady_state=steady_state)
    memory.memory = dataclasses.replace(memory.memory, unneeded_since=decision.scale_down.unneeded_since)
    return decision


def reasons(decision: ScaleDownPlan) -> dict[str, str]:
    """node -> unremovable reason; asserts no node is both unneeded and unremovable."""
    out = {u.node: u.reason for u in decision.unremovable}
    assert len(out) == len(decision.unremovable), f"a node is unremovable twice: {decision.unremovable}"
    both = set(out) & set(decision.unneeded)
    assert not both, f"unneeded and unremovable at once: {sorted(both)}"
    assert set(decision.removed) <= set(decision.unneeded), "a removed node must be unneeded"
    return out


def details(decision: ScaleDownPlan) -> dict[str, str]:
    """node -> unremovable detail."""
    return {u.node: u.detail for u in decision.unremovable}


def verdicts(decision: LoopDecision) -> tuple[Any, ...]:
    """Everything scale-down decided in one loop, to compare a loop with a fresh plan's."""
    down = decision.scale_down
    return (down.result, down.removed, down.unneeded, down.unremovable, down.to_delete, down.waiting)

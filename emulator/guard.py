"""The storage operator's guard mechanism (thesis 3.2.2), one guard per node running the driver.

For every node whose storage driver has started (the capacity annotation is present)
the operator keeps a ReplicaSet ``rok-csi-guard-<node>`` (the thesis uses a one-replica
Deployment; its ReplicaSet is what owns the pod) with one guard pod pinned to the node
by required node affinity (tolerating every taint, so it runs wherever the driver
runs), and a PodDisruptionBudget ``rok-csi-guard-<node>`` with
``minAvailable: 1`` over that pod, so evicting the guard fails until the storage driver
has unpinned the node's volumes and ``release``s the budget.

While the node drains (``ToBeDeletedByClusterAutoscaler`` taint or cordoned) the
operator neither recreates an evicted guard (it could never schedule anywhere) nor
re-creates the budget; when the drain is called off, both come back. When the node is
deleted, its ReplicaSet, pod and budget go with it.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import msgspec.structs

from emulator.budgets import IntOrPercent, PdbSpec
from emulator.clock import SimClock
from emulator.cluster import OwnerKey, SimCluster, hostname, is_draining
from emulator.driver_faults import DriverFaults
from emulator.ids import IdSource
from kube.convert import convert_pod, parse_label_selector_string
from kube.convert.labelsyntax import requirement_error
from kube.model import Controller, LabelSelector, NodeSelector, NodeSelectorTerm, OwnerRef, Pod, Requirement
from kube.names import HOSTNAME_LABEL, StorageNames

__all__ = ["GUARD_NAMESPACE", "GUARD_NODE_LABEL", "GuardController"]

GUARD_NAMESPACE = "rok-system"
GUARD_NODE_LABEL = "guard-node"
GUARD_PREFIX = "rok-csi-guard"


class GuardController:
    def __init__(self, cluster: SimCluster, clock: SimClock, ids: IdSource, names: StorageNames) -> None:
        self.cluster = cluster
        self.clock = clock
        self.ids = ids
        selector = parse_label_selector_string(names.guard_pod_selector)
        #: The labels every guard carries: the equality part of the autoscaler's guard selector.
        self.labels = {r.key: r.values[0] for r in selector.requirements if r.operator == "In" and len(r.values) == 1}
        #: A scenario's storage-driver faults (``NoGuard``, ``NoDriver``); None: none.
        self.faults: DriverFaults | None = None
        #: The first guard pod converted: later ones are copies with their node's fields.
        self._template: Pod | None = None

    @staticmethod
    def name_for(node: str) -> str:
        return f"{GUARD_PREFIX}-{node}"

    def owner_key(self, node: str) -> OwnerKey:
        return ("ReplicaSet", GUARD_NAMESPACE, self.name_for(node))

    def is_guard(self, pod: Pod) -> bool:
        return pod.namespace == GUARD_NAMESPACE and GUARD_NODE_LABEL in pod.labels and all(
            pod.labels.get(k) == v for k, v in self.labels.items())

    def reconcile(self, node_name: str) -> None:
        node = self.cluster.node(node_name)
        key = self.owner_key(node_name)
        if node is None or (self.faults is not None and not self.faults.guarded(node_name)):
            # The node is gone, or a scenario's NoGuard/NoDriver fault says no guard runs there.
            if self.cluster.controller(key) is not None:
                for pod in self.cluster.owned_pods(key):
                    self.cluster.remove_pod((pod.namespace, pod.name))
                self.cluster.remove_controller(key)
                self.cluster.remove_pdb(GUARD_NAMESPACE, self.name_for(node_name))
            return
        if node.free_local_bytes is None:  # the storage driver does not run there (yet)
            return
        if self.cluster.controller(key) is None:
            self.cluster.put_controller(Controller("ReplicaSet", GUARD_NAMESPACE, key[2], self._uid(node_name), 1))
        if is_draining(node):
            return
        if not self.cluster.owned_pods(key):
            self.cluster.add_pod(self.guard_pod(node_name, hostname(node)))
        if self.cluster.pdb(GUARD_NAMESPACE, key[2]) is None:
            self.cluster.put_pdb(self._budget(node_name))

    def release(self, node_name: str) -> None:
        """Every local volume of the node is unpinned: let the guard go (thesis 3.2.2 step 4)."""
        self.cluster.remove_pdb(GUARD_NAMESPACE, self.name_for(node_name))

    def _uid(self, node_name: str) -> str:
        return f"uid-ReplicaSet-{GUARD_NAMESPACE}-{self.name_for(node_name)}"

    def _pod_labels(self, node_name: str) -> dict[str, str]:
        return {**self.labels, GUARD_NODE_LABEL: node_name}

    def guard_pod(self, node_name: str, host: str) -> Pod:
        """The guard pod for a node, as ``guard_object`` describes it, converted.

        Guards differ only in names, uid and the one hostname: the first is converted from
        its object (``kube.convert``), later ones are that pod with those fields replaced,
        which a node each at 10,000 nodes makes the difference between seconds and a
        fraction (``tests/emulator/test_pinned_pods.py`` holds the two equal).
        """
        name = f"{self.name_for(node_name)}-{self.ids.suffix()}"
        uid = self.ids.uid()
        if self._template is None:
            self._template = convert_pod(self.guard_object(node_name, host, name, uid))
            return msgspec.structs.replace(self._template, created=self.clock.now)
        template = self._template
        owner = template.owner
        assert owner is not None  # the guard object has its ReplicaSet as controller
        pin = Requirement(HOSTNAME_LABEL, "In", (host,))
        # A hostname the API machinery would refuse as a label value makes the term select
        # nothing, as in the converted pod.
        affinity = NodeSelector((NodeSelectorTerm((pin,), (), requirement_error(pin, label_selector=False)),))
        return msgspec.structs.replace(
            template, name=name, uid=uid, labels=self._pod_labels(node_name),
            owner=OwnerRef(owner.kind, self.name_for(node_name), self._uid(node_name), owner.api_version),
            scheduling=dataclasses.replace(template.scheduling, required_affinity=affinity),
            created=self.clock.now)

    def guard_object(self, node_name: str, host: str, name: str, uid: str) -> dict[str, Any]:
        """The guard pod of ``node_name`` as the operator creates it (a Kubernetes object)."""
        rs = self.name_for(node_name)
        return {
            "metadata": {
                "name": name,
                "namespace": GUARD_NAMESPACE,
                "uid": uid,
                "labels": self._pod_labels(node_name),
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs,
                                     "uid": self._uid(node_name), "controller": True}],
            },
            "spec": {
                "containers": [{"name": "guard", "image": "rok-csi-guard",
                                "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}],
                # It must run on its node whatever taints a group puts there (dedicated storage
                # nodes usually carry one), as a DaemonSet pod would.
                "tolerations": [{"operator": "Exists"}],
                "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [
                        {"key": HOSTNAME_LABEL, "operator": "In", "values": [host]}]}]}}},
            },
            "status": {"phase": "Pending"},
        }

    def _budget(self, node_name: str) -> PdbSpec:
        labels = sorted(self._pod_labels(node_name).items())
        selector = LabelSelector(tuple(Requirement(k, "In", (v,)) for k, v in labels))
        return PdbSpec(GUARD_NAMESPACE, self.name_for(node_name), selector, IntOrPercent(1), None)

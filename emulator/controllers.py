"""Workload controllers: ReplicaSets, Deployments and StatefulSets keep their replica counts.

Each controller holds its pod template converted once (``kube.convert.convert_pod``)
and stamps pods out of it with ``dataclasses.replace``. A pod that disappears (evicted,
deleted, its node removed) is recreated at once as a new pending pod; a scale event
changes the count. Pods carry a controller ``ownerReference`` to a ReplicaSet or
StatefulSet that ``list_objects`` lists, because scale-down looks owners up
(``ControllerNotFound`` otherwise).

* ReplicaSet: pods ``<rs>-<5 chars>``; scale-down deletes unbound pods first, then the newest.
* Deployment: owns one ReplicaSet, the one in the scenario whose ownerReference names it, or
  ``<deployment>-<pod-template-hash>`` synthesized; both are listed. Rollouts are not modelled.
* StatefulSet: pods ``<sts>-<ordinal>``; ``volumeClaimTemplates`` give claims
  ``<template>-<sts>-<ordinal>`` created with the pod and kept when it goes, so a recreated
  pod reuses its claim (and, through it, its volume). ``podManagementPolicy: OrderedReady``
  (the default) creates ordinal i only once every lower ordinal runs; ``Parallel`` creates all.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import msgspec.structs

from emulator.clock import SimClock
from emulator.cluster import OwnerKey, SimCluster
from emulator.ids import IdSource
from kube.convert import FieldError, convert_pod, convert_pvc
from kube.convert.memo import Memos
from kube.model import Controller, PersistentVolumeClaim, Pod

__all__ = ["WORKLOAD_KINDS", "ClaimTemplate", "WorkloadControllers", "WorkloadSpec", "parse_workloads"]

Json = dict[str, Any]

#: Kinds this module runs; other controller kinds are listed but do nothing.
WORKLOAD_KINDS = ("ReplicaSet", "Deployment", "StatefulSet")
TEMPLATE_HASH_LABEL = "pod-template-hash"


@dataclass(frozen=True, slots=True)
class ClaimTemplate:
    """A StatefulSet ``volumeClaimTemplates`` entry; ``claim`` is named after the template."""

    name: str
    claim: PersistentVolumeClaim


@dataclass(frozen=True, slots=True)
class WorkloadSpec:
    """A controller that owns pods directly (ReplicaSet or StatefulSet)."""

    kind: str
    namespace: str
    name: str
    uid: str
    replicas: int
    #: The pod every replica starts as (owner reference set, no node).
    prototype: Pod
    claim_templates: tuple[ClaimTemplate, ...] = ()
    #: StatefulSet ``OrderedReady``: one pod at a time, in ordinal order.
    ordered: bool = False
    #: The Deployment that owns this ReplicaSet.
    deployment: Controller | None = None

    @property
    def key(self) -> OwnerKey:
        return (self.kind, self.namespace, self.name)

    def controller(self) -> Controller:
        return Controller(self.kind, self.namespace, self.name, self.uid, self.replicas)


def _meta(obj: Json) -> tuple[str, str, str]:
    meta = obj.get("metadata") or {}
    name = str(meta.get("name") or "")
    if not name:
        raise FieldError("metadata.name", "required")
    namespace = str(meta.get("namespace") or "default")
    uid = str(meta.get("uid") or f"uid-{obj.get('kind')}-{namespace}-{name}")
    return namespace, name, uid


def _replicas(spec: Json) -> int:
    raw = spec.get("replicas", 1)
    if isinstance(raw, bool) or not isinstance(raw, int) or raw < 0:
        raise FieldError("spec.replicas", f"{raw!r} is not a non-negative integer")
    return raw


def _template_hash(template: Json) -> str:
    digest = hashlib.sha256(json.dumps(template, sort_keys=True, default=str).encode()).hexdigest()
    return digest[:10]


def _prototype(kind: str, namespace: str, name: str, uid: str, template: object, *,
               drop_volumes: Iterable[str] = (), extra_labels: Mapping[str, str] | None = None,
               memos: Memos | None = None) -> Pod:
    """The pod a controller makes; ``memos`` carries the feature gates it is read under."""
    if not isinstance(template, dict):
        raise FieldError("spec.template", "required (a pod template)")
    tmeta = template.get("metadata") or {}
    spec = dict(template.get("spec") or {})
    dropped = set(drop_volumes)
    if dropped and spec.get("volumes"):
        spec["volumes"] = [v for v in spec["volumes"] if v.get("name") not in dropped]
    spec.pop("nodeName", None)
    obj = {
        "metadata": {
            "name": f"{name}-template",
            "namespace": namespace,
            "labels": {**(tmeta.get("labels") or {}), **(extra_labels or {})},
            "annotations": tmeta.get("annotations") or {},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": kind, "name": name, "uid": uid, "controller": True}],
        },
        "spec": spec,
        "status": {"phase": "Pending"},
    }
    try:
        return convert_pod(obj, memos=memos)
    except FieldError as exc:
        raise FieldError(f"spec.template.{exc.field}", exc.message) from None


def _claim_templates(spec: Json, namespace: str) -> tuple[ClaimTemplate, ...]:
    out = []
    for i, raw in enumerate(spec.get("volumeClaimTemplates") or ()):
        field = f"spec.volumeClaimTemplates[{i}]"
        if not isinstance(raw, dict):
            raise FieldError(field, "expected a PersistentVolumeClaim")
        name = str((raw.get("metadata") or {}).get("name") or "")
        if not name:
            raise FieldError(f"{field}.metadata.name", "required")
        try:
            claim = convert_pvc({"metadata": {"name": name, "namespace": namespace}, "spec": raw.get("spec") or {}})
        except FieldError as exc:
            raise FieldError(f"{field}.{exc.field}", exc.message) from None
        out.append(ClaimTemplate(name, claim))
    return tuple(out)


def _owner_deployment(obj: Json) -> str | None:
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or ():
        if ref.get("controller") and ref.get("kind") == "Deployment":
            return str(ref.get("name") or "")
    return None


def parse_workload(obj: Json, deployment_rs: Mapping[tuple[str, str], Json],
                   memos: Memos | None = None) -> WorkloadSpec:
    """One ReplicaSet, Deployment or StatefulSet; ``deployment_rs`` maps (ns, deployment) -> its RS object."""
    kind = str(obj.get("kind"))
    namespace, name, uid = _meta(obj)
    spec = obj.get("spec") or {}
    if not isinstance(spec, dict):
        raise FieldError("spec", "expected a map")
    replicas = _replicas(spec)
    if kind == "StatefulSet":
        templates = _claim_templates(spec, namespace)
        policy = str(spec.get("podManagementPolicy") or "OrderedReady")
        if policy not in ("OrderedReady", "Parallel"):
            raise FieldError("spec.podManagementPolicy", f"{policy!r} is not OrderedReady or Parallel")
        proto = _prototype(kind, namespace, name, uid, spec.get("template"),
                           drop_volumes=(t.name for t in templates), memos=memos)
        return WorkloadSpec(kind, namespace, name, uid, replicas, proto, templates, policy == "OrderedReady")
    if kind == "ReplicaSet":
        return WorkloadSpec(kind, namespace, name, uid, replicas,
                            _prototype(kind, namespace, name, uid, spec.get("template"), memos=memos))
    # A Deployment runs its pods through one ReplicaSet.
    deployment = Controller("Deployment", namespace, name, uid, replicas)
    existing = deployment_rs.get((namespace, name))
    if existing is not None:
        rs_namespace, rs_name, rs_uid = _meta(existing)
        template = (existing.get("spec") or {}).get("template") or spec.get("template")
        proto = _prototype("ReplicaSet", rs_namespace, rs_name, rs_uid, template, memos=memos)
    else:
        template_hash = _template_hash(spec.get("template") or {})
        rs_name = f"{name}-{template_hash}"
        rs_uid = f"uid-ReplicaSet-{namespace}-{rs_name}"
        proto = _prototype("ReplicaSet", namespace, rs_name, rs_uid, spec.get("template"),
                           extra_labels={TEMPLATE_HASH_LABEL: template_hash}, memos=memos)
    return WorkloadSpec("ReplicaSet", namespace, rs_name, rs_uid, replicas, proto, deployment=deployment)


def parse_workloads(objs: Iterable[Json], memos: Memos | None = None) -> list[tuple[Json, WorkloadSpec | None]]:
    """Parse controllers of one batch: a ReplicaSet owned by a Deployment of the batch is folded into it.

    Returns (object, spec) pairs; the spec is None for a folded ReplicaSet. Raises ``FieldError``
    through ``WorkloadParseError`` naming the object.
    """
    batch = list(objs)
    deployments = {(_meta(o)[0], _meta(o)[1]) for o in batch if o.get("kind") == "Deployment"}
    folded: dict[tuple[str, str], Json] = {}
    for obj in batch:
        owner = _owner_deployment(obj) if obj.get("kind") == "ReplicaSet" else None
        if owner is not None and (_meta(obj)[0], owner) in deployments:
            folded[(_meta(obj)[0], owner)] = obj
    folded_ids = {id(o) for o in folded.values()}
    out: list[tuple[Json, WorkloadSpec | None]] = []
    for obj in batch:
        if id(obj) in folded_ids:
            out.append((obj, None))
        else:
            try:
                out.append((obj, parse_workload(obj, folded, memos)))
            except FieldError as exc:
                raise WorkloadParseError(obj, exc) from None
    return out


class WorkloadParseError(Exception):
    def __init__(self, obj: Json, error: FieldError) -> None:
        super().__init__(error.message)
        self.obj, self.error = obj, error


def _ordinal(pod: Pod, sts: str) -> int | None:
    prefix = f"{sts}-"
    if not pod.name.startswith(prefix):
        return None
    tail = pod.name[len(prefix):]
    return int(tail) if tail.isdigit() else None


class WorkloadControllers:
    """Every ReplicaSet / Deployment / StatefulSet of the world, reconciled when their pods change."""

    def __init__(self, cluster: SimCluster, clock: SimClock, ids: IdSource) -> None:
        self.cluster = cluster
        self.clock = clock
        self.ids = ids
        self._specs: dict[OwnerKey, WorkloadSpec] = {}
        #: (namespace, deployment) -> key of its ReplicaSet.
        self._deployments: dict[tuple[str, str], OwnerKey] = {}

    def add(self, spec: WorkloadSpec) -> None:
        self._specs[spec.key] = spec
        self.cluster.put_controller(spec.controller())
        if spec.deployment is not None:
            self.cluster.put_controller(spec.deployment)
            self._deployments[(spec.namespace, spec.deployment.name)] = spec.key
        self.cluster.changed_owners.setdefault(spec.key, False)

    def resolve(self, kind: str, namespace: str, name: str) -> OwnerKey | None:
        """The pod-owning controller for a scenario reference (a Deployment resolves to its ReplicaSet)."""
        if kind == "Deployment":
            return self._deployments.get((namespace, name))
        key = (kind, namespace, name)
        return key if key in self._specs else None

    def get(self, key: OwnerKey) -> WorkloadSpec | None:
        return self._specs.get(key)

    def scale(self, kind: str, namespace: str, name: str, replicas: int) -> bool:
        key = self.resolve(kind, namespace, name)
        spec = self._specs.get(key) if key is not None else None
        if spec is None:
            return False
        spec = dataclasses.replace(spec, replicas=replicas)
        if spec.deployment is not None:
            spec = dataclasses.replace(spec, deployment=dataclasses.replace(spec.deployment, replicas=replicas))
        self.add(spec)
        return True

    def remove(self, kind: str, namespace: str, name: str) -> bool:
        """Delete a controller and its pods (claims of StatefulSets stay, as in Kubernetes)."""
        key = self.resolve(kind, namespace, name)
        spec = self._specs.pop(key, None) if key is not None else None
        if spec is None:
            return False
        if spec.deployment is not None:
            self._deployments.pop((namespace, spec.deployment.name), None)
            self.cluster.remove_controller(("Deployment", namespace, spec.deployment.name))
        self.cluster.remove_controller(spec.key)
        for pod in self.cluster.owned_pods(spec.key):
            self.cluster.remove_pod((pod.namespace, pod.name))
        return True

    def reconcile(self, owners: Mapping[OwnerKey, bool]) -> None:
        """Bring each changed owner back to its replica count; ``True``: recreations replace lost pods."""
        for key, replacement in owners.items():
            spec = self._specs.get(key)
            if spec is None:
                continue
            if spec.kind == "StatefulSet":
                self._reconcile_statefulset(spec, replacement)
            else:
                self._reconcile_replicaset(spec, replacement)

    def _new_pod(self, spec: WorkloadSpec, name: str, replacement: bool, claims: tuple[str, ...] = ()) -> Pod:
        return msgspec.structs.replace(
            spec.prototype, name=name, uid=self.ids.uid(), created=self.clock.now,
            claims=(*spec.prototype.claims, *claims) if claims else spec.prototype.claims,
            # An evicted pod's replacement is reported PodScheduled=False/Unschedulable at once.
            marked_unschedulable=replacement,
        )

    def _reconcile_replicaset(self, spec: WorkloadSpec, replacement: bool) -> None:
        # A ReplicaSet counts only active pods: a terminating one is replaced at once.
        pods = [p for p in self.cluster.owned_pods(spec.key) if p.deleted is None]
        missing = spec.replicas - len(pods)
        for _ in range(missing):
            name = f"{spec.name}-{self.ids.suffix()}"
            while self.cluster.pod(spec.namespace, name) is not None:
                name = f"{spec.name}-{self.ids.suffix()}"
            self.cluster.add_pod(self._new_pod(spec, name, replacement))
        if missing < 0:
            # Kubernetes' preference: unscheduled pods first, then the newest.
            victims = sorted(pods, key=lambda p: (bool(p.node_name), -(p.created or 0.0), p.name))
            for pod in victims[:-missing]:
                self.cluster.remove_pod((pod.namespace, pod.name))

    def _reconcile_statefulset(self, spec: WorkloadSpec, replacement: bool) -> None:
        existing: dict[int, Pod] = {}
        for pod in self.cluster.owned_pods(spec.key):
            ordinal = _ordinal(pod, spec.name)
            if ordinal is not None:
                existing[ordinal] = pod
        for ordinal in sorted((o for o in existing if o >= spec.replicas), reverse=True):
            pod = existing.pop(ordinal)
            self.cluster.remove_pod((pod.namespace, pod.name))
        for ordinal in range(spec.replicas):
            current = existing.get(ordinal)
            if current is not None:
                if spec.ordered and not (current.node_name and current.phase == "Running"):
                    return
                continue
            claims = tuple(f"{t.name}-{spec.name}-{ordinal}" for t in spec.claim_templates)
            for template, claim_name in zip(spec.claim_templates, claims, strict=True):
                if self.cluster.claim(spec.namespace, claim_name) is None:
                    self.cluster.put_claim(dataclasses.replace(template.claim, name=claim_name))
            self.cluster.add_pod(self._new_pod(spec, f"{spec.name}-{ordinal}", replacement, claims))
            if spec.ordered:
                return

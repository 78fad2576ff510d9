"""Workloads and policy: disruption budgets, controllers and node groups."""

from __future__ import annotations

from kube.convert.errors import FieldError, Json
from kube.convert.memo import Memos
from kube.convert.nodes import convert_node
from kube.convert.pods import convert_pod
from kube.convert.selectors import label_selector
from kube.model import Controller, NodeGroupSpec, PodDisruptionBudget
from kube.names import StorageNames

__all__ = ["CONTROLLER_KINDS", "NODE_GROUP_API", "NODE_GROUP_KIND", "convert_controller", "convert_node_group",
           "convert_pdb"]

CONTROLLER_KINDS = ("ReplicaSet", "StatefulSet", "Deployment", "Job", "ReplicationController", "DaemonSet", "CronJob")

NODE_GROUP_KIND = "NodeGroup"
NODE_GROUP_API = "autoscaler.storage.dev/v1alpha1"


def convert_pdb(obj: Json) -> PodDisruptionBudget:
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    allowed = status.get("disruptionsAllowed")
    if allowed is None:
        # No status (a hand-written snapshot): the budget is unknown, so be careful.
        allowed = 0
    return PodDisruptionBudget(
        namespace=str(meta.get("namespace") or "default"),
        name=str(meta.get("name") or ""),
        selector=label_selector(spec.get("selector"), "spec.selector"),
        disruptions_allowed=int(allowed),
    )


def convert_controller(obj: Json, memos: Memos | None = None) -> Controller:
    """A workload owner; a DaemonSet keeps its pod template (as a pod) for new nodes."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    kind = str(obj["kind"])
    namespace = str(meta.get("namespace") or "default")
    name = str(meta.get("name") or "")
    template = None
    if kind == "DaemonSet":
        tmpl = spec.get("template") or {}
        tmeta = dict(tmpl.get("metadata") or {})
        tmeta.update({"name": f"{name}-template", "namespace": namespace, "ownerReferences": [
            {"kind": "DaemonSet", "name": name, "uid": meta.get("uid") or "", "controller": True}]})
        try:
            template = convert_pod({"metadata": tmeta, "spec": tmpl.get("spec") or {}}, memos=memos)
        except FieldError as exc:
            raise FieldError(f"spec.template.{exc.field}", exc.message) from None
    replicas = spec.get("replicas")
    return Controller(
        kind, namespace, name, str(meta.get("uid") or ""), int(replicas) if replicas is not None else None,
        template,
    )


def _int_field(spec: Json, key: str, *, required: bool, minimum: int = 0) -> int | None:
    value = spec.get(key)
    if value is None:
        if required:
            raise FieldError(f"spec.{key}", "required")
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise FieldError(f"spec.{key}", f"{value!r} is not an integer")
    if value < minimum:
        raise FieldError(f"spec.{key}", f"{value} is below {minimum}")
    return value


def convert_node_group(obj: Json, names: StorageNames, warnings: list[str]) -> NodeGroupSpec:
    meta = obj.get("metadata") or {}
    spec = obj.get("spec")
    name = str(meta.get("name") or "")
    if not name:
        raise FieldError("metadata.name", "required")
    if not isinstance(spec, dict):
        raise FieldError("spec", "required")
    min_size = _int_field(spec, "minSize", required=True)
    max_size = _int_field(spec, "maxSize", required=True)
    assert min_size is not None and max_size is not None
    if min_size > max_size:
        raise FieldError("spec.minSize", f"minSize {min_size} is greater than maxSize {max_size}")
    target = _int_field(spec, "targetSize", required=False)
    if target is not None and target > max_size:
        raise FieldError("spec.targetSize", f"targetSize {target} is greater than maxSize {max_size}")
    selector = spec.get("nodeSelector") or {}
    if not isinstance(selector, dict):
        raise FieldError("spec.nodeSelector", "expected a map of labels")
    node_names = spec.get("nodes") or []
    if not isinstance(node_names, list):
        raise FieldError("spec.nodes", "expected a list of node names")
    template = None
    raw_template = spec.get("template")
    if raw_template is not None:
        if not isinstance(raw_template, dict):
            raise FieldError("spec.template", "expected a Node")
        tmpl = dict(raw_template)
        tmeta = dict(tmpl.get("metadata") or {})
        tmeta.setdefault("name", f"template-{name}")
        tmpl["metadata"] = tmeta
        status = dict(tmpl.get("status") or {})
        if not status.get("capacity") and not status.get("allocatable"):
            raise FieldError("spec.template.status.capacity", "a template needs capacity or allocatable")
        status.setdefault("conditions", [{"type": "Ready", "status": "True"}])
        tmpl["status"] = status
        try:
            template = convert_node(tmpl, names, warnings)
        except FieldError as exc:
            raise FieldError(f"spec.template.{exc.field}", exc.message) from None
    price = spec.get("pricePerHour")
    if price is not None and (isinstance(price, bool) or not isinstance(price, int | float) or price < 0):
        raise FieldError("spec.pricePerHour", f"{price!r} is not a non-negative number")
    return NodeGroupSpec(
        name=name,
        min_size=min_size,
        max_size=max_size,
        target_size=target,
        node_names=tuple(str(n) for n in node_names),
        node_selector=tuple(sorted((str(k), str(v)) for k, v in selector.items())),
        template=template,
        price_per_hour=float(price) if price is not None else None,
    )

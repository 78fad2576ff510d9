"""Workloads and policy: disruption budgets, controllers and node groups."""

from __future__ import annotations

import math

from kube.autoscaling_options import OPTION_FIELDS, parse_option_value
from kube.convert.errors import FieldError, Json
from kube.convert.fields import INT32_MAX, as_int, as_list, as_map, as_str, describe, name_of, string_map
from kube.convert.memo import Memos
from kube.convert.nodes import convert_node
from kube.convert.pods import convert_pod
from kube.convert.selectors import label_selector
from kube.convert.storage import convert_pvc
from kube.model import Controller, NodeGroupSpec, PodDisruptionBudget
from kube.names import StorageNames

__all__ = ["CONTROLLER_KINDS", "NODE_GROUP_API", "NODE_GROUP_KIND", "convert_controller", "convert_node_group",
           "convert_pdb"]

CONTROLLER_KINDS = ("ReplicaSet", "StatefulSet", "Deployment", "Job", "ReplicationController", "DaemonSet", "CronJob")

NODE_GROUP_KIND = "NodeGroup"
NODE_GROUP_API = "autoscaler.storage.dev/v1alpha1"


def convert_pdb(obj: Json) -> PodDisruptionBudget:
    meta = as_map(obj.get("metadata"), "metadata")
    spec = as_map(obj.get("spec"), "spec")
    status = as_map(obj.get("status"), "status")
    # No status (a hand-written snapshot): the budget is unknown, so be careful (0).
    allowed = as_int(status.get("disruptionsAllowed"), "status.disruptionsAllowed", maximum=INT32_MAX)
    for key in ("currentHealthy", "desiredHealthy", "expectedPods"):
        as_int(status.get(key), f"status.{key}", maximum=INT32_MAX)
    _int_or_percent(spec.get("minAvailable"), "spec.minAvailable")
    _int_or_percent(spec.get("maxUnavailable"), "spec.maxUnavailable")
    if spec.get("minAvailable") is not None and spec.get("maxUnavailable") is not None:
        raise FieldError("spec.maxUnavailable", "minAvailable and maxUnavailable cannot both be set")
    return PodDisruptionBudget(
        namespace=as_str(meta.get("namespace"), "metadata.namespace") or "default",
        name=name_of(meta),
        selector=label_selector(spec.get("selector"), "spec.selector"),
        disruptions_allowed=allowed or 0,
    )


def convert_controller(obj: Json, memos: Memos | None = None,
                       notes: list[tuple[str, str]] | None = None) -> Controller:
    """A workload owner; a DaemonSet keeps its pod template (as a pod) for new nodes.

    ``notes`` receives what was read leniently (the template's, a newer pod management policy).
    """
    meta = as_map(obj.get("metadata"), "metadata")
    spec = as_map(obj.get("spec"), "spec")
    kind = as_str(obj.get("kind"), "kind")
    namespace = as_str(meta.get("namespace"), "metadata.namespace") or "default"
    name = name_of(meta)
    uid = as_str(meta.get("uid"), "metadata.uid")
    label_selector(spec.get("selector"), "spec.selector")
    template = None
    if "template" in spec or kind == "DaemonSet":
        # Every template is checked as the pods it makes; a DaemonSet's is kept for new nodes.
        tmpl = as_map(spec.get("template"), "spec.template")
        tmeta = dict(as_map(tmpl.get("metadata"), "spec.template.metadata"))
        tmeta.update({"name": f"{name}-template", "namespace": namespace, "ownerReferences": [
            {"kind": kind, "name": name, "uid": uid, "controller": True}]})
        try:
            pod = convert_pod({"metadata": tmeta, "spec": as_map(tmpl.get("spec"), "spec.template.spec")},
                              memos=memos)
        except FieldError as exc:
            raise FieldError(f"spec.template.{exc.field}", exc.message) from None
        template = pod if kind == "DaemonSet" else None
        if notes is not None:
            notes.extend((f"spec.template.{field}", what) for field, what in pod.scheduling.notes)
    if kind == "StatefulSet":
        _stateful_set(spec, notes)
    replicas = as_int(spec.get("replicas"), "spec.replicas", maximum=INT32_MAX)
    return Controller(kind, namespace, name, uid, replicas, template)


def _stateful_set(spec: Json, notes: list[tuple[str, str]] | None) -> None:
    """The StatefulSet fields beyond the template: claim templates, service, pod management."""
    as_str(spec.get("serviceName"), "spec.serviceName")
    policy = as_str(spec.get("podManagementPolicy"), "spec.podManagementPolicy", "OrderedReady")
    if policy not in ("OrderedReady", "Parallel") and notes is not None:
        notes.append(("spec.podManagementPolicy", f"unknown policy {describe(policy)} (OrderedReady or Parallel "
                                                  "here): not read by the decisions"))
    for i, claim in enumerate(as_list(spec.get("volumeClaimTemplates"), "spec.volumeClaimTemplates")):
        claim = as_map(claim, f"spec.volumeClaimTemplates[{i}]")
        try:
            convert_pvc(claim)
        except FieldError as exc:
            raise FieldError(f"spec.volumeClaimTemplates[{i}].{exc.field}", exc.message) from None


def _int_or_percent(value: object, field: str) -> None:
    if value is None or (type(value) is str and value.endswith("%") and value[:-1].isascii()
                         and value[:-1].isdigit() and int(value[:-1]) <= 100):
        return
    if type(value) is str:
        raise FieldError(field, f"{describe(value)} is neither an integer nor a percentage like 50%")
    as_int(value, field, maximum=INT32_MAX)


def _int_field(spec: Json, key: str, *, required: bool, minimum: int = 0) -> int | None:
    value = spec.get(key)
    if value is None:
        if required:
            raise FieldError(f"spec.{key}", "required")
        return None
    return as_int(value, f"spec.{key}", minimum=minimum, maximum=INT32_MAX)


def convert_node_group(obj: Json, names: StorageNames, warnings: list[str]) -> NodeGroupSpec:
    meta = as_map(obj.get("metadata"), "metadata")
    name = name_of(meta)
    spec = obj.get("spec")
    if spec is None:
        raise FieldError("spec", "required")
    spec = as_map(spec, "spec")
    min_size = _int_field(spec, "minSize", required=True)
    max_size = _int_field(spec, "maxSize", required=True)
    assert min_size is not None and max_size is not None
    if min_size > max_size:
        raise FieldError("spec.minSize", f"minSize {min_size} is greater than maxSize {max_size}")
    target = _int_field(spec, "targetSize", required=False)
    if target is not None and target > max_size:
        raise FieldError("spec.targetSize", f"targetSize {target} is greater than maxSize {max_size}")
    selector = string_map(spec.get("nodeSelector"), "spec.nodeSelector")
    node_names: list[str] = []
    for i, node in enumerate(as_list(spec.get("nodes"), "spec.nodes")):
        node = as_str(node, f"spec.nodes[{i}]")
        if not node:
            raise FieldError(f"spec.nodes[{i}]", "empty node name")
        if node in node_names:
            raise FieldError(f"spec.nodes[{i}]", f"node {node!r} is listed twice")
        node_names.append(node)
    template = None
    raw_template = spec.get("template")
    if raw_template is not None:
        tmpl = dict(as_map(raw_template, "spec.template"))
        tmeta = dict(as_map(tmpl.get("metadata"), "spec.template.metadata"))
        tmeta.setdefault("name", f"template-{name}")
        tmpl["metadata"] = tmeta
        status = dict(as_map(tmpl.get("status"), "spec.template.status"))
        if not status.get("capacity") and not status.get("allocatable"):
            raise FieldError("spec.template.status.capacity", "a template needs capacity or allocatable")
        status.setdefault("conditions", [{"type": "Ready", "status": "True"}])
        tmpl["status"] = status
        try:
            template = convert_node(tmpl, names, warnings)
        except FieldError as exc:
            raise FieldError(f"spec.template.{exc.field}", exc.message) from None
    price = spec.get("pricePerHour")
    if price is not None and (type(price) not in (int, float) or not math.isfinite(price) or price < 0):
        raise FieldError("spec.pricePerHour", f"{describe(price)} is not a non-negative number")
    return NodeGroupSpec(
        name=name,
        min_size=min_size,
        max_size=max_size,
        target_size=target,
        node_names=tuple(node_names),
        node_selector=tuple(sorted(selector.items())),
        template=template,
        price_per_hour=float(price) if price is not None else None,
        autoscaling_options=_autoscaling_options(spec.get("autoscalingOptions")),
    )


def _autoscaling_options(raw: object) -> tuple[tuple[str, float | bool], ...]:
    """``spec.autoscalingOptions``: CA's per-group option tags (any case) -> ``GroupOptions`` fields."""
    out: dict[str, float | bool] = {}
    for key, value in as_map(raw, "spec.autoscalingOptions").items():
        where = f"spec.autoscalingOptions.{key}"
        field = OPTION_FIELDS.get(str(key).lower())
        if field is None:
            raise FieldError(where, f"unknown autoscaling option (one of {', '.join(OPTION_FIELDS)})")
        if isinstance(value, bool):
            value = "true" if value else "false"
        elif type(value) in (int, float):
            value = repr(value)
        try:
            out[field] = parse_option_value(field, as_str(value, where).strip())
        except ValueError as exc:
            raise FieldError(where, str(exc)) from None
    return tuple(sorted(out.items()))

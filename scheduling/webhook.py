"""The mutating admission webhook that routes pods to the storage-aware scheduler (thesis 4.4).

``mutate(review)`` takes an ``admission.k8s.io/v1`` AdmissionReview and returns one,
always ``allowed: true``: the webhook only ever *routes* pods. For a new pod in an
opted-in namespace (``fnmatch`` globs, default ``*``), without the opt-out annotation
(present with any value, as the thesis' webhook reads it),
that names no scheduler of its own, it answers with a JSONPatch setting
``spec.schedulerName`` and a label recording the mutation. With ``only_local_storage``
it routes only pods with a claim of a local provisioner (or whose claim's class it
cannot tell yet: routing a pod to the storage-aware scheduler is always safe, it is
kube-scheduler plus one more filter, while missing one can leave the pod stuck).

A review it cannot read still gets ``allowed: true`` without a patch, and one error
line in the log: a crash here would block every pod creation in the cluster.
"""

from __future__ import annotations

import base64
import fnmatch
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kube.clusterapi import ViewUnavailable
from kube.model import ClusterObjects
from scheduling.metrics import SchedulingMetrics
from scheduling.view import ClusterView

__all__ = ["DEFAULT_SCHEDULER", "WebhookConfig", "mutate"]

log = logging.getLogger(__name__)

Json = dict[str, Any]

#: What the API server defaults ``spec.schedulerName`` to before admission.
DEFAULT_SCHEDULER = "default-scheduler"


@dataclass(frozen=True, slots=True)
class WebhookConfig:
    #: The scheduler profile or deployment pods are routed to.
    scheduler_name: str = "storage-aware-scheduler"
    #: Namespaces whose pods are routed (``fnmatch`` globs); default every namespace.
    namespaces: tuple[str, ...] = ("*",)
    #: Pods carrying this annotation, whatever its value (even ""), are left alone: the
    #: thesis' ``--annotation-optout`` and its default.
    opt_out_annotation: str = "arrikto.com/skip-rok-scheduler-webhook"
    #: Label written on routed pods, so a person can see why a pod has another scheduler.
    mutation_label: str = "autoscaler.storage.dev/scheduler-mutated"
    #: Route only pods with claims of a local provisioner.
    only_local_storage: bool = False
    #: Provisioners whose volumes live on one node's disks.
    local_provisioners: frozenset[str] = frozenset({"rok.arrikto.com"})


def _escape(key: str) -> str:
    """A JSON Pointer token (RFC 6901): ``~`` -> ``~0``, ``/`` -> ``~1``."""
    return key.replace("~", "~0").replace("/", "~1")


def _allowed(uid: str, patch: list[Json] | None = None) -> Json:
    response: Json = {"uid": uid, "allowed": True}
    if patch:
        response["patchType"] = "JSONPatch"
        response["patch"] = base64.b64encode(json.dumps(patch).encode()).decode()
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}


def mutate(review: object, config: WebhookConfig, view: ClusterView | None = None,
           metrics: SchedulingMetrics | None = None) -> Json:
    """AdmissionReview in, AdmissionReview out (never raises)."""
    uid = ""
    outcome = "malformed"
    try:
        if not isinstance(review, dict) or not isinstance(review.get("request"), dict):
            raise ValueError("AdmissionReview.request: missing")
        request = review["request"]
        uid = str(request.get("uid") or "")
        if not uid:
            raise ValueError("AdmissionReview.request.uid: missing")
        patch = _patch(request, config, view)
        outcome = "routed" if patch else "unchanged"
        return _allowed(uid, patch)
    except (ValueError, TypeError, AttributeError, KeyError) as exc:
        log.error("pod-webhook: malformed AdmissionReview (uid %r): %s; admitted without change", uid, exc)
        return _allowed(uid)
    finally:
        if metrics is not None:
            metrics.mutations.labels(outcome).inc()


def _patch(request: Json, config: WebhookConfig, view: ClusterView | None) -> list[Json] | None:
    if request.get("operation", "CREATE") != "CREATE":
        return None
    kind = request.get("kind") or {}
    if isinstance(kind, dict) and kind.get("kind") not in (None, "Pod"):
        return None
    pod = request.get("object")
    if not isinstance(pod, dict):
        raise ValueError("AdmissionReview.request.object: expected a Pod")
    meta = pod.get("metadata") or {}
    spec = pod.get("spec")
    if not isinstance(spec, dict) or not isinstance(meta, dict):
        raise ValueError("AdmissionReview.request.object: Pod without metadata or spec")
    # On CREATE the pod's own namespace may still be empty; the request's is authoritative.
    namespace = str(request.get("namespace") or meta.get("namespace") or "default")
    ref = f"{namespace}/{meta.get('name') or meta.get('generateName') or '?'}"
    if not any(fnmatch.fnmatchcase(namespace, glob) for glob in config.namespaces):
        return None
    annotations = meta.get("annotations") or {}
    if not isinstance(annotations, dict):
        raise ValueError("AdmissionReview.request.object.metadata.annotations: expected a map")
    if config.opt_out_annotation in annotations:
        log.debug("pod-webhook: %s opted out", ref)
        return None
    current = spec.get("schedulerName")
    if current not in (None, "", DEFAULT_SCHEDULER):
        return None  # the pod chose a scheduler: respect it
    if config.only_local_storage and not _uses_local_storage(spec, namespace, config, view):
        return None
    ops: list[Json] = [{"op": "replace" if current else "add", "path": "/spec/schedulerName",
                        "value": config.scheduler_name}]
    if isinstance(meta.get("labels"), dict):
        ops.append({"op": "add", "path": f"/metadata/labels/{_escape(config.mutation_label)}", "value": "true"})
    else:
        ops.append({"op": "add", "path": "/metadata/labels", "value": {config.mutation_label: "true"}})
    log.info("pod-webhook: %s routed to %s", ref, config.scheduler_name)
    return ops


def _uses_local_storage(spec: Json, namespace: str, config: WebhookConfig, view: ClusterView | None) -> bool:
    try:
        objects = view.read().objects if view is not None else None
    except ViewUnavailable as exc:  # cannot tell: route it (the storage-aware scheduler is always safe)
        log.warning("pod-webhook: no complete view of the cluster (%s); routing the pod", exc)
        objects = None
    for volume in spec.get("volumes") or ():
        if not isinstance(volume, dict):
            continue
        claim = volume.get("persistentVolumeClaim")
        if isinstance(claim, dict):
            verdict = _claim_is_local(objects, namespace, str(claim.get("claimName") or ""), config)
            if verdict is not False:
                return True
            continue
        ephemeral = volume.get("ephemeral")
        if isinstance(ephemeral, dict):
            template_spec = ((ephemeral.get("volumeClaimTemplate") or {}).get("spec") or {})
            class_name = template_spec.get("storageClassName")
            if class_name is None or _class_is_local(objects, str(class_name), config) is not False:
                return True
    return False


def _claim_is_local(objects: ClusterObjects | None, namespace: str, name: str,
                    config: WebhookConfig) -> bool | None:
    """True / False, or None when the view cannot tell (no view, claim or class not seen yet)."""
    if objects is None:
        return None
    claim = objects.claims.get((namespace, name))
    if claim is None:
        return None
    if claim.volume_name:
        pv = objects.volumes.get(claim.volume_name)
        if pv is not None and pv.driver:
            return pv.driver in config.local_provisioners
    if claim.storage_class is None:
        return None
    return _class_is_local(objects, claim.storage_class, config)


def _class_is_local(objects: ClusterObjects | None, name: str, config: WebhookConfig) -> bool | None:
    if objects is None:
        return None
    classes: Mapping[str, Any] = objects.storage_classes
    sc = classes.get(name)
    if sc is None:
        return None
    return sc.provisioner in config.local_provisioners

"""What the adapter does to the cluster: taints, evictions, Events, the status ConfigMap.

Upstream references (semantics only): cluster-autoscaler/utils/taints/taints.go
(add/remove a taint by re-reading the node and retrying on conflict),
cluster-autoscaler/core/scaledown/actuation/drain.go (Eviction API: 429 is a PDB
refusal retried until --max-pod-eviction-time, 404 means the pod is gone) and
cluster-autoscaler/clusterstate/utils/status.go (the ``cluster-autoscaler-status``
ConfigMap, key ``status``, with a last-updated annotation).

Transient failures (5xx, throttling, timeouts) are retried with ``tenacity``; a
conflict (409) re-reads the object and tries again. What still fails is raised as
the seam's typed error, except Events, which are informational: a failed Event is
logged and counted, never raised.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from tenacity import RetryCallState, Retrying, retry_if_exception_type, stop_after_attempt, wait_exponential

from kube.clusterapi import (
    ClusterAPIError,
    Conflict,
    Eviction,
    EvictionResult,
    NotFound,
    TransientAPIError,
)
from kube.model import Taint
from kubeapi.events import COMPONENT, EventRecorder, now_text
from kubeapi.transport import TooManyRequests, Transport

__all__ = ["STATUS_CONFIGMAP", "Acting", "NotLeader", "RetryPolicy"]

log = logging.getLogger(__name__)

STATUS_CONFIGMAP = "cluster-autoscaler-status"
STATUS_UPDATED_ANNOTATION = "cluster-autoscaler.kubernetes.io/last-updated"

T = TypeVar("T")
Json = dict[str, Any]


class NotLeader(ClusterAPIError):
    """This instance does not hold the leader lease: it must not act."""


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    #: Attempts of a call failing with a transient error (5xx, 429 throttling, timeouts).
    attempts: int = 4
    #: Exponential backoff between attempts, seconds.
    initial: float = 0.25
    maximum: float = 4.0
    #: Attempts of a read-modify-write that meets a conflict (409).
    conflict_attempts: int = 5


def _taint_json(taint: Taint) -> Json:
    out: Json = {"key": taint.key, "effect": taint.effect}
    if taint.value:
        out["value"] = taint.value
    return out


class Acting:
    """The mutating half of the adapter. ``may_act`` gates every call (leader election)."""

    def __init__(self, transport: Transport, namespace: str, *, identity: str = COMPONENT,
                 retry: RetryPolicy | None = None, may_act: Callable[[], bool] | None = None,
                 status_configmap: str = STATUS_CONFIGMAP) -> None:
        self.transport = transport
        self.namespace = namespace
        #: ``--status-config-map-name``: the ConfigMap ``write_status`` keeps current.
        self.status_configmap = status_configmap
        self.identity = identity
        self.retry = retry or RetryPolicy()
        self.may_act = may_act
        #: Failures that were given up on, by operation (``taint``, ``evict``, ``event``, ...).
        self.failures: Counter[str] = Counter()
        self._failures_lock = threading.Lock()
        self.events = EventRecorder(transport, identity)

    # --- plumbing -------------------------------------------------------
    def _gate(self, what: str) -> None:
        if self.may_act is not None and not self.may_act():
            raise NotLeader(f"{what}: not the leader; not acting")

    def _wait(self, state: RetryCallState) -> float:
        """Exponential backoff; a throttled call (429) waits at least its Retry-After, up to ``maximum``."""
        backoff = float(wait_exponential(multiplier=self.retry.initial, max=self.retry.maximum)(state))
        exc = state.outcome.exception() if state.outcome is not None else None
        if isinstance(exc, TooManyRequests):
            backoff = max(backoff, exc.retry_after)
        return min(backoff, self.retry.maximum)

    def _transient(self, call: Callable[[], T], op: str) -> T:
        retrying = Retrying(retry=retry_if_exception_type(TransientAPIError),
                            stop=stop_after_attempt(self.retry.attempts), wait=self._wait, reraise=True)
        try:
            return retrying(call)
        except ClusterAPIError:
            with self._failures_lock:
                self.failures[op] += 1
            raise

    def _on_conflict(self, call: Callable[[], T], op: str) -> T:
        """Re-run a read-modify-write ``call`` on 409, each run with its transient retries."""
        for attempt in range(self.retry.conflict_attempts):
            try:
                return self._transient(call, op)
            except Conflict:
                if attempt + 1 == self.retry.conflict_attempts:
                    raise
                log.debug("%s: conflict, re-reading (attempt %d)", op, attempt + 1)
        raise AssertionError("unreachable")

    # --- taints ---------------------------------------------------------
    def _update_taints(self, node: str, change: Callable[[list[Json]], list[Json] | None]) -> None:
        path = f"/api/v1/nodes/{node}"

        def once() -> None:
            current = self.transport.request("GET", path, what=f"node {node}")
            spec = current.setdefault("spec", {})
            taints = change(list(spec.get("taints") or []))
            if taints is None:
                return
            # An update (PUT) of the node read, as CA's taints.go does: its resourceVersion makes
            # the write conditional, so a concurrent change is a 409 and is re-read.
            spec["taints"] = taints
            self.transport.request("PUT", path, body=current, what=f"node {node}")

        self._on_conflict(once, "taint")

    def taint_node(self, node: str, taint: Taint) -> None:
        self._gate(f"taint node {node}")

        def add(taints: list[Json]) -> list[Json] | None:
            if any(t.get("key") == taint.key for t in taints):
                return None
            return [*taints, _taint_json(taint)]

        self._update_taints(node, add)
        log.info("tainted node %s with %s:%s", node, taint.key, taint.effect)

    def untaint_node(self, node: str, key: str) -> None:
        self._gate(f"untaint node {node}")

        def remove(taints: list[Json]) -> list[Json] | None:
            kept = [t for t in taints if t.get("key") != key]
            return kept if len(kept) != len(taints) else None

        self._update_taints(node, remove)
        log.info("removed taint %s from node %s", key, node)

    def annotate_node(self, node: str, key: str, value: str | None) -> None:
        """One annotation, read then updated as the taints are (the node's RBAC grants update, not patch)."""
        self._gate(f"annotate node {node}")
        path = f"/api/v1/nodes/{node}"

        def once() -> None:
            current = self.transport.request("GET", path, what=f"node {node}")
            annotations = current.setdefault("metadata", {}).setdefault("annotations", {}) or {}
            if annotations.get(key) == value:
                return
            if value is None:
                annotations.pop(key, None)
            else:
                annotations[key] = value
            current["metadata"]["annotations"] = annotations
            self.transport.request("PUT", path, body=current, what=f"node {node}")

        self._on_conflict(once, "annotate")

    # --- pods -----------------------------------------------------------
    def evict_pod(self, namespace: str, name: str, grace_period_seconds: int | None = None) -> EvictionResult:
        self._gate(f"evict pod {namespace}/{name}")
        body: Json = {"apiVersion": "policy/v1", "kind": "Eviction",
                      "metadata": {"name": name, "namespace": namespace}}
        if grace_period_seconds is not None:
            body["deleteOptions"] = {"gracePeriodSeconds": grace_period_seconds}
        path = f"/api/v1/namespaces/{namespace}/pods/{name}/eviction"

        def once() -> EvictionResult:
            try:
                self.transport.request("POST", path, body=body, what=f"evict pod {namespace}/{name}")
            except NotFound:
                return EvictionResult(Eviction.GONE, f"pod {namespace}/{name} is gone")
            except TooManyRequests as exc:
                # A PodDisruptionBudget refuses now; the actuator retries on later ticks.
                return EvictionResult(Eviction.REFUSED, str(exc))
            return EvictionResult(Eviction.EVICTED)

        return self._transient(once, "evict")

    # --- events and status ----------------------------------------------
    def record_event(self, kind: str, namespace: str, name: str, reason: str, message: str, *,
                     warning: bool = False) -> None:
        """An Event about ``kind/namespace/name`` (repeats counted, spam dropped: ``EventRecorder``).

        Events are informational: a failure is logged and counted, never raised.
        """
        self._gate(f"event {reason} on {kind} {name}")
        try:
            self._transient(lambda: self.events.record(kind, namespace, name, reason, message, warning=warning),
                            "event")
        except ClusterAPIError as exc:
            log.warning("event %s on %s %s not recorded: %s", reason, kind, name, exc)

    def write_status(self, text: str) -> None:
        """Create or update the status ConfigMap (``cluster-autoscaler-status`` by default; key ``status``).

        As CA's ``clusterstate/utils/status.go``: read it, update (PUT) it, or create it when missing.
        """
        self._gate("write status")
        path = f"/api/v1/namespaces/{self.namespace}/configmaps"
        what = f"configmap {self.namespace}/{self.status_configmap}"

        def once() -> None:
            annotations = {STATUS_UPDATED_ANNOTATION: now_text()}
            try:
                current = self.transport.request("GET", f"{path}/{self.status_configmap}", what=what)
            except NotFound:
                body = {"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": self.status_configmap, "namespace": self.namespace,
                                     "annotations": annotations},
                        "data": {"status": text}}
                # A 409 here (created meanwhile) is retried as an update by _on_conflict.
                self.transport.request("POST", path, body=body, what=what)
                return
            meta = current.setdefault("metadata", {})
            meta["annotations"] = {**(meta.get("annotations") or {}), **annotations}
            current["data"] = {**(current.get("data") or {}), "status": text}
            self.transport.request("PUT", f"{path}/{self.status_configmap}", body=current, what=what)

        self._on_conflict(once, "status")

"""Kubernetes Events as client-go's recorder writes them: repeats counted, spam dropped.

A loop runs every 10 s and may say the same thing about the same object each time
(``NotTriggerScaleUp`` on every pending pod). As client-go's EventCorrelator
(tools/record/events_cache.go, semantics only):

* a repeat of an Event (same object, type, reason and message) already written
  patches its ``count`` and ``lastTimestamp`` instead of creating another; the cache
  of written Events is bounded (LRU, 4,096 entries);
* each object has a token bucket (25 Events at once, then one per 5 minutes): Events
  beyond it are dropped (and counted), so one object cannot flood the API server.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kube.clusterapi import NotFound
from kubeapi.transport import Transport

__all__ = ["COMPONENT", "MERGE_PATCH", "EventRecorder", "now_text"]

Json = dict[str, Any]
COMPONENT = "cluster-autoscaler"
MERGE_PATCH = "application/merge-patch+json"

CACHE_SIZE = 4096
SPAM_BURST = 25
SPAM_REFILL_SECONDS = 300.0


@dataclass(slots=True)
class _Written:
    namespace: str
    name: str
    count: int


@dataclass(slots=True)
class _Bucket:
    tokens: float
    last: float


def now_text() -> str:
    """Now, as the API's seconds-precision RFC 3339 timestamps (Event times, annotations)."""
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class EventRecorder:
    def __init__(self, transport: Transport, identity: str = COMPONENT, *,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.transport = transport
        self.identity = identity
        self._clock = clock
        self._written: OrderedDict[tuple[str, ...], _Written] = OrderedDict()
        self._buckets: OrderedDict[tuple[str, str, str], _Bucket] = OrderedDict()
        #: Events not sent because their object exceeded its budget.
        self.dropped = 0
        # The actuator records from several threads; one Event at a time keeps the caches whole.
        self._lock = threading.Lock()

    def _allowed(self, obj: tuple[str, str, str]) -> bool:
        now = self._clock()
        bucket = self._buckets.pop(obj, None) or _Bucket(float(SPAM_BURST), now)
        bucket.tokens = min(float(SPAM_BURST), bucket.tokens + (now - bucket.last) / SPAM_REFILL_SECONDS)
        bucket.last = now
        self._buckets[obj] = bucket
        if len(self._buckets) > CACHE_SIZE:
            self._buckets.popitem(last=False)
        if bucket.tokens < 1.0:
            return False
        bucket.tokens -= 1.0
        return True

    def record(self, kind: str, namespace: str, name: str, reason: str, message: str, *, warning: bool) -> bool:
        """Write (or count) one Event; False when dropped by the spam filter.

        Raises the seam's typed errors; the caller decides whether they matter.
        """
        with self._lock:
            return self._record(kind, namespace, name, reason, message, warning=warning)

    def _record(self, kind: str, namespace: str, name: str, reason: str, message: str, *, warning: bool) -> bool:
        type_ = "Warning" if warning else "Normal"
        message = message[:1024]
        if not self._allowed((kind, namespace, name)):
            self.dropped += 1
            return False
        key = (kind, namespace, name, type_, reason, message)
        # Events about cluster-scoped objects (nodes) live in "default", as kubectl shows them.
        ns = namespace or "default"
        now = now_text()
        written = self._written.get(key)
        if written is not None:
            try:
                self.transport.request(
                    "PATCH", f"/api/v1/namespaces/{written.namespace}/events/{written.name}",
                    body={"count": written.count + 1, "lastTimestamp": now}, content_type=MERGE_PATCH,
                    what=f"event {reason} on {kind} {name}")
                written.count += 1
                self._written.move_to_end(key)
                return True
            except NotFound:
                del self._written[key]  # expired (the API server's event TTL): write it anew
        body: Json = {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"generateName": f"{name}.", "namespace": ns},
            "involvedObject": {"kind": kind, "name": name, "apiVersion": "v1",
                               **({"namespace": namespace} if namespace else {})},
            "reason": reason, "message": message, "type": type_,
            "source": {"component": COMPONENT}, "reportingComponent": COMPONENT,
            "reportingInstance": self.identity, "firstTimestamp": now, "lastTimestamp": now, "count": 1,
        }
        created = self.transport.request("POST", f"/api/v1/namespaces/{ns}/events", body=body,
                                         what=f"event {reason} on {kind} {name}")
        created_name = str((created.get("metadata") or {}).get("name") or "")
        if created_name:
            self._written[key] = _Written(ns, created_name, 1)
            if len(self._written) > CACHE_SIZE:
                self._written.popitem(last=False)
        return True

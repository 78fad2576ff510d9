"""Leader election on a ``coordination.k8s.io/v1`` Lease, as client-go's leaderelection does.

Semantics (client-go tools/leaderelection/leaderelection.go, semantics only): a
candidate reads the Lease; it may take it when it holds it already, when no one
holds it, or when the record has not changed for ``lease_duration`` seconds *as
observed on the candidate's own clock* (so clocks of different machines never
compare). Writes are optimistic (the Lease's resourceVersion: a 409 means someone
else wrote first). The leader renews every ``retry_period``.

``is_leader`` is True only while the last successful renewal is younger than
``renew_deadline``: a leader that cannot renew stops acting at once, before any
other candidate may take the lease (``renew_deadline < lease_duration``). Pass
``elector.is_leader`` as the adapter's ``may_act``. ``stop()`` releases the lease
(empty holder) so a successor need not wait for it to expire.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from kube.clusterapi import ClusterAPIError, NotFound
from kubeapi.transport import Transport

__all__ = ["LeaderElector"]

log = logging.getLogger(__name__)

Json = dict[str, Any]


def _micro_time() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    def __init__(self, transport: Transport, namespace: str, name: str, identity: str, *,
                 lease_duration: float = 15.0, renew_deadline: float = 10.0, retry_period: float = 2.0,
                 clock: Callable[[], float] = time.monotonic,
                 on_started: Callable[[], None] | None = None,
                 on_stopped: Callable[[], None] | None = None) -> None:
        if not retry_period < renew_deadline < lease_duration:
            raise ValueError("leader election needs retry_period < renew_deadline < lease_duration")
        self.transport, self.namespace, self.name, self.identity = transport, namespace, name, identity
        self.lease_duration, self.renew_deadline, self.retry_period = lease_duration, renew_deadline, retry_period
        self._clock = clock
        self._on_started, self._on_stopped = on_started, on_stopped
        self._lock = threading.Lock()
        self._renewed_at: float | None = None  # our clock, last successful acquire/renew
        self._observed: Json | None = None  # the lease spec last seen
        self._observed_at = 0.0
        self._leading = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"leader-{name}", daemon=True)
        self.path = f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"

    # --- state ----------------------------------------------------------
    def is_leader(self) -> bool:
        with self._lock:
            return self._renewed_at is not None and self._clock() - self._renewed_at < self.renew_deadline

    def holder(self) -> str:
        """The holder last observed ("" when none)."""
        with self._lock:
            return str((self._observed or {}).get("holderIdentity") or "")

    # --- life cycle -----------------------------------------------------
    def start(self) -> None:
        self._thread.start()

    def stop(self, release: bool = True) -> None:
        self._stop.set()
        if self._thread.ident is not None:  # started
            self._thread.join(timeout=self.retry_period + 5)
        if release and self.is_leader():
            self._release()
        self._set_leading(False)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.try_acquire_or_renew()
            self._set_leading(self.is_leader())
            self._stop.wait(self.retry_period)

    def _set_leading(self, leading: bool) -> None:
        if leading == self._leading:
            return
        self._leading = leading
        log.info("%s %s the lease %s/%s", self.identity, "acquired" if leading else "lost", self.namespace,
                 self.name)
        callback = self._on_started if leading else self._on_stopped
        if callback is not None:
            callback()

    # --- one attempt ----------------------------------------------------
    def try_acquire_or_renew(self) -> bool:
        """One round of client-go's tryAcquireOrRenew; True when we hold the lease now."""
        now = self._clock()
        try:
            try:
                lease = self.transport.request("GET", f"{self.path}/{self.name}", what=f"lease {self.name}")
            except NotFound:
                self.transport.request("POST", self.path, body=self._lease({}, None), what=f"lease {self.name}")
                return self._won(now, None)
            spec = lease.get("spec") or {}
            with self._lock:
                if spec != self._observed:
                    self._observed, self._observed_at = spec, now
                observed_at = self._observed_at
            holder = str(spec.get("holderIdentity") or "")
            duration = float(spec.get("leaseDurationSeconds") or self.lease_duration)
            if holder and holder != self.identity and now < observed_at + duration:
                self._lost()
                return False
            body = self._lease(spec, (lease.get("metadata") or {}).get("resourceVersion"))
            updated = self.transport.request("PUT", f"{self.path}/{self.name}", body=body, what=f"lease {self.name}")
            return self._won(now, updated.get("spec"))
        except ClusterAPIError as exc:
            # Conflicts and transient errors: this round failed; is_leader decays on its own.
            log.debug("lease %s/%s: %s", self.namespace, self.name, exc)
            return False

    def _lease(self, spec: Json, resource_version: object) -> Json:
        now = _micro_time()
        mine = spec.get("holderIdentity") == self.identity
        transitions = int(spec.get("leaseTransitions") or 0)
        new_spec = {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": int(self.lease_duration),
            "acquireTime": spec.get("acquireTime") if mine else now,
            "renewTime": now,
            "leaseTransitions": transitions if mine or not spec else transitions + 1,
        }
        meta: Json = {"name": self.name, "namespace": self.namespace}
        if resource_version:
            meta["resourceVersion"] = resource_version
        return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": meta, "spec": new_spec}

    def _won(self, now: float, spec: object) -> bool:
        with self._lock:
            self._renewed_at = now
            if isinstance(spec, dict):
                self._observed, self._observed_at = spec, now
        return True

    def _lost(self) -> None:
        with self._lock:
            self._renewed_at = None

    def _release(self) -> None:
        try:
            lease = self.transport.request("GET", f"{self.path}/{self.name}", what=f"lease {self.name}")
            spec = dict(lease.get("spec") or {})
            if spec.get("holderIdentity") != self.identity:
                return
            spec.update({"holderIdentity": "", "leaseDurationSeconds": 1, "renewTime": _micro_time()})
            body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                    "metadata": {"name": self.name, "namespace": self.namespace,
                                 "resourceVersion": (lease.get("metadata") or {}).get("resourceVersion")},
                    "spec": spec}
            self.transport.request("PUT", f"{self.path}/{self.name}", body=body, what=f"lease {self.name}")
        except ClusterAPIError as exc:
            log.warning("lease %s/%s not released: %s", self.namespace, self.name, exc)
        finally:
            self._lost()

"""Connecting ``run`` to the live Kubernetes adapter (``kubeapi``): the one place that knows its API.

``connect`` builds the adapter from ``--kubeconfig`` (empty: in-cluster), checks the API
server answers at all (one request, so an unreachable server is one line at once, not
a wait), starts the watches and waits for the first complete view for at most
``--cache-sync-timeout``, and sets up leader election on the ``coordination.k8s.io/v1``
Lease ``--leader-elect-resource-name`` (client-go's identity: hostname and a random
suffix). The adapter gates its own mutating calls on the lease too.
"""

from __future__ import annotations

import gc
import socket
import threading
import time
import uuid

from app.run.command import Live, StartupCancelled, StartupError
from app.run.flags import RunSettings
from app.run.leader import AlwaysLeader, Leadership
from kube.clusterapi import ClusterAPIError, TransientAPIError
from kube.featuregates import FeatureGates
from kubeapi import ConfigError, Forbidden, KubeClusterAPI, LeaderElector

__all__ = ["connect"]


def _identity() -> str:
    return f"{socket.gethostname()}_{uuid.uuid4()}"


def connect(settings: RunSettings, stop: threading.Event, gates: FeatureGates | None = None) -> Live:
    """The connected adapter and its leadership; raises ``StartupError`` with one line."""
    electors: list[LeaderElector] = []

    def holds_lease() -> bool:
        # The elector needs the adapter's transport, so it is made after the adapter.
        return bool(electors) and electors[0].is_leader()

    try:
        api = KubeClusterAPI.from_kubeconfig(
            settings.kubeconfig or None, namespace=settings.namespace, qps=settings.kube_client_qps,
            burst=settings.kube_client_burst, storage=settings.provider.storage,
            may_act=holds_lease if settings.leader.enabled else None,
            status_configmap=settings.status_config_map_name, gates=gates)
    except ConfigError as exc:
        raise StartupError(f"--kubeconfig: {exc}") from None
    host = api.transport.api_client.configuration.host
    try:
        api.transport.request("GET", "/version", what=f"the API server at {host}")
    except (TransientAPIError, Forbidden) as exc:
        raise StartupError(f"cannot use the API server: {exc}") from None
    except ClusterAPIError:
        pass  # it answered; what /version says does not matter
    api.start()
    deadline = time.monotonic() + settings.cache_sync_seconds
    while not api.wait_synced(min(0.2, max(0.0, deadline - time.monotonic()))):
        if stop.is_set() or time.monotonic() >= deadline:
            reason = api.caches.unavailable_reason() or "not synced"
            api.stop()
            if stop.is_set():
                raise StartupCancelled
            raise StartupError(f"the API server at {host}: no complete view within "
                               f"--cache-sync-timeout={settings.cache_sync_seconds:g}s: {reason}")
    # Once, after the first complete sync: the caches' model objects are long-lived and
    # acyclic, so the collector need not rescan them every generation-2 pass. Bounded
    # (never repeated), unlike freezing after every relist would be.
    gc.freeze()
    leadership: Leadership = AlwaysLeader()
    if settings.leader.enabled:
        lead = settings.leader
        electors.append(LeaderElector(api.transport, settings.lease_namespace, lead.resource_name, _identity(),
                                      lease_duration=lead.lease_duration, renew_deadline=lead.renew_deadline,
                                      retry_period=lead.retry_period))
        leadership = electors[0]
    return Live(api, leadership, api.stop)

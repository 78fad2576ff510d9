"""``KubeClusterAPI``: the ``ClusterAPI`` seam over watch caches and the official client.

Reads come from memory (``Caches``): a loop makes no LIST call. When any cache is
not synced or its watch is lost, ``list_objects`` raises ``ViewUnavailable`` with
the reason, logs it once per new reason and counts it, so the loop skips instead
of deciding on a partial view. Acting goes through ``Acting``, gated by the leader
lease when one is given.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from kube.clusterapi import EvictionResult, ViewUnavailable
from kube.featuregates import FeatureGates
from kube.model import ClusterObjects, Pod, Taint
from kube.names import StorageNames
from kubeapi.acting import STATUS_CONFIGMAP, Acting, RetryPolicy
from kubeapi.caches import Caches
from kubeapi.config import api_client
from kubeapi.events import COMPONENT
from kubeapi.kinds import KINDS
from kubeapi.leader import LeaderElector
from kubeapi.ratelimit import TokenBucket
from kubeapi.transport import Timeout, Transport

__all__ = ["KubeClusterAPI"]

log = logging.getLogger(__name__)

DEFAULT_NAMES = StorageNames()
DEFAULT_RETRY = RetryPolicy()


class KubeClusterAPI:
    """The live cluster. ``start()`` begins the watches; ``synced`` says when a loop may run."""

    def __init__(self, transport: Transport, *, namespace: str = "kube-system",
                 storage: StorageNames = DEFAULT_NAMES, identity: str = COMPONENT, watch_seconds: int = 300,
                 retry: RetryPolicy = DEFAULT_RETRY, backoff: tuple[float, float] = (0.2, 30.0),
                 may_act: Callable[[], bool] | None = None, kinds: Sequence[str] | None = None,
                 status_configmap: str = STATUS_CONFIGMAP, gates: FeatureGates | None = None) -> None:
        self.transport = transport
        self.namespace = namespace
        selected = KINDS if kinds is None else tuple(k for k in KINDS if k.name in kinds)
        unknown = set(kinds or ()) - {k.name for k in KINDS}
        if unknown:
            raise ValueError(f"unknown caches {sorted(unknown)}; known: {[k.name for k in KINDS]}")
        self.caches = Caches(transport, storage, namespace=namespace, kinds=selected, watch_seconds=watch_seconds,
                             backoff=backoff, gates=gates)
        self.acting = Acting(transport, namespace, identity=identity, retry=retry, may_act=may_act,
                             status_configmap=status_configmap)
        #: Loops refused a view (``ViewUnavailable``), and the reason last given.
        self.unavailable_count = 0
        self.last_unavailable: str | None = None

    @classmethod
    def from_kubeconfig(cls, path: str | None, *, namespace: str = "kube-system", qps: float = 5.0,
                        burst: int = 10, storage: StorageNames = DEFAULT_NAMES, context: str | None = None,
                        timeout: Timeout = (5.0, 30.0), identity: str = COMPONENT, watch_seconds: int = 300,
                        retry: RetryPolicy = DEFAULT_RETRY, backoff: tuple[float, float] = (0.2, 30.0),
                        may_act: Callable[[], bool] | None = None,
                        kinds: Sequence[str] | None = None,
                        status_configmap: str = STATUS_CONFIGMAP,
                        gates: FeatureGates | None = None) -> KubeClusterAPI:
        """Configure the official client from ``path`` (None: in-cluster, else the default kubeconfig).

        ``qps``/``burst``: the client-side token bucket (``--kube-client-qps/-burst``).
        ``timeout``: (connect, read) seconds of every non-watch request.
        ``gates``: the feature gates objects are read under (``--feature-gates``).
        ``kinds``: the caches to run (names of ``kubeapi.kinds.KINDS``; None: all, which
        ``list_objects`` needs; a subset suits a reader such as the scheduler extender).
        Raises ``kubeapi.config.ConfigError`` (one line) when no configuration loads.
        """
        transport = Transport(api_client(path, context=context), TokenBucket(qps, burst), timeout=timeout)
        return cls(transport, namespace=namespace, storage=storage, identity=identity, watch_seconds=watch_seconds,
                   retry=retry, backoff=backoff, may_act=may_act, kinds=kinds, status_configmap=status_configmap,
                   gates=gates)

    def elect(self, lease: str, identity: str, *, lease_duration: float = 15.0, renew_deadline: float = 10.0,
              retry_period: float = 2.0, on_started: Callable[[], None] | None = None,
              on_stopped: Callable[[], None] | None = None) -> LeaderElector:
        """A ``LeaderElector`` on the Lease ``namespace/lease``, and act only while it leads.

        Every mutating call raises ``NotLeader`` unless ``elector.is_leader()`` (call
        ``start()`` on the elector; ``stop()`` releases the lease).
        """
        elector = LeaderElector(self.transport, self.namespace, lease, identity, lease_duration=lease_duration,
                                renew_deadline=renew_deadline, retry_period=retry_period, on_started=on_started,
                                on_stopped=on_stopped)
        self.acting.may_act = elector.is_leader
        return elector

    # --- life cycle -----------------------------------------------------
    def start(self) -> None:
        self.caches.start()

    def stop(self) -> None:
        self.caches.stop()

    def wait_synced(self, timeout: float) -> bool:
        return self.caches.wait_synced(timeout)

    @property
    def synced(self) -> bool:
        return self.caches.synced

    # --- reading --------------------------------------------------------
    def list_objects(self) -> ClusterObjects:
        try:
            objects = self.caches.objects()
        except ViewUnavailable as exc:
            self.unavailable_count += 1
            if str(exc) != self.last_unavailable:
                log.warning("no complete view of the cluster, skipping: %s", exc)
            self.last_unavailable = str(exc)
            raise
        self.last_unavailable = None
        return objects

    def pods_on_node(self, node: str) -> Sequence[Pod]:
        return self.caches.pods_on_node(node)

    # --- acting ---------------------------------------------------------
    def taint_node(self, node: str, taint: Taint) -> None:
        self.acting.taint_node(node, taint)

    def untaint_node(self, node: str, key: str) -> None:
        self.acting.untaint_node(node, key)

    def evict_pod(self, namespace: str, name: str, grace_period_seconds: int | None = None) -> EvictionResult:
        return self.acting.evict_pod(namespace, name, grace_period_seconds)

    def annotate_node(self, node: str, key: str, value: str | None) -> None:
        self.acting.annotate_node(node, key, value)

    def record_event(self, kind: str, namespace: str, name: str, reason: str, message: str, *,
                     warning: bool = False) -> None:
        self.acting.record_event(kind, namespace, name, reason, message, warning=warning)

    def write_status(self, text: str) -> None:
        self.acting.write_status(text)

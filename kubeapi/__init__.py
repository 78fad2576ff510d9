"""The live Kubernetes adapter: the ``ClusterAPI`` seam over the official client.

List-then-watch caches convert objects to the model as events arrive, so a loop
builds its snapshot from memory; acting (taints, evictions, events, the status
ConfigMap) and leader election go through the same client.

Public entry points (import from ``kubeapi``)::

    api = KubeClusterAPI.from_kubeconfig(
        path,                      # None: in-cluster service account, else the default kubeconfig
        namespace="kube-system",   # status ConfigMap, priority-expander ConfigMap, leases
        qps=5.0, burst=10,         # client-side token bucket (--kube-client-qps/-burst)
        storage=StorageNames(),    # kube.names.StorageNames
        timeout=(5.0, 30.0),       # (connect, read) seconds of each non-watch request
        identity="cluster-autoscaler",  # reportingInstance of Events
        watch_seconds=300,         # server-side timeout of one watch (it is then reopened)
        retry=RetryPolicy(),       # tenacity attempts/backoff for transient errors and 409s
        may_act=None,              # e.g. elector.is_leader: every mutating call is refused when False
        kinds=None,                # None: every cache; or a subset of kubeapi.kinds.KINDS names, e.g.
                                   # ("nodes", "pods", "persistentvolumeclaims") for a reader
    )                              # raises ConfigError (one line) on a bad kubeconfig
    api.start(); api.wait_synced(timeout=60); api.synced; api.stop()
    api.list_objects()             # ClusterObjects from memory, or raises ViewUnavailable(reason)
    api.unavailable_count, api.last_unavailable      # loops refused a view, and why
    api.transport.calls            # Counter of requests by "VERB resource" ("LIST pods", "PATCH nodes")
    api.acting.failures            # Counter of operations given up on ("taint", "evict", "event", ...)
    api.acting.events.dropped      # Events dropped by the per-object spam filter (repeats are counted
                                   # on the existing Event, as client-go's recorder does)
    api.transport.request(method, path, body=..., content_type=...)   # raw JSON, rate-limited, typed errors

The ``ClusterAPI`` methods (taint_node, untaint_node, evict_pod, record_event,
write_status) retry transient errors (RetryPolicy) and conflicts; evict_pod returns
REFUSED on 429 (a PDB) and GONE on 404; record_event never raises on API errors.

The caches (``api.caches``, a ``Caches``) return ``kube.model`` objects::

    caches.nodes() -> list[Node] (sorted by name)     caches.pods() -> list[Pod]
    caches.pod(ns, name) -> Pod | None                caches.pods_on_node(node) -> list[Pod]
    caches.claims() -> {(ns, name): PVC}              caches.volumes() -> {name: PV}
    caches.storage_classes() -> {name: StorageClass}  caches.pdbs() -> list[PodDisruptionBudget]
    caches.objects() -> ClusterObjects (consistent, under one lock; raises ViewUnavailable)
    caches.synced / caches.unavailable_reason()       # None when complete and current
    caches.version                                    # incremented on every change
    caches.add_listener(fn)    # fn(cache_name, "ADDED"|"MODIFIED"|"DELETED"|"SYNCED", model object or None),
                               # called on the informer's thread after the change is applied; on
                               # "SYNCED" (a LIST replaced the cache whole) re-read that cache
    caches.status()            # {name: {synced, down, objects, resource_version, relists, watch_errors,
                               #         unconvertible}}: for health endpoints and metrics
    caches.informers[name]     # per kind: synced, down, resource_version, relists, watch_errors

Cache names (``kubeapi.kinds.KINDS``): nodes, pods, persistentvolumeclaims, persistentvolumes,
storageclasses, csinodes, csidrivers, csistoragecapacities, volumeattachments, poddisruptionbudgets, namespaces,
replicasets, statefulsets, deployments, daemonsets, jobs, replicationcontrollers, priorityconfig.

Leader election on a ``coordination.k8s.io/v1`` Lease::

    elector = api.elect("cluster-autoscaler", identity)   # in api.namespace; gates api's writes
    elector.start(); elector.is_leader(); elector.stop()   # stop() releases the lease

or by hand::

    elector = LeaderElector(api.transport, namespace, "cluster-autoscaler", identity,
                            lease_duration=15, renew_deadline=10, retry_period=2,
                            on_started=..., on_stopped=...)
    elector.start(); elector.is_leader(); elector.stop()   # stop() releases the lease

Errors: ``kube.clusterapi`` types (NotFound, Conflict, TransientAPIError,
ViewUnavailable) plus ``NotLeader`` (acting without the lease), ``ConfigError``,
``Forbidden`` (401/403), all ``ClusterAPIError``.
"""

from kubeapi.acting import STATUS_CONFIGMAP, NotLeader, RetryPolicy
from kubeapi.adapter import KubeClusterAPI
from kubeapi.caches import Caches
from kubeapi.config import ConfigError
from kubeapi.informer import Listener
from kubeapi.leader import LeaderElector
from kubeapi.ratelimit import TokenBucket
from kubeapi.transport import Forbidden, Transport

__all__ = [
    "STATUS_CONFIGMAP",
    "Caches",
    "ConfigError",
    "Forbidden",
    "KubeClusterAPI",
    "LeaderElector",
    "Listener",
    "NotLeader",
    "RetryPolicy",
    "TokenBucket",
    "Transport",
]

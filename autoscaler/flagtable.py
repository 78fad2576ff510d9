"""The decision flags, one row each: shared by ``plan``, ``simulate`` and ``run``.

Names, defaults and meanings are upstream Cluster Autoscaler's (its FAQ's flag table,
``config/flags/flags.go``); rows marked ``ours`` are this project's (storage, see
``docs/storage-semantics.md``). Rows with ``ignored`` are CA's flags that have no
counterpart here: accepted, type-checked, one warning when given. ``run``'s own
flags (API server, cloud, leader election, logging) are in ``app.run.flagtable``.
How to add a flag: ``autoscaler.flagspec``'s docstring.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from enum import StrEnum
from typing import Any

from autoscaler.flagspec import (
    Flag,
    Kind,
    bool_flag,
    duration_flag,
    float_flag,
    int_flag,
    min_max_flag,
    non_negative_int,
    positive_quantity_flag,
    quantity_flag,
    ratio_flag,
    signed_duration_flag,
)
from kube.names import StorageNames

__all__ = ["DECISION_FLAGS", "EXPANDERS", "ScaleDownMode", "ScaleDownOrder"]

B, L = Kind.BOOL, Kind.LIST


class ScaleDownMode(StrEnum):
    """``--scale-down-mode``: upstream's per-node thresholds, or seed 001's cluster-wide check."""

    PER_NODE = "per-node"
    CLUSTER_WIDE = "cluster-wide"


class ScaleDownOrder(StrEnum):
    """``--scale-down-order``: which candidates are simulated, and deleted, first (``scaledown/cost.py``)."""

    #: Least disruption first: bytes of local volumes to unpin, then the pods that restart.
    DISRUPTION_COST = "disruption-cost"
    #: Upstream CA's: empty nodes first, then by name.
    UPSTREAM = "upstream"


EXPANDERS = ("random", "most-pods", "least-waste", "least-nodes", "price", "priority")


def _order(text: str) -> ScaleDownOrder:
    try:
        return ScaleDownOrder(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not one of {', '.join(o.value for o in ScaleDownOrder)}") from None

_ST = StorageNames()
_NO_SOFT_TAINT = "no PreferNoSchedule soft taints are set on unneeded nodes"
_ALL_NODES = "every node is a scale-down candidate in every loop"
_NO_GPU = "GPUs are not modelled"
_DELETE_AT_ONCE = "a drained node is deleted as soon as its pods are gone"
_SIMILAR = "similar groups are compared by capacity and labels, as --balancing-ignore-label says"
_SERIAL = "the simulation runs in one thread"


def _up(name: str, help: str, parse: Callable[[str], Any], default: Any, field: str, *,
        kind: Kind = Kind.VALUE, **kw: Any) -> Flag:
    return Flag(name, help, parse, default, f"scale_up.{field}", kind, **kw)


def _down(name: str, help: str, parse: Callable[[str], Any], default: Any, field: str, *,
          kind: Kind = Kind.VALUE, **kw: Any) -> Flag:
    return Flag(name, help, parse, default, f"scale_down.{field}", kind, **kw)


def _expander_help() -> str:
    return ("Expander chain, comma-separated, each filtering the previous one's choices; ties left at the end are "
            "broken at random. One of: " + ", ".join(EXPANDERS) + ".")


DECISION_FLAGS: tuple[Flag, ...] = (
    # --- scale-up -----------------------------------------------------------------
    _up("expander", _expander_help(), str, "least-waste", "expanders"),
    _up("max-nodes-total", "Cluster-wide cap on nodes across all groups; 0 = no cap.", non_negative_int, 0,
        "max_nodes_total"),
    _up("cores-total", "MIN:MAX whole cores of node capacity the cluster may have.", min_max_flag, (0, 320000),
        "cores_total", metavar="MIN:MAX"),
    _up("memory-total", "MIN:MAX GiB of node memory the cluster may have.", min_max_flag, (0, 6400000),
        "memory_total_gib", metavar="MIN:MAX"),
    _up("max-nodes-per-scaleup", "Estimator cap on new nodes in one decision (latency, not rate limiting).",
        non_negative_int, 1000, "max_nodes_per_scaleup"),
    _up("max-nodegroup-binpacking-duration", "Estimator time budget per node group.", duration_flag, 10.0,
        "max_binpacking_seconds"),
    _up("balance-similar-node-groups", "Spread a scale-up over node groups that look alike.", bool_flag, False,
        "balance_similar", kind=B),
    _up("balancing-ignore-label", "A label ignored when comparing node groups (repeatable).", str, [],
        "balancing_ignore_labels", kind=L),
    _up("expendable-pods-priority-cutoff", "Pods below this priority never trigger a scale-up and never block "
        "a scale-down.", int_flag, -10, "expendable_priority_cutoff"),
    _up("max-node-provision-time", "A requested node not registered by then counts as failed.", duration_flag,
        900.0, "max_node_provision_seconds"),
    _up("max-node-startup-time", "Registered but unready nodes count as upcoming until then.", duration_flag,
        900.0, "max_node_startup_seconds"),
    _up("new-pod-scale-up-delay", "Pods younger than this do not trigger a scale-up yet.", duration_flag, 0.0,
        "new_pod_scale_up_delay"),
    _up("ignore-taint", "A taint removed from node templates (a readiness taint; repeatable).", str, [],
        "ignore_taints", kind=L),
    _up("startup-taint", "A taint removed from node templates, as --ignore-taint (repeatable).", str, [],
        "ignore_taints", kind=L),
    _up("status-taint", "A taint removed from node templates; here the same as --startup-taint (repeatable).",
        str, [], "ignore_taints", kind=L),
    _up("initial-node-group-backoff-duration", "First backoff of a group after a failed scale-up.", duration_flag,
        300.0, "initial_backoff_seconds"),
    _up("max-node-group-backoff-duration", "Backoffs double up to this.", duration_flag, 1800.0,
        "max_backoff_seconds"),
    _up("node-group-backoff-reset-timeout", "A group's failures older than this are forgotten.", duration_flag,
        10800.0, "backoff_reset_seconds"),
    Flag("estimator", "How new nodes are estimated; binpacking is the only estimator.", str, "binpacking",
         choices=("binpacking",)),
    Flag("scan-interval", "How often the loop runs (simulate: the scenario's own interval unless given).",
         duration_flag, 10.0, "scan_interval"),
    Flag("priority-config", "File with the priority expander's priorities YAML (plan and simulate; run reads "
         "the cluster-autoscaler-priority-expander ConfigMap).", str, None, "priority_config_file",
         metavar="FILE", ours=True),
    Flag("random-seed", "Seed of the random expander (reproducible runs).", int_flag, None, "random_seed",
         ours=True),
    # --- scale-down ---------------------------------------------------------------
    _down("scale-down-enabled", "Remove nodes that are not needed.", bool_flag, True, "enabled", kind=B),
    _down("scale-down-utilization-threshold", "A node whose max(cpu, memory) requests over allocatable is at or "
          "below this is underutilized.", ratio_flag, 0.5, "utilization_threshold"),
    _down("scale-down-storage-utilization-threshold", "A node whose local storage use is above this is kept.",
          ratio_flag, 0.5, "storage_utilization_threshold", ours=True),
    _down("scale-down-unneeded-time", "How long a node must be unneeded before it is removed.", duration_flag,
          600.0, "unneeded_seconds"),
    _down("scale-down-unready-time", "How long an unready node must be unneeded before it is removed; negative: "
          "never (its data would be lost).", signed_duration_flag, 1200.0, "unready_seconds"),
    _down("scale-down-unready-enabled", "Remove unready nodes too.", bool_flag, True, "unready_enabled", kind=B),
    _down("scale-down-delay-after-add", "Scale-down pauses this long after a scale-up.", duration_flag, 600.0,
          "delay_after_add"),
    _down("scale-down-delay-after-delete", "Scale-down pauses this long after a node deletion.", duration_flag,
          0.0, "delay_after_delete"),
    _down("scale-down-delay-after-failure", "Scale-down pauses this long after a failed one.", duration_flag,
          180.0, "delay_after_failure"),
    _down("max-scale-down-parallelism", "Nodes (empty or drained) deleted at once, at most.", non_negative_int, 10,
          "max_parallelism"),
    _down("max-drain-parallelism", "Non-empty nodes drained at once, at most.", non_negative_int, 1,
          "max_drain_parallelism"),
    _down("max-pod-eviction-time", "How long refused evictions of a pod are retried.", duration_flag, 120.0,
          "max_pod_eviction_seconds"),
    _down("max-graceful-termination-sec", "Grace period given to evicted pods, at most (seconds).",
          non_negative_int, 600, "max_graceful_termination_seconds"),
    _down("max-volume-detach-time", "After a drain, how long to wait for the node's VolumeAttachments to go before "
          "the instance is deleted anyway (0: no wait); below the attach-detach controller's 6-minute force-detach.",
          duration_flag, 300.0, "max_volume_detach_seconds", ours=True),
    _down("scale-down-order", "disruption-cost (the default when storage-aware): nodes whose removal unpins the "
          "fewest bytes of local volumes and restarts the fewest pods go first; upstream: CA's order (empty nodes "
          "first, then by name; the default with --storage-aware=false).", _order, None, "order", ours=True,
          choices=tuple(o.value for o in ScaleDownOrder), shown='"disruption-cost"'),
    _down("storage-unpin-throughput", "Bytes per second the storage driver unpins (snapshots and uploads) a node's "
          "local volumes; with a node's bytes it predicts its drain deadline (twice that, never below "
          "--max-pod-eviction-time). The prior: until a drain is observed deadlines assume a quarter of it; "
          "then the slowest throughput of the last 20 drains replaces it.",
          positive_quantity_flag, 2**30, "unpin_bytes_per_second", ours=True,
          metavar="QUANTITY", shown="1Gi"),
    _down("scale-down-max-unpin-bytes-in-flight", "No new removal starts while the bytes of local volumes being "
          "unpinned would exceed this (0: unlimited).", quantity_flag, 0, "max_unpin_bytes_in_flight", ours=True,
          metavar="QUANTITY"),
    _down("skip-nodes-with-system-pods", "Keep nodes with kube-system pods (not DaemonSet or mirror pods) "
          "that have no PodDisruptionBudget.", bool_flag, True, "skip_nodes_with_system_pods", kind=B),
    _down("skip-nodes-with-local-storage", "Keep nodes with pods using emptyDir or hostPath volumes.", bool_flag,
          True, "skip_nodes_with_local_storage", kind=B),
    _down("skip-nodes-with-custom-controller-pods", "Keep nodes with pods owned by controllers CA does not know.",
          bool_flag, True, "skip_nodes_with_custom_controller_pods", kind=B),
    _down("min-replica-count", "Replicated pods of controllers with fewer replicas block scale-down.",
          non_negative_int, 0, "min_replica_count"),
    _down("blocking-system-pod-distruption-timeout", "A kube-system pod without a PodDisruptionBudget stops "
          "blocking scale-down once it is older than this (upstream's spelling).", duration_flag, 3600.0,
          "blocking_system_pod_disruption_seconds"),
    _down("ignore-daemonsets-utilization", "Leave DaemonSet pods out of node utilization.", bool_flag, False,
          "ignore_daemonsets_utilization", kind=B),
    _down("ignore-mirror-pods-utilization", "Leave mirror (static) pods out of node utilization.", bool_flag,
          False, "ignore_mirror_pods_utilization", kind=B),
    _down("scale-down-simulation-timeout", "Time budget of one loop's removal simulation.", duration_flag, 30.0,
          "simulation_timeout"),
    _down("scale-down-mode", "per-node: CA's per-node thresholds; cluster-wide: one cluster-wide check.", str,
          ScaleDownMode.PER_NODE.value, "mode", choices=tuple(m.value for m in ScaleDownMode),
          convert=ScaleDownMode, ours=True),
    _down("scale-down-cluster-cpu-threshold", "cluster-wide mode: CPU utilization below which nodes go.",
          ratio_flag, 0.5, "cluster_cpu_threshold", ours=True),
    _down("scale-down-cluster-memory-threshold", "cluster-wide mode: memory utilization below which nodes go.",
          ratio_flag, 0.5, "cluster_memory_threshold", ours=True),
    # --- storage (ours) -----------------------------------------------------------
    Flag("storage-aware", "false: every storage extension off (upstream CA's decisions).", bool_flag, True,
         "storage_aware", B, ours=True),
    Flag("storage-provisioner", "The node-local volume provisioner's name.", str, _ST.provisioner,
         "storage.provisioner", ours=True),
    Flag("storage-capacity-annotation", "Node annotation with the driver-reported free local bytes.", str,
         _ST.capacity_annotation, "storage.capacity_annotation", ours=True),
    Flag("storage-max-capacity-label", "Node label with the node's total local bytes.", str,
         _ST.max_capacity_label, "storage.max_capacity_label", ours=True),
    Flag("storage-guard-pod-selector", "Label selector of the storage driver's guard pods.", str,
         _ST.guard_pod_selector, "storage.guard_pod_selector", ours=True),
    # --- CA's decision flags with no counterpart here -------------------------------
    Flag("balancing-label", "Compare node groups by these labels only (repeatable).", str, [], kind=L,
         ignored=_SIMILAR),
    Flag("max-allocatable-difference-ratio", "Allocatable difference allowed between similar groups.",
         float_flag, 0.05, ignored=_SIMILAR),
    Flag("max-free-difference-ratio", "Free-resource difference allowed between similar groups.", float_flag,
         0.05, ignored=_SIMILAR),
    Flag("memory-difference-ratio", "Memory capacity difference allowed between similar groups.", float_flag,
         0.015, ignored=_SIMILAR),
    Flag("max-binpacking-time", "Time budget of all bin-packing in one scale-up.", duration_flag, 300.0,
         ignored="only the per-group budget --max-nodegroup-binpacking-duration applies"),
    Flag("max-bulk-soft-taint-count", "Nodes soft-tainted at once, at most.", int_flag, 10, ignored=_NO_SOFT_TAINT),
    Flag("max-bulk-soft-taint-time", "Time budget of soft tainting.", duration_flag, 3.0, ignored=_NO_SOFT_TAINT),
    Flag("node-delete-delay-after-taint", "Wait between tainting a node and deleting it.", duration_flag, 5.0,
         ignored=_DELETE_AT_ONCE),
    Flag("dynamic-node-delete-delay-after-taint-enabled", "Adapt the delay after taint to API latency.",
         bool_flag, False, kind=B, ignored=_DELETE_AT_ONCE),
    Flag("node-deletion-batcher-interval", "How long deletions are gathered into one batch.", duration_flag, 0.0,
         ignored="each group's deletions of a loop go in one call"),
    Flag("node-deletion-candidate-ttl", "How long a removal mark stays valid.", duration_flag, 0.0,
         ignored="unneeded times live in memory only"),
    Flag("node-deletion-delay-timeout", "Wait for delay-deletion annotations to go.", duration_flag, 120.0,
         ignored="delay-deletion annotations are not read"),
    Flag("scale-down-candidates-pool-min-count", "Extra non-empty candidates per loop, at least.", int_flag, 50,
         ignored=_ALL_NODES),
    Flag("scale-down-candidates-pool-ratio", "Extra non-empty candidates per loop, as a ratio of nodes.",
         float_flag, 0.1, ignored=_ALL_NODES),
    Flag("scale-down-non-empty-candidates-count", "Non-empty candidates per loop, at most.", int_flag, 30,
         ignored=_ALL_NODES),
    Flag("scale-down-delay-type-local", "Apply the scale-down delays per node group.", bool_flag, False, kind=B,
         ignored="the delays are cluster-wide"),
    _down("scale-down-gpu-utilization-threshold", "GPU nodes at or below this GPU utilization are underutilized "
          "(a group's scaledowngpuutilizationthreshold option overrides it).", ratio_flag, 0.5,
          "gpu_utilization_threshold"),
    Flag("feature-gates", "Kubernetes feature gates, KEY=BOOL,...; modelled: TaintTolerationComparisonOperators "
         "(default false, as Kubernetes 1.35); others are accepted and named once.", str, ""),
    Flag("gpu-total", "GPU_TYPE:MIN:MAX limits (repeatable).", str, [], kind=L, ignored=_NO_GPU),
    Flag("unremovable-node-recheck-timeout", "How long an unremovable node is not rechecked.", duration_flag,
         300.0, ignored=_ALL_NODES),
    Flag("cordon-node-before-terminating", "Cordon nodes before deleting them.", bool_flag, True, kind=B,
         ignored="nodes get the ToBeDeleted NoSchedule taint, which keeps new pods off"),
    Flag("daemonset-eviction-for-empty-nodes", "Evict DaemonSet pods from empty nodes.", bool_flag, False, kind=B,
         ignored="DaemonSet pods go with their node"),
    Flag("daemonset-eviction-for-occupied-nodes", "Evict DaemonSet pods from drained nodes.", bool_flag, True,
         kind=B, ignored="DaemonSet pods go with their node"),
    Flag("drain-priority-config", "PRIORITY:GRACE pairs for evicting by pod priority.", str, "",
         ignored="pods are evicted together, with --max-graceful-termination-sec"),
    Flag("enforce-node-group-min-size", "Scale groups up to their minimum size.", bool_flag, False, kind=B,
         ignored="groups below their minimum are left as they are"),
    Flag("force-ds", "Block scale-up of groups too small for their DaemonSets.", bool_flag, False, kind=B,
         ignored="DaemonSet pods are added to templates, not checked against them"),
    Flag("force-delete-failed-nodes", "Delete failed nodes below a group's minimum.", bool_flag, False, kind=B,
         ignored="minimum sizes always hold"),
    Flag("force-delete-unregistered-nodes", "Delete long-unregistered nodes below a group's minimum.", bool_flag,
         False, kind=B, ignored="minimum sizes always hold"),
    Flag("max-node-skip-eval-time-tracker-enabled", "Track how long nodes are skipped by scale-down.", bool_flag,
         False, kind=B, ignored=_ALL_NODES),
    Flag("node-removal-latency-tracking-enabled", "Track unneeded-to-removed latency.", bool_flag, False, kind=B,
         ignored="node_removal_latency_seconds stays empty"),
    Flag("parallel-scale-up", "Scale several groups up at once.", bool_flag, False, kind=B,
         ignored="group resizes run one after another"),
    Flag("scale-from-unschedulable", "Ignore spec.unschedulable in node templates.", bool_flag, False, kind=B,
         ignored="templates are built from healthy nodes or the cloud's template"),
    Flag("scale-up-from-zero", "Scale up when no node is ready.", bool_flag, True, kind=B,
         ignored="scale-up never needs a ready node"),
    Flag("startup-taint-prefix", "Taint key prefix treated as a startup taint (repeatable).", str, [], kind=L,
         ignored="give each taint with --startup-taint"),
    Flag("enable-proactive-scaleup", "Scale up for pods about to be created.", bool_flag, False, kind=B,
         ignored="only existing pending pods trigger scale-up"),
    Flag("pod-injection-limit", "Fake pods injected at most (proactive scale-up).", int_flag, 5000,
         ignored="only existing pending pods trigger scale-up"),
    Flag("fastpath-binpacking-enabled", "Upstream's fast bin-packing path.", bool_flag, False, kind=B,
         ignored="the estimator has one path"),
    Flag("cluster-snapshot-parallelism", "Threads building the cluster snapshot.", int_flag, 16, ignored=_SERIAL),
    Flag("predicate-parallelism", "Threads checking scheduler predicates.", int_flag, 4, ignored=_SERIAL),
    Flag("node-info-cache-expire-time", "How long node templates are cached.", duration_flag, 87600 * 3600.0,
         ignored="templates are kept while their group exists"),
    Flag("allowed-scheduler-names", "Only consider pending pods of these schedulers (comma-separated).", str, "",
         ignored="every pending pod the scheduler marked unschedulable is considered"),
    Flag("bypassed-scheduler-names", "Schedulers whose pods need not wait for the scheduler's verdict.", str, "",
         ignored="pods wait for the scheduler's verdict"),
    Flag("scheduler-config-file", "kube-scheduler configuration for the simulated plugins.", str, "",
         ignored="the predicates are fixed (docs/storage-semantics.md)"),
    Flag("frequent-loops-enabled", "Run the next loop early when something changed.", bool_flag, True, kind=B,
         ignored="loops run every --scan-interval"),
    Flag("enable-csi-node-aware-scheduling", "Simulate CSINode volume limits.", bool_flag, False, kind=B,
         ignored="CSINode volume limits are always checked"),
    Flag("enable-dynamic-resource-allocation", "Simulate DRA claims.", bool_flag, True, kind=B,
         ignored="Dynamic Resource Allocation is not modelled"),
)

"""Upstream Cluster Autoscaler's metrics as data, for the metrics tests.

Every row of the tables in CA's ``proposals/metrics.md`` (41), without the
``cluster_autoscaler_`` prefix: Prometheus type and label names as
``metrics/metrics.go`` registers them (it adds ``delay_reason`` to
``node_removal_latency_seconds``, which the document leaves out).
"""

from __future__ import annotations

CA_METRICS: dict[str, tuple[str, tuple[str, ...]]] = {
    # Cluster state.
    "cluster_safe_to_autoscale": ("gauge", ()),
    "nodes_count": ("gauge", ("state",)),
    "node_groups_count": ("gauge", ("node_group_type",)),
    "unschedulable_pods_count": ("gauge", ("type",)),
    "max_nodes_count": ("gauge", ()),
    "cluster_cpu_current_cores": ("gauge", ()),
    "cpu_limits_cores": ("gauge", ("direction",)),
    "cluster_memory_current_bytes": ("gauge", ()),
    "memory_limits_bytes": ("gauge", ("direction",)),
    "node_group_min_count": ("gauge", ("node_group",)),
    "node_group_max_count": ("gauge", ("node_group",)),
    "node_group_target_count": ("gauge", ("node_group",)),
    "node_group_healthiness": ("gauge", ("node_group",)),
    "node_group_backoff_status": ("gauge", ("node_group", "reason")),
    # Execution.
    "last_activity": ("gauge", ("activity",)),
    "function_duration_seconds": ("histogram", ("function",)),
    "function_duration_quantile_seconds": ("summary", ("function",)),
    "pending_node_deletions": ("gauge", ()),
    # Operations.
    "errors_total": ("counter", ("type",)),
    "scaled_up_nodes_total": ("counter", ("gpu_resource_name", "gpu_name", "dra_drivers")),
    "scaled_up_gpu_nodes_total": ("counter", ("gpu_resource_name", "gpu_name")),
    "failed_scale_ups_total": ("counter", ("reason", "gpu_resource_name", "gpu_name", "dra_drivers")),
    "failed_node_creations_total": ("counter", ("reason",)),
    "failed_gpu_scale_ups_total": ("counter", ("reason", "gpu_resource_name", "gpu_name")),
    "scaled_down_nodes_total": ("counter", ("reason", "gpu_resource_name", "gpu_name", "dra_drivers")),
    "scaled_down_gpu_nodes_total": ("counter", ("reason", "gpu_resource_name", "gpu_name")),
    "evicted_pods_total": ("counter", ("eviction_result",)),
    "unneeded_nodes_count": ("gauge", ()),
    "unremovable_nodes_count": ("gauge", ("reason",)),
    "scale_down_in_cooldown": ("gauge", ()),
    "old_unregistered_nodes_removed_count": ("counter", ()),
    "overflowing_controllers_count": ("gauge", ()),
    "skipped_scale_events_count": ("counter", ("direction", "reason")),
    "created_node_groups_total": ("counter", ("group_type",)),
    "deleted_node_groups_total": ("counter", ("group_type",)),
    "node_taints_count": ("gauge", ("type",)),
    "inconsistent_instances_migs_count": ("gauge", ()),
    "binpacking_heterogeneity": ("histogram", ("instance_type", "cpu_count", "namespace_count")),
    "max_node_skip_eval_duration_seconds": ("gauge", ()),
    "node_removal_latency_seconds": ("histogram", ("deleted", "delay_reason")),
    "dra_node_template_resources_mismatch": ("gauge", ("driver", "mismatch_type")),
}

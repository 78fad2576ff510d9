"""The autoscaler's configuration: one validated, frozen object built from flags.

Flag names, meanings and defaults follow upstream Cluster Autoscaler
(``config/flags/flags.go``); the storage flags are this project's
(``../shared/docs/storage-semantics.md``). ``plan``, ``simulate`` and the live loop
share this parser, so a flag means the same everywhere.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from kube.duration import parse_duration as _parse_duration
from kube.featuregates import FeatureGates, parse_feature_gates
from kube.names import StorageNames

__all__ = ["ConfigError", "Options", "ScaleDownMode", "add_flags", "bool_flag", "duration_flag", "options_from_args",
           "parse_duration"]


class ConfigError(ValueError):
    """A bad flag value; the message names the flag."""


def parse_duration(text: str) -> float:
    """Flag durations: Go-style (``90s``, ``15m``, ``1h30m``), signed, a bare number is seconds."""
    return _parse_duration(text, signed=True, bare_seconds=True)


def bool_flag(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("true", "1", "yes", "t"):
        return True
    if lowered in ("false", "0", "no", "f"):
        return False
    raise argparse.ArgumentTypeError(f"{text!r} is not a boolean (true or false)")


def _signed_duration_arg(text: str) -> float:
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def duration_flag(text: str) -> float:
    """A duration that may not be negative (only ``--scale-down-unready-time`` gives a sign a meaning)."""
    value = _signed_duration_arg(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is negative (a duration here must not be)")
    return value


def _int(text: str) -> int:
    stripped = text.strip()
    if not (stripped.lstrip("+-").isascii() and stripped.lstrip("+-").isdigit()) or len(stripped) > 20:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer")
    return int(stripped)


def _ratio(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not text.isascii() or not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"{value} is not between 0 and 1")
    return value


def _non_negative_int(text: str) -> int:
    value = _int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is negative")
    return value


def _min_max(text: str) -> tuple[int, int]:
    match = re.fullmatch(r"\s*(\d{1,18})\s*:\s*(\d{1,18})\s*", text, re.ASCII)
    if not match or int(match.group(1)) > int(match.group(2)):
        raise argparse.ArgumentTypeError(f"{text!r} is not MIN:MAX with MIN <= MAX")
    return int(match.group(1)), int(match.group(2))


_SELECTOR_TERM = r"\s*!?[\w./-]+\s*(?:(?:!=|==|=)\s*[\w.-]*)?\s*"
_SELECTOR = re.compile(rf"{_SELECTOR_TERM}(?:,{_SELECTOR_TERM})*")

class ScaleDownMode(StrEnum):
    """``--scale-down-mode``: upstream's per-node thresholds, or seed 001's cluster-wide check."""

    PER_NODE = "per-node"
    CLUSTER_WIDE = "cluster-wide"


EXPANDERS = ("random", "most-pods", "least-waste", "least-nodes", "price", "priority")


@dataclass(frozen=True, slots=True)
class ScaleUpOptions:
    #: Expander chain, upstream ``--expander=a,b`` (filters in order, random last).
    expanders: tuple[str, ...] = ("least-waste",)
    #: ``--max-nodes-total``: cluster-wide node cap; 0 = no cap.
    max_nodes_total: int = 0
    #: ``--cores-total`` MIN:MAX in whole cores (node capacity).
    cores_total: tuple[int, int] = (0, 320000)
    #: ``--memory-total`` MIN:MAX in GiB (node capacity).
    memory_total_gib: tuple[int, int] = (0, 6400000)
    #: ``--max-nodes-per-scaleup``: estimator cap on new nodes in one decision.
    max_nodes_per_scaleup: int = 1000
    #: ``--max-nodegroup-binpacking-duration``: estimator time budget per group (s).
    max_binpacking_seconds: float = 10.0
    #: ``--balance-similar-node-groups``: spread a scale-up over similar groups.
    balance_similar: bool = False
    #: ``--balancing-ignore-label``: extra labels ignored when comparing groups.
    balancing_ignore_labels: tuple[str, ...] = ()
    #: ``--expendable-pods-priority-cutoff``: pods below it never trigger scale-up.
    expendable_priority_cutoff: int = -10
    #: ``--max-node-provision-time``: a requested node not registered by then is failed (s).
    max_node_provision_seconds: float = 900.0
    #: ``--max-node-startup-time``: registered but unready nodes count as upcoming until then (s).
    max_node_startup_seconds: float = 900.0
    #: ``--new-pod-scale-up-delay``: pods younger than this do not trigger scale-up yet (s).
    new_pod_scale_up_delay: float = 0.0
    #: ``--ignore-taint``: taints removed from templates (node readiness taints).
    ignore_taints: tuple[str, ...] = ()
    #: ``--initial-node-group-backoff-duration``: first backoff of a group after a failed scale-up (s).
    initial_backoff_seconds: float = 300.0
    #: ``--max-node-group-backoff-duration``: backoffs double up to this (s).
    max_backoff_seconds: float = 1800.0
    #: ``--node-group-backoff-reset-timeout``: a group's failures older than this are forgotten (s).
    backoff_reset_seconds: float = 10800.0


@dataclass(frozen=True, slots=True)
class ScaleDownOptions:
    enabled: bool = True
    #: ``--scale-down-utilization-threshold``: max(cpu, memory) at or below which a node is underutilized.
    utilization_threshold: float = 0.5
    #: ``--scale-down-gpu-utilization-threshold``: GPU use at or below which a GPU node is underutilized.
    gpu_utilization_threshold: float = 0.5
    #: ``--scale-down-storage-utilization-threshold``: storage utilization above which a node is kept.
    storage_utilization_threshold: float = 0.5
    #: ``--scale-down-unneeded-time`` (s).
    unneeded_seconds: float = 600.0
    #: ``--scale-down-unready-time`` (s); negative: unready nodes are never removed (their data would be lost).
    unready_seconds: float = 1200.0
    #: ``--scale-down-unready-enabled``.
    unready_enabled: bool = True
    #: ``--scale-down-delay-after-add|delete|failure`` (s).
    delay_after_add: float = 600.0
    delay_after_delete: float = 0.0
    delay_after_failure: float = 180.0
    #: ``--max-scale-down-parallelism`` and ``--max-drain-parallelism``.
    max_parallelism: int = 10
    max_drain_parallelism: int = 1
    #: ``--max-pod-eviction-time``: how long refused evictions are retried (s).
    max_pod_eviction_seconds: float = 120.0
    #: ``--max-graceful-termination-sec``.
    max_graceful_termination_seconds: int = 600
    skip_nodes_with_system_pods: bool = True
    skip_nodes_with_local_storage: bool = True
    skip_nodes_with_custom_controller_pods: bool = True
    #: ``--min-replica-count``: replicated pods of controllers with fewer replicas block scale-down.
    min_replica_count: int = 0
    #: ``--blocking-system-pod-distruption-timeout`` (upstream's spelling), in seconds: a
    #: kube-system pod without a PDB stops blocking scale-down once it is older than this.
    blocking_system_pod_disruption_seconds: float = 3600.0
    ignore_daemonsets_utilization: bool = False
    ignore_mirror_pods_utilization: bool = False
    #: ``--scale-down-simulation-timeout`` (s).
    simulation_timeout: float = 30.0
    #: ``--scale-down-mode``: per-node thresholds (upstream) or cluster-wide (seed 001).
    mode: ScaleDownMode = ScaleDownMode.PER_NODE
    cluster_cpu_threshold: float = 0.5
    cluster_memory_threshold: float = 0.5


@dataclass(frozen=True, slots=True)
class Options:
    scale_up: ScaleUpOptions = field(default_factory=ScaleUpOptions)
    scale_down: ScaleDownOptions = field(default_factory=ScaleDownOptions)
    storage: StorageNames = field(default_factory=StorageNames)
    #: ``--storage-aware=false`` turns every storage extension off (upstream CA's decisions).
    storage_aware: bool = True
    #: ``--scan-interval`` (s): how often the live loop runs.
    scan_interval: float = 10.0
    #: ``--priority-config``: file with the priority expander's ``priorities`` YAML.
    priority_config_file: str | None = None
    #: Seed of the random expander (the live loop leaves it unset).
    random_seed: int | None = None
    #: ``--feature-gates``: the Kubernetes gates the simulation models (``kube.featuregates``).
    feature_gates: FeatureGates = field(default_factory=FeatureGates)
    #: Gates ``--feature-gates`` named that are not modelled (accepted, logged once).
    ignored_feature_gates: tuple[str, ...] = ()


def add_flags(parser: argparse.ArgumentParser) -> None:
    """Upstream CA's flags plus the storage flags, as ``--name=value``."""
    d_up, d_down, d_st = ScaleUpOptions(), ScaleDownOptions(), StorageNames()
    add = parser.add_argument
    add("--expander", default="least-waste", help="comma-separated chain of: " + ", ".join(EXPANDERS))
    add("--max-nodes-total", type=_non_negative_int, default=d_up.max_nodes_total)
    add("--cores-total", type=_min_max, default=d_up.cores_total)
    add("--memory-total", type=_min_max, default=d_up.memory_total_gib)
    add("--max-nodes-per-scaleup", type=_non_negative_int, default=d_up.max_nodes_per_scaleup)
    add("--max-nodegroup-binpacking-duration", type=duration_flag, default=d_up.max_binpacking_seconds)
    add("--balance-similar-node-groups", type=bool_flag, nargs="?", const=True, default=d_up.balance_similar)
    add("--balancing-ignore-label", action="append", default=[])
    add("--expendable-pods-priority-cutoff", type=_int, default=d_up.expendable_priority_cutoff)
    add("--max-node-provision-time", type=duration_flag, default=d_up.max_node_provision_seconds)
    add("--max-node-startup-time", type=duration_flag, default=d_up.max_node_startup_seconds)
    add("--new-pod-scale-up-delay", type=duration_flag, default=d_up.new_pod_scale_up_delay)
    add("--ignore-taint", action="append", default=[])
    add("--initial-node-group-backoff-duration", type=duration_flag, default=d_up.initial_backoff_seconds)
    add("--max-node-group-backoff-duration", type=duration_flag, default=d_up.max_backoff_seconds)
    add("--node-group-backoff-reset-timeout", type=duration_flag, default=d_up.backoff_reset_seconds)
    add("--scale-down-enabled", type=bool_flag, nargs="?", const=True, default=d_down.enabled)
    add("--scale-down-utilization-threshold", type=_ratio, default=d_down.utilization_threshold)
    add("--scale-down-gpu-utilization-threshold", type=_ratio, default=d_down.gpu_utilization_threshold)
    add("--scale-down-storage-utilization-threshold", type=_ratio, default=d_down.storage_utilization_threshold)
    add("--scale-down-unneeded-time", type=duration_flag, default=d_down.unneeded_seconds)
    add("--scale-down-unready-time", type=_signed_duration_arg, default=d_down.unready_seconds)
    add("--scale-down-unready-enabled", type=bool_flag, nargs="?", const=True, default=d_down.unready_enabled)
    add("--scale-down-delay-after-add", type=duration_flag, default=d_down.delay_after_add)
    add("--scale-down-delay-after-delete", type=duration_flag, default=d_down.delay_after_delete)
    add("--scale-down-delay-after-failure", type=duration_flag, default=d_down.delay_after_failure)
    add("--max-scale-down-parallelism", type=_non_negative_int, default=d_down.max_parallelism)
    add("--max-drain-parallelism", type=_non_negative_int, default=d_down.max_drain_parallelism)
    add("--max-pod-eviction-time", type=duration_flag, default=d_down.max_pod_eviction_seconds)
    add("--max-graceful-termination-sec", type=_non_negative_int, default=d_down.max_graceful_termination_seconds)
    add("--skip-nodes-with-system-pods", type=bool_flag, nargs="?", const=True,
        default=d_down.skip_nodes_with_system_pods)
    add("--skip-nodes-with-local-storage", type=bool_flag, nargs="?", const=True,
        default=d_down.skip_nodes_with_local_storage)
    add("--skip-nodes-with-custom-controller-pods", type=bool_flag, nargs="?", const=True,
        default=d_down.skip_nodes_with_custom_controller_pods)
    add("--min-replica-count", type=_non_negative_int, default=d_down.min_replica_count)
    add("--blocking-system-pod-distruption-timeout", type=duration_flag,
        default=d_down.blocking_system_pod_disruption_seconds)
    add("--ignore-daemonsets-utilization", type=bool_flag, nargs="?", const=True,
        default=d_down.ignore_daemonsets_utilization)
    add("--ignore-mirror-pods-utilization", type=bool_flag, nargs="?", const=True,
        default=d_down.ignore_mirror_pods_utilization)
    add("--scale-down-simulation-timeout", type=duration_flag, default=d_down.simulation_timeout)
    add("--scale-down-mode", choices=[m.value for m in ScaleDownMode], default=d_down.mode.value)
    add("--scale-down-cluster-cpu-threshold", type=_ratio, default=d_down.cluster_cpu_threshold)
    add("--scale-down-cluster-memory-threshold", type=_ratio, default=d_down.cluster_memory_threshold)
    add("--storage-aware", type=bool_flag, nargs="?", const=True, default=True)
    add("--storage-provisioner", default=d_st.provisioner)
    add("--storage-capacity-annotation", default=d_st.capacity_annotation)
    add("--storage-max-capacity-label", default=d_st.max_capacity_label)
    add("--storage-guard-pod-selector", default=d_st.guard_pod_selector)
    add("--scan-interval", type=duration_flag, default=10.0)
    add("--priority-config", default=None, metavar="FILE")
    add("--random-seed", type=_int, default=None, help="seed of the random expander (reproducible runs)")
    # --- Kubernetes behaviour (upstream CA's flag) ---
    add("--feature-gates", default="", metavar="Key=bool,...",
        help="Kubernetes feature gates, as CA takes them; modelled: TaintTolerationComparisonOperators "
             "(default false, Kubernetes 1.35)")


def options_from_args(args: argparse.Namespace) -> Options:
    """Build and cross-validate ``Options``; raises ``ConfigError`` naming the flag."""
    a: dict[str, Any] = vars(args)
    expanders = tuple(e.strip() for e in str(a["expander"]).split(",") if e.strip())
    if not expanders:
        raise ConfigError("--expander: empty")
    for name in expanders:
        if name not in EXPANDERS:
            raise ConfigError(f"--expander: unknown expander {name!r} (known: {', '.join(EXPANDERS)})")
    if len(set(expanders)) != len(expanders):
        raise ConfigError("--expander: an expander is listed twice")
    if "random" in expanders[:-1]:
        raise ConfigError("--expander: random must be last (it always picks one option)")
    if a["scale_down_unneeded_time"] < 0:
        raise ConfigError("--scale-down-unneeded-time: must not be negative")
    if a["max_pod_eviction_time"] < 0:
        raise ConfigError("--max-pod-eviction-time: must not be negative")
    if not 0 < a["initial_node_group_backoff_duration"] <= a["max_node_group_backoff_duration"]:
        raise ConfigError("--initial-node-group-backoff-duration: must be positive and at most "
                          "--max-node-group-backoff-duration")
    # simulate leaves it unset so the scenario's own value applies; 10 s is CA's default.
    scan_interval = 10.0 if a["scan_interval"] is None else a["scan_interval"]
    if scan_interval <= 0:
        raise ConfigError("--scan-interval: must be positive")
    selector = str(a["storage_guard_pod_selector"])
    if selector and not _SELECTOR.fullmatch(selector):
        raise ConfigError(f"--storage-guard-pod-selector: {selector!r} is not a label selector "
                          "(e.g. app=rok-csi-guard)")
    try:
        gates, ignored_gates = parse_feature_gates(str(a.get("feature_gates") or ""))
    except ValueError as exc:
        raise ConfigError(f"--feature-gates: {exc}") from None
    return Options(
        scale_up=ScaleUpOptions(
            expanders=expanders,
            max_nodes_total=a["max_nodes_total"],
            cores_total=a["cores_total"],
            memory_total_gib=a["memory_total"],
            max_nodes_per_scaleup=a["max_nodes_per_scaleup"],
            max_binpacking_seconds=a["max_nodegroup_binpacking_duration"],
            balance_similar=a["balance_similar_node_groups"],
            balancing_ignore_labels=tuple(a["balancing_ignore_label"]),
            expendable_priority_cutoff=a["expendable_pods_priority_cutoff"],
            max_node_provision_seconds=a["max_node_provision_time"],
            max_node_startup_seconds=a["max_node_startup_time"],
            new_pod_scale_up_delay=a["new_pod_scale_up_delay"],
            ignore_taints=tuple(a["ignore_taint"]),
            initial_backoff_seconds=a["initial_node_group_backoff_duration"],
            max_backoff_seconds=a["max_node_group_backoff_duration"],
            backoff_reset_seconds=a["node_group_backoff_reset_timeout"],
        ),
        scale_down=ScaleDownOptions(
            enabled=a["scale_down_enabled"],
            utilization_threshold=a["scale_down_utilization_threshold"],
            gpu_utilization_threshold=a["scale_down_gpu_utilization_threshold"],
            storage_utilization_threshold=a["scale_down_storage_utilization_threshold"],
            unneeded_seconds=a["scale_down_unneeded_time"],
            unready_seconds=a["scale_down_unready_time"],
            unready_enabled=a["scale_down_unready_enabled"],
            delay_after_add=a["scale_down_delay_after_add"],
            delay_after_delete=a["scale_down_delay_after_delete"],
            delay_after_failure=a["scale_down_delay_after_failure"],
            max_parallelism=a["max_scale_down_parallelism"],
            max_drain_parallelism=a["max_drain_parallelism"],
            max_pod_eviction_seconds=a["max_pod_eviction_time"],
            max_graceful_termination_seconds=a["max_graceful_termination_sec"],
            skip_nodes_with_system_pods=a["skip_nodes_with_system_pods"],
            skip_nodes_with_local_storage=a["skip_nodes_with_local_storage"],
            skip_nodes_with_custom_controller_pods=a["skip_nodes_with_custom_controller_pods"],
            min_replica_count=a["min_replica_count"],
            blocking_system_pod_disruption_seconds=a["blocking_system_pod_distruption_timeout"],
            ignore_daemonsets_utilization=a["ignore_daemonsets_utilization"],
            ignore_mirror_pods_utilization=a["ignore_mirror_pods_utilization"],
            simulation_timeout=a["scale_down_simulation_timeout"],
            mode=ScaleDownMode(a["scale_down_mode"]),
            cluster_cpu_threshold=a["scale_down_cluster_cpu_threshold"],
            cluster_memory_threshold=a["scale_down_cluster_memory_threshold"],
        ),
        storage=StorageNames(
            provisioner=a["storage_provisioner"],
            capacity_annotation=a["storage_capacity_annotation"],
            max_capacity_label=a["storage_max_capacity_label"],
            guard_pod_selector=selector,
        ),
        storage_aware=a["storage_aware"],
        scan_interval=scan_interval,
        priority_config_file=a["priority_config"],
        random_seed=a["random_seed"],
        feature_gates=gates,
        ignored_feature_gates=ignored_gates,
    )

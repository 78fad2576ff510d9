"""The autoscaler's configuration: one validated, frozen object built from flags.

Flag names, meanings and defaults follow upstream Cluster Autoscaler
(``config/flags/flags.go``); the storage flags are this project's
(``docs/storage-semantics.md``). Each flag is one row of ``autoscaler.flagtable``
(name, parser, default, description, the ``Options`` field it fills); this module
holds the frozen ``Options`` and builds them from the parsed rows, with the checks
that span several flags. ``plan``, ``simulate`` and the live loop share the table,
so a flag means the same everywhere.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass, field
from typing import Any

from autoscaler.flagspec import add_to_parser, bool_flag, duration_flag, field_values, nested
from autoscaler.flagtable import DECISION_FLAGS, EXPANDERS, ScaleDownMode, ScaleDownOrder
from kube.duration import parse_duration as _parse_duration
from kube.featuregates import FeatureGates, parse_feature_gates
from kube.names import StorageNames

__all__ = ["EXPANDERS", "ConfigError", "Options", "ScaleDownMode", "ScaleDownOrder", "add_flags", "bool_flag",
           "duration_flag", "options_from_args", "parse_duration"]


class ConfigError(ValueError):
    """A bad flag value; the message names the flag."""


def parse_duration(text: str) -> float:
    """Flag durations: Go-style (``90s``, ``15m``, ``1h30m``), signed, a bare number is seconds."""
    return _parse_duration(text, signed=True, bare_seconds=True)


_SELECTOR_TERM = r"\s*!?[\w./-]+\s*(?:(?:!=|==|=)\s*[\w.-]*)?\s*"
_SELECTOR = re.compile(rf"{_SELECTOR_TERM}(?:,{_SELECTOR_TERM})*")


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
    #: ``--max-volume-detach-time`` (ours; Karpenter waits too, upstream CA does not): how long a
    #: drained node is kept for its VolumeAttachments to go before it is deleted anyway (s); 0: no
    #: wait. 5 minutes covers a normal detach (seconds on EBS and PD, up to a few minutes on
    #: Azure Disk) and stays under the attach-detach controller's 6-minute force-detach
    #: (``maxWaitForUnmountDuration``), which a longer wait could not beat.
    max_volume_detach_seconds: float = 300.0
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
    #: ``--scale-down-order``; None: disruption-cost when storage-aware, else upstream's.
    order: ScaleDownOrder | None = None
    #: ``--storage-unpin-throughput`` (bytes/s): how fast the storage driver unpins (snapshots
    #: and uploads) a node's local volumes; predicts each drain's deadline.
    unpin_bytes_per_second: int = 2**30
    #: ``--scale-down-max-unpin-bytes-in-flight`` (bytes; 0 = unlimited): no new removal
    #: starts while the bytes being unpinned would exceed it.
    max_unpin_bytes_in_flight: int = 0


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

    @property
    def scale_down_order(self) -> ScaleDownOrder:
        """``--scale-down-order`` as given, else disruption-cost when storage-aware and upstream's otherwise."""
        if self.scale_down.order is not None:
            return self.scale_down.order
        return ScaleDownOrder.DISRUPTION_COST if self.storage_aware else ScaleDownOrder.UPSTREAM


def add_flags(parser: argparse.ArgumentParser) -> None:
    """Upstream CA's decision flags plus the storage flags (``autoscaler.flagtable``)."""
    add_to_parser(parser, DECISION_FLAGS)


def _expanders(text: str) -> tuple[str, ...]:
    expanders = tuple(e.strip() for e in text.split(",") if e.strip())
    if not expanders:
        raise ConfigError("--expander: empty")
    for name in expanders:
        if name not in EXPANDERS:
            raise ConfigError(f"--expander: unknown expander {name!r} (known: {', '.join(EXPANDERS)})")
    if len(set(expanders)) != len(expanders):
        raise ConfigError("--expander: an expander is listed twice")
    if "random" in expanders[:-1]:
        raise ConfigError("--expander: random must be last (it always picks one option)")
    return expanders


def _check(a: dict[str, Any]) -> None:
    """The checks one flag's parser cannot make; raises ``ConfigError`` naming the flag."""
    if a["scale_down_unneeded_time"] < 0:
        raise ConfigError("--scale-down-unneeded-time: must not be negative")
    if a["max_pod_eviction_time"] < 0:
        raise ConfigError("--max-pod-eviction-time: must not be negative")
    if not 0 < a["initial_node_group_backoff_duration"] <= a["max_node_group_backoff_duration"]:
        raise ConfigError("--initial-node-group-backoff-duration: must be positive and at most "
                          "--max-node-group-backoff-duration")
    if a["scan_interval"] is not None and a["scan_interval"] <= 0:
        raise ConfigError("--scan-interval: must be positive")
    selector = str(a["storage_guard_pod_selector"])
    if selector and not _SELECTOR.fullmatch(selector):
        raise ConfigError(f"--storage-guard-pod-selector: {selector!r} is not a label selector "
                          "(e.g. app=rok-csi-guard)")


def options_from_args(args: argparse.Namespace) -> Options:
    """Build and cross-validate ``Options`` from the table's rows; raises ``ConfigError`` naming the flag."""
    _check(vars(args))
    values = nested(field_values(args, DECISION_FLAGS))
    top = values[""]
    top["scale_up"] = ScaleUpOptions(**{**values["scale_up"], "expanders": _expanders(str(args.expander))})
    top["scale_down"] = ScaleDownOptions(**values["scale_down"])
    top["storage"] = StorageNames(**values["storage"])
    # simulate leaves it unset so the scenario's own value applies; 10 s is CA's default.
    if top["scan_interval"] is None:
        top["scan_interval"] = 10.0
    try:
        top["feature_gates"], top["ignored_feature_gates"] = parse_feature_gates(str(args.feature_gates or ""))
    except ValueError as exc:
        raise ConfigError(f"--feature-gates: {exc}") from None
    return Options(**top)

"""``run``'s operational flags, validated into one frozen object.

The rows are ``app.run.flagtable.RUN_FLAGS`` (names and defaults of CA's
``config/flags/flags.go`` and ``main.go``, leader election from component-base's
``LeaderElectionConfiguration``, klog's logging flags); the decision flags are
``autoscaler.flagtable`` (shared with ``plan`` and ``simulate``). ``--dry-run`` is
ours: a dry run is a shadow beside CA, so its Lease and status ConfigMap default to
names of its own (``storage-autoscaler-shadow``, ``storage-autoscaler-shadow-status``).
``--max-loops`` is hidden and bounds a run for tests.
"""

from __future__ import annotations

import argparse
import logging
import re
from dataclasses import dataclass
from typing import Any

from app.run.flagtable import DEFAULT_LEASE, DEFAULT_STATUS, RUN_FLAGS, SHADOW_LEASE, SHADOW_STATUS
from app.run.status import HealthRule
from autoscaler.config import ConfigError
from autoscaler.flagspec import add_to_parser, field_values, nested
from cloudproviders.config import ProviderConfig, StaticGroup, parse_nodes_flag, unique_names
from kube.names import StorageNames

__all__ = ["LogSettings", "RunSettings", "add_run_flags", "parse_address", "settings_from_args"]


_ADDRESS = re.compile(r"^(?P<host>\[[0-9a-fA-F:.]+\]|[^:\s]*):(?P<port>\d{1,5})$")


def parse_address(text: str) -> tuple[str, int]:
    """``host:port`` or ``:port`` (all interfaces), as Go's ``net.Listen``; raises ``ConfigError``."""
    match = _ADDRESS.match(text)
    if match is None or not 0 <= int(match.group("port")) <= 65535:
        raise ConfigError(f"--address: {text!r} is not HOST:PORT or :PORT (e.g. :8085)")
    host = match.group("host").strip("[]") or "0.0.0.0"
    return host, int(match.group("port"))


@dataclass(frozen=True, slots=True)
class LeaderElection:
    enabled: bool = True
    #: Seconds a non-leader waits after the last renewal before taking the lease (CA: 15s).
    lease_duration: float = 15.0
    #: Seconds the leader keeps trying to renew before it gives up acting (CA: 10s).
    renew_deadline: float = 10.0
    #: Seconds between attempts to take or renew the lease (CA: 2s).
    retry_period: float = 2.0
    #: Name of the ``coordination.k8s.io/v1`` Lease (CA: ``cluster-autoscaler``; a dry run: its own).
    resource_name: str = DEFAULT_LEASE
    #: Namespace of the Lease; ``--namespace`` when empty.
    resource_namespace: str = ""


@dataclass(frozen=True, slots=True)
class LogSettings:
    """klog's flags as Python logging understands them (``app.run.logs``)."""

    #: ``--v``: 4 and above is DEBUG.
    verbosity: int = 0
    #: ``--vmodule``: (logger-name glob, verbosity) pairs.
    vmodule: tuple[tuple[str, int], ...] = ()
    format: str = "text"
    #: ``--logtostderr``: everything to stderr, no file.
    to_stderr: bool = True
    #: ``--alsologtostderr``: with a file, everything to stderr too.
    also_to_stderr: bool = False
    #: ``--stderrthreshold`` as a ``logging`` level: with a file, what also goes to stderr.
    stderr_threshold: int = logging.ERROR
    file: str = ""
    dir: str = ""
    skip_headers: bool = False


@dataclass(frozen=True, slots=True)
class RunSettings:
    """Everything ``run`` needs besides the decision ``Options``; built once at start-up."""

    #: ``--kubeconfig``; empty: the in-cluster service account config.
    kubeconfig: str
    #: ``--namespace``: where the status ConfigMap, the Lease and our events live.
    namespace: str
    cloud_provider: str
    provider: ProviderConfig
    #: ``--address`` split into the HTTP server's host and port (metrics, health check).
    address: tuple[str, int]
    leader: LeaderElection
    write_status_configmap: bool
    status_config_map_name: str
    kube_client_qps: float
    kube_client_burst: int
    #: ``--max-failing-time`` (s): /health-check fails when no loop succeeded for this long.
    max_failing_seconds: float
    #: ``--max-inactivity`` (s): /health-check fails when no loop started for this long.
    max_inactivity_seconds: float
    #: Seconds to wait for the adapter's first complete view before giving up (exit 2).
    cache_sync_seconds: float
    logging: LogSettings
    #: ``--ok-total-unready-count`` and ``--max-total-unready-percentage``.
    health: HealthRule
    dry_run: bool
    #: ``--explain-node-annotation``: write each node's scale-down verdict as an annotation.
    explain_node_annotation: bool
    #: Hidden: stop after this many loops (0: until SIGTERM/SIGINT). For tests.
    max_loops: int

    @property
    def lease_namespace(self) -> str:
        return self.leader.resource_namespace or self.namespace


def add_run_flags(parser: argparse.ArgumentParser) -> None:
    """CA's operational flags (the decision flags are added by ``autoscaler.config.add_flags``)."""
    add_to_parser(parser, RUN_FLAGS)


def _static_groups(specs: tuple[str, ...], cloud_provider: str) -> tuple[StaticGroup, ...]:
    try:
        groups = tuple(parse_nodes_flag(v) for v in specs)
        if cloud_provider != "aws":
            # CA's AWS provider registers a group named twice once, with the first bounds
            # (``cloudprovider/aws/auto_scaling_groups.go``, ``register``): that provider decides.
            unique_names(groups)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    return groups


def _check_leader(leader: LeaderElection) -> None:
    """component-base's validation of ``LeaderElectionConfiguration``."""
    if not leader.enabled:
        return
    if min(leader.lease_duration, leader.renew_deadline, leader.retry_period) <= 0:
        raise ConfigError("--leader-elect-lease-duration, -renew-deadline and -retry-period must be positive")
    if leader.lease_duration <= leader.renew_deadline:
        raise ConfigError("--leader-elect-lease-duration must be greater than --leader-elect-renew-deadline")
    if leader.renew_deadline <= leader.retry_period:
        raise ConfigError("--leader-elect-renew-deadline must be greater than --leader-elect-retry-period")
    if not leader.resource_name:
        raise ConfigError("--leader-elect-resource-name: empty")


def _check(top: dict[str, Any], provider: dict[str, Any], groups: tuple[StaticGroup, ...]) -> None:
    """The checks one flag's parser cannot make; raises ``ConfigError`` naming the flag."""
    if not top["namespace"]:
        raise ConfigError("--namespace: empty")
    if top["write_status_configmap"] and not top["status_config_map_name"]:
        raise ConfigError("--status-config-map-name: empty")
    if top["max_failing_seconds"] <= 0:
        raise ConfigError("--max-failing-time: must be positive")
    if top["max_inactivity_seconds"] <= 0:
        raise ConfigError("--max-inactivity: must be positive")
    if top["cache_sync_seconds"] <= 0:
        raise ConfigError("--cache-sync-timeout: must be positive")
    if not groups and not provider["auto_discovery"] and not provider["cloud_config"]:
        raise ConfigError("no node groups: give --nodes=MIN:MAX:NAME, --node-group-auto-discovery or --cloud-config")


def settings_from_args(args: argparse.Namespace, storage: StorageNames) -> RunSettings:
    """Validate the operational flags together; raises ``ConfigError`` naming the flag.

    A dry run's Lease and status ConfigMap default to the shadow's own names, so that
    it never takes CA's Lease nor writes CA's status (``app.run.dryrun``).
    """
    values = nested(field_values(args, RUN_FLAGS))
    top, provider, leader_values = values[""], values["provider"], values["leader"]
    groups = _static_groups(provider["static_groups"], str(top["cloud_provider"]))
    dry_run = bool(top["dry_run"])
    if leader_values["resource_name"] is None:
        leader_values["resource_name"] = SHADOW_LEASE if dry_run else DEFAULT_LEASE
    if top["status_config_map_name"] is None:
        top["status_config_map_name"] = SHADOW_STATUS if dry_run else DEFAULT_STATUS
    leader = LeaderElection(**leader_values)
    _check_leader(leader)
    _check(top, provider, groups)
    top["provider"] = ProviderConfig(static_groups=groups, auto_discovery=tuple(provider["auto_discovery"]),
                                     cloud_config=provider["cloud_config"] or None, storage=storage)
    top["address"] = parse_address(top["address"])
    return RunSettings(leader=leader, logging=LogSettings(**values["logging"]), health=HealthRule(**values["health"]),
                       **top)

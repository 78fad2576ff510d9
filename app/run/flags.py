"""``run``'s operational flags: upstream CA's names and defaults, validated into one frozen object.

The decision flags are ``autoscaler.config.add_flags`` (shared with ``plan`` and
``simulate``); these are the ones only a live deployment needs: where the API server
is, which cloud, leader election, the status ConfigMap, the HTTP endpoints, client
rate limits and logging. Names and defaults follow CA's ``config/flags/flags.go`` and
``main.go`` (leader election from component-base's ``LeaderElectionConfiguration``).
``--dry-run`` is ours; ``--max-loops`` is hidden and bounds a run for tests.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass
from typing import Any

from autoscaler.config import ConfigError, bool_flag, duration_flag
from cloudproviders.config import ProviderConfig, StaticGroup, parse_nodes_flag, unique_names
from kube.names import StorageNames

__all__ = ["RunSettings", "add_run_flags", "settings_from_args"]


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{value:g} is not positive")
    return value


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{value} is not positive")
    return value


def _verbosity(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer (klog verbosity, e.g. 4)") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is negative")
    return value


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
    #: Name of the ``coordination.k8s.io/v1`` Lease (CA: ``cluster-autoscaler``).
    resource_name: str = "cluster-autoscaler"
    #: Namespace of the Lease; ``--namespace`` when empty.
    resource_namespace: str = ""


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
    #: Seconds to wait for the adapter's first complete view before giving up (exit 2).
    cache_sync_seconds: float
    verbosity: int
    logging_format: str
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
    add = parser.add_argument
    add("--kubeconfig", default="", help="kubeconfig file (default: the in-cluster service account)")
    add("--namespace", default="kube-system", help="namespace of the status ConfigMap, the Lease and events")
    add("--cloud-provider", default="gce", help="aws, gce or azure")
    add("--cloud-config", default="", help="the cloud provider's configuration file")
    add("--nodes", action="append", default=[], metavar="MIN:MAX:NAME", help="a node group (repeatable)")
    add("--node-group-auto-discovery", action="append", default=[], metavar="SPEC",
        help="discover node groups: asg:tag=k1,k2 / mig:namePrefix=p,min=0,max=10 / label:key=value")
    add("--address", default=":8085", help="HOST:PORT of /metrics and /health-check")
    add("--leader-elect", type=bool_flag, nargs="?", const=True, default=True)
    add("--leader-elect-lease-duration", type=duration_flag, default=15.0)
    add("--leader-elect-renew-deadline", type=duration_flag, default=10.0)
    add("--leader-elect-retry-period", type=duration_flag, default=2.0)
    add("--leader-elect-resource-name", default="cluster-autoscaler")
    add("--leader-elect-resource-namespace", default="")
    add("--write-status-configmap", type=bool_flag, nargs="?", const=True, default=True)
    add("--status-config-map-name", default="cluster-autoscaler-status")
    add("--kube-client-qps", type=_positive_float, default=5.0)
    add("--kube-client-burst", type=_positive_int, default=10)
    add("--max-failing-time", type=duration_flag, default=15 * 60.0)
    add("--cache-sync-timeout", type=duration_flag, default=60.0,
        help="how long to wait for the first complete view of the cluster before exiting")
    add("--v", "-v", dest="verbosity", type=_verbosity, default=0, help="log verbosity (klog levels; 4 = debug)")
    add("--logging-format", choices=("text", "json"), default="text")
    add("--dry-run", type=bool_flag, nargs="?", const=True, default=False,
        help="decide, log, emit events, write status and metrics; never change a node, a pod or a group")
    add("--explain-node-annotation", type=bool_flag, nargs="?", const=True, default=False,
        help="write each node's scale-down verdict (explain's) as the annotation "
             "autoscaler.storage.dev/explain, for kubectl describe node; changed verdicts only")
    add("--max-loops", type=_positive_int, default=0, help=argparse.SUPPRESS)


def settings_from_args(args: argparse.Namespace, storage: StorageNames) -> RunSettings:
    """Validate the operational flags together; raises ``ConfigError`` naming the flag."""
    a: dict[str, Any] = vars(args)
    try:
        groups: tuple[StaticGroup, ...] = tuple(parse_nodes_flag(v) for v in a["nodes"])
        if a["cloud_provider"] != "aws":
            # CA's AWS provider registers a group named twice once, with the first bounds
            # (``cloudprovider/aws/auto_scaling_groups.go``, ``register``): that provider decides.
            unique_names(groups)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    leader = LeaderElection(a["leader_elect"], a["leader_elect_lease_duration"], a["leader_elect_renew_deadline"],
                            a["leader_elect_retry_period"], a["leader_elect_resource_name"],
                            a["leader_elect_resource_namespace"])
    if leader.enabled:
        # component-base's validation of LeaderElectionConfiguration.
        if min(leader.lease_duration, leader.renew_deadline, leader.retry_period) <= 0:
            raise ConfigError("--leader-elect-lease-duration, -renew-deadline and -retry-period must be positive")
        if leader.lease_duration <= leader.renew_deadline:
            raise ConfigError("--leader-elect-lease-duration must be greater than --leader-elect-renew-deadline")
        if leader.renew_deadline <= leader.retry_period:
            raise ConfigError("--leader-elect-renew-deadline must be greater than --leader-elect-retry-period")
        if not leader.resource_name:
            raise ConfigError("--leader-elect-resource-name: empty")
    if not a["namespace"]:
        raise ConfigError("--namespace: empty")
    if a["write_status_configmap"] and not a["status_config_map_name"]:
        raise ConfigError("--status-config-map-name: empty")
    if a["max_failing_time"] <= 0:
        raise ConfigError("--max-failing-time: must be positive")
    if a["cache_sync_timeout"] <= 0:
        raise ConfigError("--cache-sync-timeout: must be positive")
    if not groups and not a["node_group_auto_discovery"] and not a["cloud_config"]:
        raise ConfigError("no node groups: give --nodes=MIN:MAX:NAME, --node-group-auto-discovery or --cloud-config")
    provider = ProviderConfig(static_groups=groups, auto_discovery=tuple(a["node_group_auto_discovery"]),
                              cloud_config=a["cloud_config"] or None, storage=storage)
    return RunSettings(
        kubeconfig=a["kubeconfig"], namespace=a["namespace"], cloud_provider=a["cloud_provider"],
        provider=provider, address=parse_address(a["address"]), leader=leader,
        write_status_configmap=a["write_status_configmap"], status_config_map_name=a["status_config_map_name"],
        kube_client_qps=a["kube_client_qps"], kube_client_burst=a["kube_client_burst"],
        max_failing_seconds=a["max_failing_time"], cache_sync_seconds=a["cache_sync_timeout"],
        verbosity=a["verbosity"], logging_format=a["logging_format"], dry_run=a["dry_run"],
        explain_node_annotation=a["explain_node_annotation"], max_loops=a["max_loops"],
    )

"""``run``'s flags, one row each: API server, cloud, leader election, status, endpoints, logging.

Names and defaults are upstream Cluster Autoscaler's (``config/flags/flags.go``,
``main.go``; leader election from component-base, logging from klog/component-base);
rows marked ``ours`` are this project's. ``field`` is a dotted path into
``app.run.flags.RunSettings``; ``provider.*`` rows become the ``ProviderConfig``.
Rows with ``ignored`` are CA's flags for features this autoscaler does not have
(other clouds, ProvisioningRequests, capacity buffers, DRA, profiling, klog's file
rotation...): accepted and type-checked, one warning at start-up when given.
The decision flags are ``autoscaler.flagtable``; how to add a flag: ``autoscaler.flagspec``.
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Callable
from typing import Any

from autoscaler.flagspec import Flag, Kind, bool_flag, duration_flag, float_flag, int_flag, non_negative_int

__all__ = ["DEFAULT_LEASE", "DEFAULT_STATUS", "RUN_FLAGS", "SHADOW_LEASE", "SHADOW_STATUS", "stderr_threshold"]

B, L = Kind.BOOL, Kind.LIST

#: CA's Lease and status ConfigMap names, and a dry-run shadow's own (docs/flags.md).
DEFAULT_LEASE = "cluster-autoscaler"
DEFAULT_STATUS = "cluster-autoscaler-status"
SHADOW_LEASE = "storage-autoscaler-shadow"
SHADOW_STATUS = "storage-autoscaler-shadow-status"


def positive_float(text: str) -> float:
    value = float_flag(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{value:g} is not positive")
    return value


def positive_int(text: str) -> int:
    value = int_flag(text)  # the same reading as every other integer flag
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{value} is not positive")
    return value


def non_negative_float(text: str) -> float:
    value = float_flag(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value:g} is negative")
    return value


def verbosity(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer (klog verbosity, e.g. 4)") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is negative")
    return value


_SEVERITIES = {"0": logging.INFO, "info": logging.INFO, "1": logging.WARNING, "warning": logging.WARNING,
               "2": logging.ERROR, "error": logging.ERROR, "3": logging.CRITICAL, "fatal": logging.CRITICAL}


def stderr_threshold(text: str) -> int:
    """klog's severity: a number 0-3 or INFO/WARNING/ERROR/FATAL -> a ``logging`` level."""
    level = _SEVERITIES.get(text.strip().lower())
    if level is None:
        raise argparse.ArgumentTypeError(f"{text!r} is not a klog severity (INFO, WARNING, ERROR, FATAL or 0-3)")
    return level


def vmodule(text: str) -> tuple[tuple[str, int], ...]:
    """``pattern=N,...``: per-logger verbosity, patterns matched against logger names (glob)."""
    out: list[tuple[str, int]] = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        pattern, sep, level = part.partition("=")
        if not sep or not pattern or not level.strip().isdigit():
            raise argparse.ArgumentTypeError(f"{part!r} is not PATTERN=N")
        out.append((pattern.strip(), int(level)))
    return tuple(out)


def _ca_only(name: str, kind: Kind | Callable[[str], Any], default: Any, help: str, why: str) -> Flag:
    """A CA flag with no counterpart here: its Go type, its default, why it has no effect."""
    if isinstance(kind, Kind):
        return Flag(name, help, bool_flag if kind is B else str, default, kind=kind, ignored=why)
    return Flag(name, help, kind, default, ignored=why)


_OTHER_CLOUD = "this autoscaler supports --cloud-provider aws, gce and azure through its own providers"
_PROV_REQ = "ProvisioningRequests are not supported"
_BUFFERS = "capacity buffers are not supported"
_KLOG_FILES = "log files are not rotated or buffered; --log-file and --log-dir take one file"
_KLOG_ALPHA = "klog's alpha split streams are not supported; everything goes to stderr"

RUN_FLAGS: tuple[Flag, ...] = (
    # --- API server and cloud -----------------------------------------------------
    Flag("kubeconfig", "kubeconfig file; empty: the in-cluster service account.", str, "", "kubeconfig"),
    Flag("namespace", "Namespace of the status ConfigMap, the Lease and the autoscaler's events.", str,
          "kube-system", "namespace"),
    Flag("cloud-provider", "aws, gce or azure.", str, "gce", "cloud_provider"),
    Flag("cloud-config", "The cloud provider's configuration file; empty: none.", str, "", "provider.cloud_config"),
    Flag("nodes", "A node group as MIN:MAX:NAME (repeatable).", str, [], "provider.static_groups", L,
          metavar="MIN:MAX:NAME"),
    Flag("node-group-auto-discovery", "Discover node groups: asg:tag=k1,k2 / mig:namePrefix=p,min=0,max=10 / "
          "label:key=value (repeatable).", str, [], "provider.auto_discovery", L, metavar="SPEC"),
    Flag("kube-client-qps", "Requests per second to the API server.", positive_float, 5.0, "kube_client_qps",
         metavar="FLOAT"),
    Flag("kube-client-burst", "Requests allowed in a burst above the QPS.", positive_int, 10,
          "kube_client_burst", metavar="INT"),
    # --- leader election and status -----------------------------------------------
    Flag("leader-elect", "Take the leader Lease before acting (run replicas for availability).", bool_flag, True,
          "leader.enabled", B),
    Flag("leader-elect-lease-duration", "How long a standby waits after the last renewal before taking over.",
          duration_flag, 15.0, "leader.lease_duration"),
    Flag("leader-elect-renew-deadline", "How long the leader keeps trying to renew before it stops acting.",
          duration_flag, 10.0, "leader.renew_deadline"),
    Flag("leader-elect-retry-period", "Wait between attempts to take or renew the Lease.", duration_flag, 2.0,
          "leader.retry_period"),
    Flag("leader-elect-resource-name", f"Name of the Lease; with --dry-run the default is {SHADOW_LEASE}, so "
          "a shadow never takes CA's Lease. --lease-resource-name (older CA) is the same flag.", str, None,
          "leader.resource_name", aliases=("--lease-resource-name",), shown=f'"{DEFAULT_LEASE}"'),
    Flag("leader-elect-resource-namespace", "Namespace of the Lease; empty: --namespace.", str, "",
          "leader.resource_namespace"),
    Flag("leader-elect-resource-lock", "Kind of lock object; only leases.", str, "leases", choices=("leases",)),
    Flag("write-status-configmap", "Write the status ConfigMap.", bool_flag, True, "write_status_configmap", kind=B),
    Flag("status-config-map-name", f"Name of the status ConfigMap; with --dry-run the default is {SHADOW_STATUS}, "
          "so a shadow never writes CA's.", str, None, "status_config_map_name", shown=f'"{DEFAULT_STATUS}"'),
    # --- endpoints and health ------------------------------------------------------
    Flag("address", "HOST:PORT of /metrics and /health-check.", str, ":8085", "address"),
    Flag("max-failing-time", "/health-check fails once no loop succeeded for this long.", duration_flag, 900.0,
          "max_failing_seconds"),
    Flag("max-total-unready-percentage", "Above this percentage of unready nodes the cluster (or a group) is "
         "unhealthy: status ConfigMap and cluster_safe_to_autoscale.", non_negative_float, 45.0,
         "health.max_total_unready_percentage", metavar="FLOAT"),
    Flag("ok-total-unready-count", "Unready nodes allowed whatever the percentage.", non_negative_int, 3,
         "health.ok_total_unready_count"),
    Flag("max-inactivity", "/health-check fails once no loop started for this long.", duration_flag, 600.0,
         "max_inactivity_seconds"),
    Flag("emit-per-nodegroup-metrics", "Per-node-group metrics; here they are always emitted.", bool_flag, False,
          kind=B),
    # --- ours ------------------------------------------------------------------------
    Flag("cache-sync-timeout", "How long to wait for the first complete view of the cluster before exiting.",
          duration_flag, 60.0, "cache_sync_seconds", ours=True),
    Flag("dry-run", "Decide, log, write metrics, the shadow's own status and (dry run) events; never change a "
          "node, a pod or a group.", bool_flag, False, "dry_run", B, ours=True),
    Flag("explain-node-annotation", "Write each node's scale-down verdict (explain's) as the annotation "
         "autoscaler.storage.dev/explain, for kubectl describe node; changed verdicts only, never in dry-run.",
         bool_flag, False, "explain_node_annotation", B, ours=True),
    Flag("max-loops", "Stop after this many loops (tests).", positive_int, 0, "max_loops", hidden=True, ours=True,
         metavar="INT"),
    # --- logging (klog's flags, onto Python logging) -------------------------------
    Flag("v", "Log verbosity (klog levels; 4 and above: debug).", verbosity, 0, "logging.verbosity",
          aliases=("-v",), metavar="INT"),
    Flag("vmodule", "PATTERN=N,...: verbosity per logger (glob on logger names).", vmodule, (),
          "logging.vmodule", metavar="PATTERN=N,..."),
    Flag("logging-format", "text (klog's header) or json (one object per line).", str, "text", "logging.format",
          choices=("text", "json")),
    Flag("logtostderr", "Log to stderr only (no file).", bool_flag, True, "logging.to_stderr", B),
    Flag("alsologtostderr", "With a log file, also log everything to stderr.", bool_flag, False,
          "logging.also_to_stderr", kind=B),
    Flag("stderrthreshold", "With a log file, records at or above this severity also go to stderr.",
          stderr_threshold, logging.ERROR, "logging.stderr_threshold", shown="2", metavar="SEVERITY"),
    Flag("log-file", "Log to this file (when --logtostderr=false).", str, "", "logging.file"),
    Flag("log-dir", "Log to storage-autoscaler.log in this directory (when --logtostderr=false).", str, "",
          "logging.dir"),
    Flag("skip-headers", "Text logs without klog's header.", bool_flag, False, "logging.skip_headers", kind=B),
    _ca_only("add-dir-header", B, False, "Add the source directory to the header.", "headers name the logger"),
    _ca_only("one-output", B, False, "Write each record to its own severity's file only.", _KLOG_FILES),
    _ca_only("skip-log-headers", B, False, "No headers when opening log files.", _KLOG_FILES),
    _ca_only("log-backtrace-at", str, ":0", "FILE:N where a stack trace is logged.", "stack traces come with errors"),
    _ca_only("log-file-max-size", non_negative_int, 1800, "Log file size limit in MB.", _KLOG_FILES),
    _ca_only("log-flush-frequency", duration_flag, 5.0, "Longest wait between log flushes.", "logs are unbuffered"),
    _ca_only("log-json-info-buffer-size", str, "", "JSON info buffer size.", _KLOG_ALPHA),
    _ca_only("log-json-split-stream", B, False, "JSON errors to stderr, info to stdout.", _KLOG_ALPHA),
    _ca_only("log-text-info-buffer-size", str, "", "Text info buffer size.", _KLOG_ALPHA),
    _ca_only("log-text-split-stream", B, False, "Text errors to stderr, info to stdout.", _KLOG_ALPHA),
    # --- CA's operational flags with no counterpart here -----------------------------
    _ca_only("kubernetes", str, "", "API server URL.", "the API server comes from --kubeconfig or the pod"),
    _ca_only("kube-api-content-type", str, "application/vnd.kubernetes.protobuf", "Content type of API requests.",
             "the adapter speaks JSON"),
    _ca_only("user-agent", str, "cluster-autoscaler", "User agent of HTTP calls.", "the client's own is used"),
    _ca_only("profiling", B, False, "Serve /debug/pprof.", "no profiling endpoint"),
    _ca_only("debugging-snapshot-enabled", B, False, "Serve the debugging snapshot.",
             "use `autoscaler plan` on a snapshot instead"),
    _ca_only("record-duplicated-events", B, False, "Record repeated events within 5 minutes.",
             "repeats are counted on one Event, as client-go does"),
    _ca_only("cluster-name", str, "", "Name of the autoscaled cluster.", "node groups come from their flags"),
    _ca_only("async-node-groups", B, False, "Create and delete node groups asynchronously.",
             "no node autoprovisioning"),
    _ca_only("enable-provisioning-requests", B, False, "Handle ProvisioningRequests.", _PROV_REQ),
    _ca_only("check-capacity-batch-processing", B, False, "Batch check-capacity ProvisioningRequests.", _PROV_REQ),
    _ca_only("check-capacity-processor-instance", str, "", "This instance's ProvisioningRequest processor name.",
             _PROV_REQ),
    _ca_only("check-capacity-provisioning-request-batch-timebox", duration_flag, 10.0,
             "Time budget of a ProvisioningRequest batch.", _PROV_REQ),
    _ca_only("check-capacity-provisioning-request-max-batch-size", int_flag, 10,
             "ProvisioningRequests in a batch, at most.", _PROV_REQ),
    _ca_only("provisioning-request-initial-backoff-time", duration_flag, 60.0,
             "First retry delay of a failed ProvisioningRequest.", _PROV_REQ),
    _ca_only("provisioning-request-max-backoff-cache-size", int_flag, 1000,
             "ProvisioningRequests remembered for backoff.", _PROV_REQ),
    _ca_only("provisioning-request-max-backoff-time", duration_flag, 600.0,
             "Longest retry delay of a failed ProvisioningRequest.", _PROV_REQ),
    _ca_only("capacity-buffer-controller-enabled", B, False, "Run the capacity buffer controller.", _BUFFERS),
    _ca_only("capacity-buffer-pod-dry-run-enabled", B, True, "Build buffer pods by server dry run.", _BUFFERS),
    _ca_only("capacity-buffer-pod-injection-enabled", B, False, "Inject buffer pods.", _BUFFERS),
    _ca_only("capacity-quotas-enabled", B, False, "Honour CapacityQuota objects.", "capacity quotas are not supported"),
    _ca_only("aws-use-static-instance-list", B, False, "Use the built-in AWS instance list.",
             "AWS instance types come from the provider's own table and templates"),
    _ca_only("bulk-mig-instances-listing-enabled", B, False, "List GCE MIG instances in bulk.",
             "the GCE provider lists per MIG"),
    _ca_only("gce-concurrent-refreshes", int_flag, 1, "Concurrent GCE refreshes per object type.",
             "the GCE provider refreshes serially"),
    _ca_only("gce-mig-instances-min-refresh-wait-time", duration_flag, 5.0, "Least wait between MIG refreshes.",
             "the GCE provider refreshes once per loop"),
    _ca_only("regional", B, False, "The GKE cluster is regional.", "GCE groups come from their flags"),
    _ca_only("cloud-provider-gce-l7lb-src-cidrs", str, "130.211.0.0/22,35.191.0.0/16",
             "GCE L7 load balancer source ranges.", _OTHER_CLOUD),
    _ca_only("cloud-provider-gce-lb-src-cidrs", str, "130.211.0.0/22,209.85.152.0/22,209.85.204.0/22,35.191.0.0/16",
             "GCE L4 load balancer source ranges.", _OTHER_CLOUD),
    _ca_only("clusterapi-cloud-config-authoritative", B, False, "Cluster API: trust --cloud-config only.",
             _OTHER_CLOUD),
    _ca_only("grpc-expander-cert", str, "", "TLS certificate of the gRPC expander.", "no gRPC expander"),
    _ca_only("grpc-expander-url", str, "", "URL of the gRPC expander.", "no gRPC expander"),
)

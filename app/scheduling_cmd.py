"""``scheduler-extender`` and ``pod-webhook``: the scheduling half of the thesis as two servers.

Both read the cluster through a ``scheduling.view.ClusterView``: ``--snapshot`` files
(offline, demos, tests) or the live adapter's watch caches (``--kubeconfig``, or the
in-cluster service account). They serve until SIGTERM or
SIGINT, then stop accepting, finish in-flight requests and exit 0. Bad flags or files
print one line and exit 2, like every other command.
"""

from __future__ import annotations

import argparse
import gc
import logging
import signal
import sys
import threading
import time
from types import FrameType
from typing import Any

__all__ = ["COMMANDS", "add_commands", "ready_check", "run"]

COMMANDS = ("scheduler-extender", "pod-webhook")
#: The thesis webhook's opt-out annotation (``--annotation-optout``'s default).
OPT_OUT_ANNOTATION = "arrikto.com/skip-rok-scheduler-webhook"
EXIT_BAD_INPUT = 2
#: The watch caches' ``timeoutSeconds``: a healthy watch ends and reopens this often, so a
#: silence of ``STALE_AFTER_SECONDS`` means a hung connection (docs/network.md).
WATCH_SECONDS = 30
STALE_AFTER_SECONDS = 45.0

log = logging.getLogger("app.scheduling")


#: ``--max-request-bytes`` defaults. The extender's is sized for ExtenderArgs carrying whole
#: Nodes (``nodeCacheCapable: false``) at 5,000 nodes (docs/network.md, "Limits");
#: the webhook's for one AdmissionReview of a pod (etcd keeps objects under 1.5 MiB).
MAX_REQUEST_BYTES = {"scheduler-extender": 48 << 20, "pod-webhook": 4 << 20}


def _common(parser: argparse.ArgumentParser, port: int, max_request_bytes: int) -> None:
    parser.add_argument("--address", default="0.0.0.0", help="address to listen on (default 0.0.0.0)")
    parser.add_argument("--port", type=int, default=port, help=f"port to listen on, 0 for any (default {port})")
    parser.add_argument("--tls-cert-file", help="PEM certificate (mounted Secret); re-read when it changes")
    parser.add_argument("--tls-private-key-file", help="PEM private key of --tls-cert-file")
    parser.add_argument("--client-ca-file",
                        help="PEM CA bundle: accept only clients presenting a certificate it signed "
                             "(kube-scheduler's extender tlsConfig, the API server's webhook client certificate)")
    parser.add_argument("--max-request-bytes", type=int, default=max_request_bytes,
                        help=f"largest request body, refused with 413 above it (default {max_request_bytes})")
    parser.add_argument("--insecure-http", action="store_true",
                        help="serve plain HTTP without TLS (tests and loopback only)")
    parser.add_argument("--snapshot", action="append", default=[], metavar="FILE",
                        help="read the cluster from these snapshot files instead of the API (repeatable)")
    parser.add_argument("--kubeconfig", default=None,
                        help="kubeconfig of the cluster to watch (default: in-cluster service account, "
                             "else ~/.kube/config)")
    parser.add_argument("--kube-client-qps", type=float, default=5.0, help="client-side rate limit (default 5)")
    parser.add_argument("--kube-client-burst", type=int, default=10, help="client-side burst (default 10)")
    parser.add_argument("--sync-timeout", default="2m",
                        help="how long to wait for the watch caches before serving anyway (answers are "
                             "errors, and /readyz is 503, until they sync; default 2m)")
    parser.add_argument("--storage-provisioner", default="rok.arrikto.com",
                        help="StorageClass provisioner of node-local, migratable volumes")
    parser.add_argument("--storage-capacity-annotation", default="rok.arrikto.com/capacity",
                        help="Node annotation: free local bytes")
    parser.add_argument("--storage-max-capacity-label", default="rok.arrikto.com/max-instance-capacity",
                        help="Node label: total local bytes")
    parser.add_argument("-v", "--verbose", action="store_true", help="log every request")


def add_commands(sub: Any) -> None:
    """Add the two subcommands to ``python -m autoscaler``'s parser."""
    ext = sub.add_parser("scheduler-extender", help="kube-scheduler extender: storage-aware filter and prioritize")
    _common(ext, 8888, MAX_REQUEST_BYTES["scheduler-extender"])
    ext.add_argument("--reservation-timeout", default="5m",
                     help="how long an approval holds local bytes if the cluster never shows the "
                          "pod's claims bound (Go duration, default 5m)")
    hook = sub.add_parser("pod-webhook", help="mutating webhook: route new pods to the storage-aware scheduler")
    _common(hook, 8443, MAX_REQUEST_BYTES["pod-webhook"])
    # The thesis' webhook flags (--annotation-optout, --namespaces-optin, --scheduler-name)
    # with its defaults, so either binary serves the same deployment; the earlier names stay.
    hook.add_argument("--scheduler-name", default="storage-aware-scheduler",
                      help="spec.schedulerName set on routed pods (default storage-aware-scheduler)")
    hook.add_argument("--namespaces-optin", "--namespaces", dest="namespaces", default="*",
                      help="comma-separated namespace globs whose pods are routed (default *)")
    hook.add_argument("--annotation-optout", "--opt-out-annotation", dest="opt_out_annotation",
                      default=OPT_OUT_ANNOTATION,
                      help=f"pods carrying this annotation, whatever its value, are left alone "
                           f"(default {OPT_OUT_ANNOTATION})")
    hook.add_argument("--mutation-label", default="autoscaler.storage.dev/scheduler-mutated",
                      help="label recording that the webhook routed the pod")
    hook.add_argument("--only-local-storage-pods", action="store_true",
                      help="route only pods with claims of a local provisioner")
    hook.add_argument("--local-provisioners", default="",
                      help="comma-separated local provisioners (default: --storage-provisioner)")


class _Usage(Exception):
    """A bad flag or file: one line, exit 2."""


def _names(args: argparse.Namespace) -> Any:
    from kube.names import StorageNames

    return StorageNames(provisioner=args.storage_provisioner, capacity_annotation=args.storage_capacity_annotation,
                        max_capacity_label=args.storage_max_capacity_label)


def _view(args: argparse.Namespace, *, webhook: bool, stops: list[Any]) -> Any:
    """The cluster view: ``--snapshot`` files, or watch caches of the live cluster (started here)."""
    from kube.convert import InputError
    from kube.duration import parse_duration
    from kube.load import load_snapshot
    from scheduling.view import StaticView

    if args.snapshot:
        if args.kubeconfig:
            raise _Usage("--snapshot and --kubeconfig exclude each other")
        try:
            return StaticView.of(load_snapshot(args.snapshot, _names(args)))
        except InputError as exc:
            raise _Usage(str(exc)) from None
    from kube.clusterapi import ClusterAPIError
    from kubeapi.caches import Caches
    from kubeapi.config import api_client
    from kubeapi.ratelimit import TokenBucket
    from kubeapi.transport import Transport
    from scheduling.live_view import CachesView, scheduling_kinds

    try:
        sync_timeout = parse_duration(args.sync_timeout)
    except ValueError as exc:
        raise _Usage(f"--sync-timeout: {exc}") from None
    try:
        transport = Transport(api_client(args.kubeconfig), TokenBucket(args.kube_client_qps, args.kube_client_burst))
    except ClusterAPIError as exc:
        raise _Usage(str(exc)) from None
    # Only the extender's view goes stale: deciding on old capacity strands pods, while the
    # webhook routes any pod it cannot judge, so a stale view must not make it unready
    # (an unready webhook routes nothing: failurePolicy Ignore admits pods unchanged).
    caches = Caches(transport, _names(args), kinds=scheduling_kinds(webhook=webhook), watch_seconds=WATCH_SECONDS,
                    stale_after=None if webhook else STALE_AFTER_SECONDS)
    caches.start()
    stops.append(caches.stop)
    if not caches.wait_synced(sync_timeout):
        log.warning("watch caches not synced after %s: %s; serving errors until they are",
                    args.sync_timeout, caches.unavailable_reason())
    return CachesView(caches)


def _tls(args: argparse.Namespace) -> Any:
    from scheduling.tls import TLSFiles

    if args.max_request_bytes <= 0:
        raise _Usage(f"--max-request-bytes: must be positive, got {args.max_request_bytes}")
    if args.insecure_http:
        if args.tls_cert_file or args.tls_private_key_file or args.client_ca_file:
            raise _Usage("--insecure-http and --tls-cert-file/--tls-private-key-file/--client-ca-file exclude "
                         "each other")
        return None
    if not (args.tls_cert_file and args.tls_private_key_file):
        raise _Usage("--tls-cert-file and --tls-private-key-file are required (or --insecure-http for tests)")
    return TLSFiles(args.tls_cert_file, args.tls_private_key_file, args.client_ca_file or None)


def _routes(args: argparse.Namespace, stops: list[Any], metrics: Any) -> tuple[dict[str, Any], Any]:
    """The routes to serve and a readiness check (the view is complete)."""
    from kube.duration import parse_duration

    if args.command == "scheduler-extender":
        view = _view(args, webhook=False, stops=stops)
        from scheduling.extender import Extender

        try:
            timeout = parse_duration(args.reservation_timeout)
        except ValueError as exc:
            raise _Usage(f"--reservation-timeout: {exc}") from None
        extender = Extender(view, _names(args), reservation_timeout=timeout, clock=time.monotonic, metrics=metrics)
        return extender.routes(), ready_check(view)
    from scheduling.webhook import mutate

    config = webhook_config(args)
    # Without --only-local-storage-pods the webhook reads nothing from the cluster.
    hook_view = _view(args, webhook=True, stops=stops) if args.only_local_storage_pods else None
    return {"/mutate": lambda body: mutate(body, config, hook_view, metrics)}, ready_check(hook_view)


def webhook_config(args: argparse.Namespace) -> Any:
    """``pod-webhook``'s flags as a ``WebhookConfig``; ``_Usage`` names a bad flag."""
    from scheduling.webhook import WebhookConfig

    globs = tuple(g.strip() for g in args.namespaces.split(",") if g.strip())
    if not globs:
        raise _Usage("--namespaces-optin: at least one namespace glob is needed")
    if not args.opt_out_annotation.strip():
        raise _Usage("--annotation-optout: must not be empty")
    if not args.scheduler_name:
        raise _Usage("--scheduler-name: must not be empty")
    local = frozenset(p.strip() for p in args.local_provisioners.split(",") if p.strip()) \
        or frozenset({args.storage_provisioner})
    return WebhookConfig(scheduler_name=args.scheduler_name, namespaces=globs,
                         opt_out_annotation=args.opt_out_annotation.strip(), mutation_label=args.mutation_label,
                         only_local_storage=args.only_local_storage_pods, local_provisioners=local)


def ready_check(view: Any) -> Any:
    """``/readyz``'s check: None when the view is complete and current, else why not."""
    from kube.clusterapi import ViewUnavailable

    def ready() -> str | None:
        if view is None:
            return None
        try:
            view.read()
        except ViewUnavailable as exc:
            return str(exc)
        return None

    return ready


def run(args: argparse.Namespace) -> int:
    """Serve until SIGTERM/SIGINT; 0 on a clean stop, 2 on bad flags or files."""
    from scheduling.metrics import SchedulingMetrics
    from scheduling.server import HttpServer, Limits, health_pages

    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    stops: list[Any] = []
    try:
        tls = _tls(args)
        metrics = SchedulingMetrics()
        routes, ready = _routes(args, stops, metrics)
        server = HttpServer(args.address, args.port, pages=health_pages(ready, metrics.registry), routes=routes,
                            tls=tls, limits=Limits(max_request_bytes=args.max_request_bytes), name=args.command)
    except _Usage as exc:
        for stop_caches in stops:
            stop_caches()
        sys.stderr.write(f"autoscaler {args.command}: {exc}\n")
        return EXIT_BAD_INPUT
    except OSError as exc:  # ssl.SSLError included (a key that does not match its certificate)
        for stop_caches in stops:
            stop_caches()
        sys.stderr.write(f"autoscaler {args.command}: cannot listen on {args.address}:{args.port} or read "
                         f"the TLS files: {exc.strerror or exc}\n")
        return EXIT_BAD_INPUT
    # The view's objects live as long as the server: keep the cyclic collector from walking
    # them again and again (a full collection over 5,000 nodes and their volumes is tens of ms).
    gc.freeze()
    stop = threading.Event()

    def _signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, _signal)
    signal.signal(signal.SIGINT, _signal)
    server.start()
    log.info("%s listening on %s://%s:%d", args.command, server.scheme, args.address, server.port)
    stop.wait()
    server.close()
    for stop_caches in stops:
        stop_caches()
    log.info("%s stopped", args.command)
    return 0

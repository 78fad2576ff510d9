"""``python -m autoscaler run [flags]``: the live autoscaler, from flags to a clean exit.

Start-up, in order, each failure one line on stderr and exit status 2 (never a
traceback): validate the flags; build the cloud provider (``--cloud-provider``);
connect to the API server and wait, at most ``--cache-sync-timeout``, for the
adapter's first complete view; bind ``--address``. Then, until SIGTERM/SIGINT (or
the hidden ``--max-loops``): while this replica holds the lease, one loop every
``--scan-interval`` (measured from loop start, as CA). Shutdown stops the loop
between iterations, releases the lease, closes the endpoints and the adapter, and
exits 0.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from types import FrameType

from app.run.events import EventEmitter, QueuedEvents
from app.run.flags import RunSettings, settings_from_args
from app.run.flagtable import RUN_FLAGS
from app.run.leader import Leadership
from app.run.logs import configure_logging, remove_logging
from app.run.loop import LiveLoop
from app.run.metrics import Metrics
from app.run.seams import ActLog, GuardedCluster, GuardedProvider
from app.run.server import Endpoints, Health
from app.run.status import StatusTracker
from autoscaler.config import Options
from autoscaler.flagspec import ignored_given
from autoscaler.flagtable import DECISION_FLAGS
from cloudproviders.config import CloudConfigError, load_provider
from cloudproviders.interface import CloudError, CloudProvider
from kube.clusterapi import ClusterAPI, ClusterAPIError

__all__ = ["Live", "StartupCancelled", "StartupError", "provider_for", "run", "serve"]

EXIT_BAD_INPUT = 2
#: The status after losing the Lease while leading: upstream's ``klog.Fatalf("lost master")``
#: (cluster-autoscaler/main.go) exits 255, and the restarted pod waits as a standby.
EXIT_LOST_LEASE = 255
log = logging.getLogger("app.run")


class StartupError(Exception):
    """Start-up cannot go on (bad kubeconfig, unreachable API server, port in use); one line."""


class StartupCancelled(Exception):
    """SIGTERM/SIGINT arrived during start-up: nothing was done yet, so the exit is clean (0)."""


@dataclass(slots=True)
class Live:
    """What the adapter hands ``serve``: the cluster seam, leadership, and how to close both."""

    cluster: ClusterAPI
    leadership: Leadership
    close: Callable[[], None]


def provider_for(settings: RunSettings) -> CloudProvider:
    """The cloud provider ``--cloud-provider`` names; ``StartupError`` (one line) when it cannot start."""
    try:
        return load_provider(settings.cloud_provider, settings.provider)
    except CloudConfigError as exc:
        raise StartupError(str(exc)) from None
    except ImportError as exc:
        if (exc.name or "").startswith("cloudproviders."):
            raise StartupError(f"--cloud-provider={settings.cloud_provider}: not part of this build "
                               f"({exc.name} is missing)") from None
        raise StartupError(f"--cloud-provider={settings.cloud_provider}: its SDK is not installed ({exc.name}); "
                           f"install storage-autoscaler[{settings.cloud_provider}]") from None
    except CloudError as exc:
        raise StartupError(f"--cloud-provider={settings.cloud_provider}: {exc}") from None
    except Exception as exc:  # an SDK's own start-up error (no region, no credentials file): still one line
        raise StartupError(f"--cloud-provider={settings.cloud_provider}: cannot start: "
                           f"{type(exc).__name__}: {exc}") from None


@contextlib.contextmanager
def _signals(stop: threading.Event) -> Iterator[None]:
    """SIGTERM/SIGINT set ``stop``; handlers are installed only on the main thread and restored after."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handle(signum: int, frame: FrameType | None) -> None:
        log.info("received %s, stopping after the current loop", signal.Signals(signum).name)
        stop.set()

    previous = {s: signal.signal(s, handle) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def serve(settings: RunSettings, options: Options, live: Live, provider: CloudProvider,
          stop: threading.Event | None = None) -> int:
    """Run the loop over connected seams until ``stop`` (or ``--max-loops``); returns the exit status."""
    stop = stop if stop is not None else threading.Event()
    metrics = Metrics()
    metrics.dry_run.set(1 if settings.dry_run else 0)
    health = Health(settings.max_failing_seconds, max_inactivity_seconds=settings.max_inactivity_seconds)
    try:
        endpoints = Endpoints(*settings.address, metrics, health)
    except OSError as exc:
        live.close()
        raise StartupError(f"--address: cannot listen on {settings.address[0]}:{settings.address[1]}: "
                           f"{exc.strerror or exc}") from None
    leadership = live.leadership

    def refusal() -> str | None:
        if settings.dry_run:
            return "--dry-run"
        return None if leadership.is_leader() else "this replica is not the leader (the lease was lost)"

    acts = ActLog()
    cluster = GuardedCluster(live.cluster, metrics, refusal, acts)
    guarded = GuardedProvider(provider, metrics, refusal, acts)
    executor = ThreadPoolExecutor(max_workers=max(1, options.scale_down.max_drain_parallelism) * 4,
                                  thread_name_prefix="evict")
    events = QueuedEvents(cluster)
    emitter = EventEmitter(events, settings.namespace, settings.status_config_map_name, settings.dry_run)

    def new_loop() -> LiveLoop:
        return LiveLoop(cluster, guarded, options, metrics, emitter, acts, write_status=settings.write_status_configmap,
                        dry_run=settings.dry_run, executor=executor, status=StatusTracker(settings.health),
                        annotate_nodes=settings.explain_node_annotation)

    endpoints.start()
    log.info("serving /metrics and /health-check on %s:%d", settings.address[0], endpoints.port)
    leadership.start()
    loop: LiveLoop | None = None
    done = 0
    status = 0
    try:
        while not stop.is_set():
            if not leadership.is_leader():
                if loop is not None:
                    # Lost the lease: the seams already refuse every change. As upstream
                    # (cluster-autoscaler/main.go, OnStoppedLeading: "lost master"), the
                    # process ends; restarted, it waits as a standby and a later term
                    # starts from the cluster as it then is.
                    log.error("lost the leader lease: stopped acting; exiting %d so that the pod restarts "
                              "as a standby (as upstream's cluster-autoscaler does)", EXIT_LOST_LEASE)
                    metrics.leader.set(0)
                    status = EXIT_LOST_LEASE
                    break
                metrics.leader.set(0)
                health.stop_monitoring()
                stop.wait(settings.leader.retry_period)
                continue
            if loop is None:
                log.info("acting as leader%s", " (dry run: deciding only)" if settings.dry_run else "")
                loop = new_loop()
                metrics.leader.set(1)
                health.start_monitoring()
                if settings.write_status_configmap:  # only the leader writes the status
                    with contextlib.suppress(ClusterAPIError):
                        live.cluster.write_status(StatusTracker.initializing(time.time()))
            began = time.monotonic()
            health.active()
            if loop.iterate(time.time()):
                health.succeeded()
            done += 1
            if settings.max_loops and done >= settings.max_loops:
                break
            stop.wait(max(0.0, began + options.scan_interval - time.monotonic()))
    finally:
        log.info("shutting down after %d loop(s)", done)
        executor.shutdown(wait=True, cancel_futures=True)
        events.close()
        if events.dropped:
            log.warning("%d event(s) dropped: more than the queue holds were waiting", events.dropped)
        leadership.stop()
        endpoints.close()
        live.close()
    return status


def run(args: argparse.Namespace, options: Options) -> int:
    """The ``run`` command; raises ``ConfigError`` for a bad flag (``app.cli`` prints it, exit 2)."""
    settings = settings_from_args(args, options.storage)
    handlers = configure_logging(settings.logging)
    for flag in ignored_given(args, (*DECISION_FLAGS, *RUN_FLAGS)):
        log.warning("flag --%s is accepted for compatibility with Cluster Autoscaler but has no effect here: %s",
                    flag.name, flag.ignored)
    stop = threading.Event()
    try:
        with _signals(stop):
            try:
                provider = provider_for(settings)
                from app.run.wiring import connect

                live = connect(settings, stop, options.feature_gates)
                return serve(settings, options, live, provider, stop)
            except StartupError as exc:
                sys.stderr.write(f"autoscaler run: {exc}\n")
                return EXIT_BAD_INPUT
            except StartupCancelled:
                log.info("stopped during start-up")
                return 0
    finally:
        remove_logging(handlers)

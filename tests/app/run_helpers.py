"""Shared pieces of the ``run`` tests: a ``LiveLoop`` over the simulated world, metric reads, a free port."""

from __future__ import annotations

import socket
from collections.abc import Callable

from app.run.events import EventEmitter
from app.run.loop import LiveLoop
from app.run.metrics import Metrics
from app.run.seams import ActLog, GuardedCluster, GuardedProvider
from emulator.world import World
from kube.clusterapi import ClusterAPI
from tests.factories import options


def free_port() -> int:
    """A loopback port nothing listens on now (for a server a test starts)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def live_loop(world: World, *flags: str, dry_run: bool = False, cluster: ClusterAPI | None = None,
              refusal: Callable[[], str | None] = lambda: None) -> LiveLoop:
    """The loop ``run`` builds, over the world's cluster and cloud (or over ``cluster``)."""
    metrics = Metrics()
    acts = ActLog()
    guard = (lambda: "--dry-run") if dry_run else refusal
    guarded = GuardedCluster(cluster if cluster is not None else world.cluster, metrics, guard, acts)
    provider = GuardedProvider(world.cloud, metrics, guard, acts)
    emitter = EventEmitter(guarded, "kube-system", "cluster-autoscaler-status", dry_run)
    return LiveLoop(guarded, provider, options(*flags), metrics, emitter, acts, dry_run=dry_run)


#: The GPU and DRA labels CA's node counters carry, empty here.
NO_GPU = {"gpu_resource_name": "", "gpu_name": "", "dra_drivers": ""}


def sample(loop: LiveLoop, name: str, **labels: str) -> float:
    value = loop.metrics.registry.get_sample_value(name, labels)
    return 0.0 if value is None else value

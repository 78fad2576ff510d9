"""``explain`` on a live cluster: the adapter's view, read only, and the cloud's groups.

With no snapshot file, ``explain`` takes ``run``'s flags (``--kubeconfig``, empty for the
in-cluster service account, ``--cloud-provider``, ``--nodes``, ...), waits for the
adapter's first complete view (``--cache-sync-timeout``), runs one loop of the decision
code at steady state, as ``plan`` does, and closes. The adapter is built unable to act:
every mutating call is refused before it leaves the process.
"""

from __future__ import annotations

import argparse
import time

from app.run.command import StartupError, provider_for
from app.run.flags import settings_from_args
from autoscaler.config import Options
from autoscaler.runonce import LoopDecision, run_once
from cloudproviders.interface import CloudError
from kube.clusterapi import ClusterAPIError
from kube.model import ClusterObjects
from kubeapi import ConfigError, KubeClusterAPI

__all__ = ["decide_live"]


def decide_live(args: argparse.Namespace, options: Options, now: float) -> tuple[ClusterObjects, LoopDecision]:
    """One steady-state decision over the live cluster; ``StartupError`` (one line) when it cannot be read."""
    settings = settings_from_args(args, options.storage)
    provider = provider_for(settings)
    try:
        api = KubeClusterAPI.from_kubeconfig(
            settings.kubeconfig or None, namespace=settings.namespace, qps=settings.kube_client_qps,
            burst=settings.kube_client_burst, storage=settings.provider.storage, may_act=lambda: False)
    except ConfigError as exc:
        raise StartupError(f"--kubeconfig: {exc}") from None
    api.start()
    try:
        deadline = time.monotonic() + settings.cache_sync_seconds
        while not api.wait_synced(min(0.2, max(0.0, deadline - time.monotonic()))):
            if time.monotonic() >= deadline:
                reason = api.caches.unavailable_reason() or "not synced"
                raise StartupError(f"no complete view within --cache-sync-timeout="
                                   f"{settings.cache_sync_seconds:g}s: {reason}")
        objects = api.list_objects()
        provider.refresh()
        return objects, run_once(objects, provider, options, now, steady_state=True)
    except (ClusterAPIError, CloudError) as exc:
        raise StartupError(f"cannot read the cluster or the cloud: {exc}") from None
    finally:
        api.stop()

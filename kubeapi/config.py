"""The official client's configuration: a kubeconfig file, or the in-cluster service account.

As upstream CA (``--kubeconfig``): with no file the adapter uses the pod's service
account when it runs in a cluster, else the client's default kubeconfig location.
urllib3's own retries are turned off: transient errors are retried by the adapter
(``tenacity``, informer backoff), where they are counted and logged once.
"""

from __future__ import annotations

import os

import yaml
from kubernetes import config as kube_config  # type: ignore[import-untyped]
from kubernetes.client import ApiClient, Configuration  # type: ignore[import-untyped]
from kubernetes.config.config_exception import ConfigException  # type: ignore[import-untyped]

from kube.clusterapi import ClusterAPIError

__all__ = ["ConfigError", "api_client"]

IN_CLUSTER_ENV = "KUBERNETES_SERVICE_HOST"


class ConfigError(ClusterAPIError):
    """No usable client configuration (a bad kubeconfig, no service account)."""


def api_client(kubeconfig: str | None, *, context: str | None = None, pool_size: int = 32) -> ApiClient:
    """An ``ApiClient`` for ``kubeconfig`` (None: in-cluster if possible, else the default file)."""
    configuration = Configuration()
    try:
        if kubeconfig is None and os.environ.get(IN_CLUSTER_ENV):
            kube_config.load_incluster_config(client_configuration=configuration)
        else:
            kube_config.load_kube_config(config_file=kubeconfig, context=context,
                                         client_configuration=configuration, persist_config=False)
    except (ConfigException, OSError, ValueError, TypeError, KeyError, yaml.YAMLError) as exc:
        where = kubeconfig or "the in-cluster service account / default kubeconfig"
        detail = " ".join(str(exc).split())  # YAML errors span lines
        raise ConfigError(f"{where}: cannot load the Kubernetes client configuration: {detail}") from None
    configuration.retries = False
    # One connection per informer's watch plus the acting calls.
    configuration.connection_pool_maxsize = pool_size
    return ApiClient(configuration)

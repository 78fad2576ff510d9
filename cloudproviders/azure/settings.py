"""Azure provider settings: the ``--cloud-config`` JSON file, environment fallbacks, auto-discovery.

The file follows the keys of the ``azure.json`` upstream CA and the Azure cloud
provider read (``cloudprovider/azure/azure_config.go``); only these are used::

    {
      "subscriptionId": "00000000-0000-0000-0000-000000000000",
      "resourceGroup": "my-cluster-nodes",
      "resourceManagerEndpoint": "https://management.azure.com",
      "operationTimeout": "60s",
      "pollingInterval": "5s"
    }

``resourceManagerEndpoint`` is optional (Azure public cloud by default); a plain
``http://`` endpoint is accepted only on a loopback host (a test server, which gets a
static token instead of real credentials). Environment fallbacks: ``ARM_SUBSCRIPTION_ID``,
``ARM_RESOURCE_GROUP``, ``ARM_RESOURCE_MANAGER_ENDPOINT``. Credentials in production come
from ``DefaultAzureCredential`` (workload identity, managed identity, environment).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from cloudproviders.config import CloudConfigError, is_loopback_http
from kube.duration import parse_duration

__all__ = ["AzureSettings", "TagSelector", "load_settings", "parse_auto_discovery"]

PUBLIC_ENDPOINT = "https://management.azure.com"


@dataclass(frozen=True, slots=True)
class AzureSettings:
    subscription_id: str
    resource_group: str
    endpoint: str = PUBLIC_ENDPOINT
    #: Seconds to wait for a scale set update or instance deletion to finish.
    operation_timeout_seconds: float = 60.0
    #: Seconds between polls of a long-running operation without Retry-After.
    polling_interval_seconds: float = 5.0


@dataclass(frozen=True, slots=True)
class TagSelector:
    """``label:k1=v1,k2=v2``: scale sets carrying all these tags (CA's Azure auto-discovery)."""

    tags: tuple[tuple[str, str], ...]

    def selects(self, tags: Mapping[str, str]) -> bool:
        return all(tags.get(key) == value for key, value in self.tags)


def parse_auto_discovery(spec: str) -> TagSelector:
    kind, sep, rest = spec.partition(":")
    if kind != "label" or not sep or not rest:
        raise CloudConfigError(f"--node-group-auto-discovery: {spec!r}: Azure expects label:key=value[,key=value]")
    pairs = []
    for part in rest.split(","):
        key, eq, value = part.partition("=")
        if not eq or not key:
            raise CloudConfigError(f"--node-group-auto-discovery: {spec!r}: {part!r} is not key=value")
        pairs.append((key, value))
    return TagSelector(tuple(pairs))


def _duration(values: Mapping[str, object], key: str, default: float, where: str) -> float:
    if key not in values:
        return default
    try:
        return parse_duration(str(values[key]))
    except ValueError as exc:
        raise CloudConfigError(f"{where}: {key}: {exc}") from None


def load_settings(cloud_config: str | None, env: Mapping[str, str]) -> AzureSettings:
    """Settings from the JSON file (if given) over the environment; ``CloudConfigError`` names the key."""
    values: dict[str, object] = {}
    where = f"--cloud-config {cloud_config}" if cloud_config else "environment"
    if cloud_config is not None:
        try:
            with open(cloud_config, encoding="utf-8") as handle:
                loaded = json.load(handle)
        except (OSError, ValueError) as exc:
            raise CloudConfigError(f"{where}: {exc}") from None
        if not isinstance(loaded, dict):
            raise CloudConfigError(f"{where}: expected a JSON object")
        values = loaded
    subscription = str(values.get("subscriptionId") or env.get("ARM_SUBSCRIPTION_ID", ""))
    group = str(values.get("resourceGroup") or env.get("ARM_RESOURCE_GROUP", ""))
    if not subscription:
        raise CloudConfigError(f"{where}: subscriptionId (or ARM_SUBSCRIPTION_ID) is required for "
                               "--cloud-provider=azure")
    if not group:
        raise CloudConfigError(f"{where}: resourceGroup (or ARM_RESOURCE_GROUP) is required for "
                               "--cloud-provider=azure")
    endpoint = str(values.get("resourceManagerEndpoint") or env.get("ARM_RESOURCE_MANAGER_ENDPOINT")
                   or PUBLIC_ENDPOINT).rstrip("/")
    scheme = urlsplit(endpoint).scheme
    if scheme not in ("http", "https") or (scheme == "http" and not is_loopback_http(endpoint)):
        raise CloudConfigError(f"{where}: resourceManagerEndpoint {endpoint!r} must be https:// (http:// only on "
                               "loopback)")
    return AzureSettings(subscription_id=subscription, resource_group=group, endpoint=endpoint,
                         operation_timeout_seconds=_duration(values, "operationTimeout", 60.0, where),
                         polling_interval_seconds=_duration(values, "pollingInterval", 5.0, where))

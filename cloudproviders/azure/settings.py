"""Azure provider settings: the ``--cloud-config`` JSON file and its environment fallbacks.

The file follows the keys of the ``azure.json`` upstream CA and the Azure cloud
provider read (``cloudprovider/azure/azure_config.go``); only these are used::

    {
      "subscriptionId": "00000000-0000-0000-0000-000000000000",
      "resourceGroup": "my-cluster-nodes",
      "resourceManagerEndpoint": "https://management.azure.com",
      "operationTimeout": "60s",
      "pollingInterval": "5s",
      "enableLabelPredictionsOnTemplate": true
    }

``resourceManagerEndpoint`` is optional (Azure public cloud by default); a plain
``http://`` endpoint is accepted only on a loopback host (a test server, which gets a
static token instead of real credentials). Environment fallbacks: ``ARM_SUBSCRIPTION_ID``,
``ARM_RESOURCE_GROUP``, ``ARM_RESOURCE_MANAGER_ENDPOINT``; ``AZURE_ENABLE_LABEL_PREDICTIONS_ON_TEMPLATE``
overrides the file, as upstream. Credentials in production come
from ``DefaultAzureCredential`` (workload identity, managed identity, environment).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from cloudproviders.azure.discovery import parse_auto_discovery
from cloudproviders.config import CloudConfigError, is_loopback_http
from kube.duration import parse_duration

#: ``parse_auto_discovery`` lives in ``discovery.py``; re-exported for callers of the old place.
__all__ = ["AzureSettings", "load_settings", "parse_auto_discovery"]

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
    #: Predict AKS's system labels on templates (upstream ``enableLabelPredictionsOnTemplate``, default true).
    label_predictions: bool = True


#: Go's ``strconv.ParseBool`` words, as upstream reads boolean environment variables.
_BOOLS = {**dict.fromkeys(("1", "t", "T", "TRUE", "true", "True"), True),
          **dict.fromkeys(("0", "f", "F", "FALSE", "false", "False"), False)}


def _label_predictions(values: Mapping[str, object], env: Mapping[str, str], where: str) -> bool:
    """``enableLabelPredictionsOnTemplate`` (default true), overridden by the environment, as upstream."""
    value = values.get("enableLabelPredictionsOnTemplate", True)
    if not isinstance(value, bool):
        raise CloudConfigError(f"{where}: enableLabelPredictionsOnTemplate: expected true or false, got {value!r}")
    text = env.get("AZURE_ENABLE_LABEL_PREDICTIONS_ON_TEMPLATE")
    if text is None:
        return value
    if text not in _BOOLS:
        raise CloudConfigError(f"AZURE_ENABLE_LABEL_PREDICTIONS_ON_TEMPLATE: expected true or false, got {text!r}")
    return _BOOLS[text]


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
                         polling_interval_seconds=_duration(values, "pollingInterval", 5.0, where),
                         label_predictions=_label_predictions(values, env, where))

"""The Microsoft.Compute calls the Azure provider makes, each translated and retried in one place.

azure-core's own retry policy is switched off (``retry_total=0``) so that tenacity here
is the only retry loop. Long-running operations (scale set update, instance deletion)
are waited for up to ``operation_timeout_seconds``; one still running then is left to
Azure and the next refresh reads the real state (logged, not raised).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from azure.core.credentials import AccessToken, TokenCredential
from azure.core.pipeline import PipelineRequest
from azure.core.pipeline.policies import BearerTokenCredentialPolicy
from azure.core.polling import LROPoller
from azure.mgmt.compute import ComputeManagementClient, models

from cloudproviders.azure.errors import translate
from cloudproviders.azure.settings import AzureSettings
from cloudproviders.config import is_loopback_http
from cloudproviders.retry import RetryPolicy

__all__ = ["ComputeApi", "StaticTokenCredential"]

_log = logging.getLogger(__name__)
T = TypeVar("T")
_SCOPE = "https://management.azure.com/.default"


class StaticTokenCredential:
    """A fixed bearer token, for a loopback test server only (never real credentials over http)."""

    def __init__(self, token: str = "loopback-test-token") -> None:
        self._token = token

    def get_token(self, *scopes: str, **kwargs: Any) -> AccessToken:
        return AccessToken(self._token, int(time.time()) + 3600)


class _LoopbackBearerPolicy(BearerTokenCredentialPolicy[Any, Any]):
    """Bearer auth that allows plain http: azure-core refuses tokens over non-TLS URLs
    unless the request context says ``enforce_https=False``; used only for loopback."""

    def on_request(self, request: PipelineRequest[Any]) -> None:
        request.context["enforce_https"] = False
        super().on_request(request)


def _client(settings: AzureSettings, credential: TokenCredential | None) -> tuple[ComputeManagementClient, Any]:
    """The SDK client and the credential object to close with it (None: nothing to close)."""
    common: dict[str, Any] = {"base_url": settings.endpoint, "retry_total": 0,
                              "polling_interval": settings.polling_interval_seconds}
    if is_loopback_http(settings.endpoint):
        token = credential or StaticTokenCredential()
        policy = _LoopbackBearerPolicy(token, _SCOPE)
        return ComputeManagementClient(token, settings.subscription_id, authentication_policy=policy,
                                       **common), None
    if credential is None:
        from azure.identity import DefaultAzureCredential  # only for a real cloud

        default = DefaultAzureCredential()
        return ComputeManagementClient(default, settings.subscription_id, **common), default
    return ComputeManagementClient(credential, settings.subscription_id, **common), None


class ComputeApi:
    """The subset of Microsoft.Compute the provider needs; raises only ``CloudError``."""

    def __init__(self, settings: AzureSettings, retry: RetryPolicy, credential: TokenCredential | None = None) -> None:
        self.settings = settings
        self._retry = retry
        self._client, self._owned_credential = _client(settings, credential)
        self._group = settings.resource_group

    def close(self) -> None:
        self._client.close()
        if self._owned_credential is not None:
            self._owned_credential.close()

    def _call(self, what: str, fn: Callable[[], T]) -> T:
        return self._retry.call_translated(what, fn, translate)

    def _wait(self, what: str, start: Callable[[], LROPoller[Any]]) -> None:
        def once() -> None:
            poller = start()
            poller.result(timeout=self.settings.operation_timeout_seconds)
            if not poller.done():
                _log.warning("operation still running, not waiting longer", extra={"call": what})

        self._call(what, once)

    # --- reading --------------------------------------------------------------------

    def get_scale_set(self, name: str) -> models.VirtualMachineScaleSet:
        return self._call(f"VMSS {name}: get", lambda: self._client.virtual_machine_scale_sets.get(self._group, name))

    def list_scale_sets(self) -> list[models.VirtualMachineScaleSet]:
        return self._call(f"resource group {self._group}: virtualMachineScaleSets.list",
                          lambda: list(self._client.virtual_machine_scale_sets.list(self._group)))

    def list_vms(self, name: str) -> list[models.VirtualMachineScaleSetVM]:
        return self._call(f"VMSS {name}: virtualMachines.list", lambda: list(
            self._client.virtual_machine_scale_set_vms.list(self._group, name, expand="instanceView")))

    def list_skus(self, location: str) -> list[models.ResourceSku]:
        return self._call(f"location {location}: resourceSkus.list", lambda: list(
            self._client.resource_skus.list(filter=f"location eq '{location}'")))

    # --- acting -----------------------------------------------------------------------

    def set_capacity(self, name: str, sku: models.Sku, capacity: int) -> None:
        """PATCH the scale set's ``sku.capacity`` (CA sets the same field, via create-or-update)."""
        update = models.VirtualMachineScaleSetUpdate(sku=models.Sku(name=sku.name, tier=sku.tier, capacity=capacity))
        self._wait(f"VMSS {name}: set capacity {capacity}",
                   lambda: self._client.virtual_machine_scale_sets.begin_update(self._group, name, update))

    def delete_instances(self, name: str, instance_ids: Sequence[str]) -> None:
        ids = models.VirtualMachineScaleSetVMInstanceRequiredIDs(instance_ids=list(instance_ids))
        self._wait(f"VMSS {name}: delete instances {', '.join(instance_ids)}",
                   lambda: self._client.virtual_machine_scale_sets.begin_delete_instances(self._group, name, ids))

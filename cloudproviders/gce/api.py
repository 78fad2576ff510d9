"""The compute v1 calls the GCE provider makes, each translated and retried in one place.

REST transport only (``compute_v1.*Client(transport="rest")``); the SDK's own retries
are switched off (``retry=None``) so that tenacity here is the only retry loop.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from google.api_core.client_options import ClientOptions
from google.auth.credentials import AnonymousCredentials, Credentials
from google.auth.exceptions import DefaultCredentialsError
from google.cloud import compute_v1

from cloudproviders.config import CloudConfigError, is_loopback_http
from cloudproviders.gce.errors import operation_error, translate
from cloudproviders.gce.settings import GceSettings, MigRef
from cloudproviders.retry import RetryPolicy

__all__ = ["ComputeApi"]

_log = logging.getLogger(__name__)
T = TypeVar("T")
#: Seconds one HTTP call may take.
_CALL_TIMEOUT = 30.0


@dataclass(frozen=True, slots=True)
class _Clients:
    migs: compute_v1.InstanceGroupManagersClient
    templates: compute_v1.InstanceTemplatesClient
    regional_templates: compute_v1.RegionInstanceTemplatesClient
    machine_types: compute_v1.MachineTypesClient
    operations: compute_v1.ZoneOperationsClient


def _clients(settings: GceSettings) -> _Clients:
    options = ClientOptions(api_endpoint=settings.endpoint) if settings.endpoint else None
    credentials: Credentials | None = None
    if is_loopback_http(settings.endpoint):
        # A local test server: never hand real credentials to plain http.
        credentials = AnonymousCredentials()  # type: ignore[no-untyped-call]
    # None: Application Default Credentials (workload identity, metadata server, key file).
    return _Clients(
        migs=compute_v1.InstanceGroupManagersClient(transport="rest", client_options=options, credentials=credentials),
        templates=compute_v1.InstanceTemplatesClient(transport="rest", client_options=options, credentials=credentials),
        regional_templates=compute_v1.RegionInstanceTemplatesClient(
            transport="rest", client_options=options, credentials=credentials),
        machine_types=compute_v1.MachineTypesClient(transport="rest", client_options=options, credentials=credentials),
        operations=compute_v1.ZoneOperationsClient(transport="rest", client_options=options, credentials=credentials),
    )


class ComputeApi:
    """The subset of compute v1 the provider needs; raises only ``CloudError``."""

    def __init__(self, settings: GceSettings, retry: RetryPolicy) -> None:
        self.settings = settings
        self._retry = retry
        try:
            self._c = _clients(settings)
        except DefaultCredentialsError as exc:
            raise CloudConfigError(f"--cloud-provider=gce: no Application Default Credentials: {exc}") from None

    def close(self) -> None:
        for client in (self._c.migs, self._c.templates, self._c.regional_templates, self._c.machine_types,
                       self._c.operations):
            client.transport.close()  # type: ignore[no-untyped-call]

    def _call(self, what: str, fn: Callable[[], T]) -> T:
        return self._retry.call_translated(what, fn, translate)

    # --- reading --------------------------------------------------------------------

    def get_mig(self, ref: MigRef) -> compute_v1.InstanceGroupManager:
        return self._call(f"MIG {ref.zone}/{ref.name}: instanceGroupManagers.get", lambda: self._c.migs.get(
            project=ref.project, zone=ref.zone, instance_group_manager=ref.name, retry=None, timeout=_CALL_TIMEOUT))

    def list_migs(self, project: str, zone: str) -> list[compute_v1.InstanceGroupManager]:
        return self._call(f"zone {zone}: instanceGroupManagers.list", lambda: list(self._c.migs.list(
            project=project, zone=zone, retry=None, timeout=_CALL_TIMEOUT)))

    def list_managed_instances(self, ref: MigRef) -> list[compute_v1.ManagedInstance]:
        return self._call(f"MIG {ref.zone}/{ref.name}: listManagedInstances", lambda: list(
            self._c.migs.list_managed_instances(project=ref.project, zone=ref.zone, instance_group_manager=ref.name,
                                                retry=None, timeout=_CALL_TIMEOUT)))

    def get_template(self, url: str) -> compute_v1.InstanceTemplate:
        """A global (``projects/P/global/instanceTemplates/T``) or regional template by URL."""
        parts = url.split("/")
        name = parts[-1]
        project = parts[parts.index("projects") + 1] if "projects" in parts else self.settings.project
        if "regions" in parts:
            region = parts[parts.index("regions") + 1]
            return self._call(f"instance template {name}: regionInstanceTemplates.get",
                              lambda: self._c.regional_templates.get(
                                  project=project, region=region, instance_template=name, retry=None,
                                  timeout=_CALL_TIMEOUT))
        return self._call(f"instance template {name}: instanceTemplates.get", lambda: self._c.templates.get(
            project=project, instance_template=name, retry=None, timeout=_CALL_TIMEOUT))

    def get_machine_type(self, project: str, zone: str, name: str) -> compute_v1.MachineType:
        return self._call(f"machine type {zone}/{name}: machineTypes.get", lambda: self._c.machine_types.get(
            project=project, zone=zone, machine_type=name, retry=None, timeout=_CALL_TIMEOUT))

    # --- acting -----------------------------------------------------------------------

    def resize(self, ref: MigRef, size: int) -> None:
        what = f"MIG {ref.zone}/{ref.name}: resize to {size}"
        op = self._call(what, lambda: self._c.migs.resize_unary(
            project=ref.project, zone=ref.zone, instance_group_manager=ref.name, size=size, retry=None,
            timeout=_CALL_TIMEOUT))
        self._wait(ref, op, what)

    def delete_instances(self, ref: MigRef, instance_urls: Sequence[str]) -> None:
        what = f"MIG {ref.zone}/{ref.name}: deleteInstances {len(instance_urls)}"
        body = compute_v1.InstanceGroupManagersDeleteInstancesRequest(instances=list(instance_urls))
        op = self._call(what, lambda: self._c.migs.delete_instances_unary(
            project=ref.project, zone=ref.zone, instance_group_manager=ref.name,
            instance_group_managers_delete_instances_request_resource=body, retry=None, timeout=_CALL_TIMEOUT))
        self._wait(ref, op, what)

    def _wait(self, ref: MigRef, op: compute_v1.Operation, what: str) -> None:
        """Poll zoneOperations.get until DONE (CA ``waitForOp``); raise the operation's error.

        An operation still running after the timeout is left to the cloud: the request was
        accepted, and the next refresh reads the MIG's real state (logged, not raised).
        """
        waited = 0.0
        while op.status != compute_v1.Operation.Status.DONE:
            if waited >= self.settings.operation_timeout_seconds:
                _log.warning("operation still running, not waiting longer",
                             extra={"call": what, "operation": op.name, "seconds": waited})
                return
            self._retry.sleep(self.settings.operation_poll_seconds)
            waited += self.settings.operation_poll_seconds
            op = self._poll(ref, op.name, what)
        if op.error and op.error.errors:
            raise operation_error([(e.code, e.message) for e in op.error.errors], what)

    def _poll(self, ref: MigRef, name: str, what: str) -> compute_v1.Operation:
        return self._call(f"{what}: zoneOperations.get {name}", lambda: self._c.operations.get(
            project=ref.project, zone=ref.zone, operation=name, retry=None, timeout=_CALL_TIMEOUT))

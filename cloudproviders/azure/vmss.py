"""What a scale set's own properties say about its future nodes (upstream's ``buildNodeTemplateFromVMSS``).

Read once from the ARM resource into frozen data: the VM size, location and zones, the
OS (``windows`` when the VM profile has a ``windowsConfiguration``, else ``linux``),
the OS disk (size, ephemeral or managed, storage account type) and the tags. Upstream:
``cluster-autoscaler/cloudprovider/azure/azure_template.go``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum

from azure.mgmt.compute import models

from cloudproviders.interface import CloudError

__all__ = ["OsDisk", "VmssFacts", "vmss_facts"]


@dataclass(frozen=True, slots=True)
class OsDisk:
    size_gb: int | None
    #: ``diffDiskSettings.option == "Local"``: the OS disk lives on the VM's local disk.
    ephemeral: bool
    #: ``managedDisk.storageAccountType`` (``Premium_LRS``, ...), None when not given.
    storage_account_type: str | None


@dataclass(frozen=True, slots=True)
class VmssFacts:
    name: str
    sku_name: str
    location: str
    zones: tuple[str, ...]
    #: ``linux`` or ``windows``.
    os: str
    os_disk: OsDisk | None
    tags: Mapping[str, str] = field(default_factory=dict)


def _text(value: object) -> str | None:
    """An SDK field that is an enum member when Azure's value is known, else the raw string."""
    if value is None:
        return None
    return str(value.value) if isinstance(value, Enum) else str(value)


def _os_disk(profile: models.VirtualMachineScaleSetVMProfile | None) -> OsDisk | None:
    storage = profile.storage_profile if profile else None
    disk = storage.os_disk if storage else None
    if disk is None:
        return None
    option = disk.diff_disk_settings.option if disk.diff_disk_settings else None
    managed = disk.managed_disk
    account = managed.storage_account_type if managed else None
    return OsDisk(size_gb=disk.disk_size_gb, ephemeral=_text(option) == "Local",
                  storage_account_type=_text(account) or None)


def _os(profile: models.VirtualMachineScaleSetVMProfile | None) -> str:
    os_profile = profile.os_profile if profile else None
    return "windows" if os_profile is not None and os_profile.windows_configuration is not None else "linux"


def vmss_facts(scale_set: models.VirtualMachineScaleSet) -> VmssFacts:
    """The scale set's facts; ``CloudError`` when it has no VM size or no location (as upstream)."""
    name = scale_set.name or ""
    if scale_set.sku is None or not scale_set.sku.name:
        raise CloudError(f"VMSS {name}: has no SKU")
    if not scale_set.location:
        raise CloudError(f"VMSS {name}: has no location")
    profile = scale_set.properties.virtual_machine_profile if scale_set.properties else None
    return VmssFacts(name=name, sku_name=scale_set.sku.name, location=scale_set.location,
                     zones=tuple(z for z in scale_set.zones or () if z is not None), os=_os(profile),
                     os_disk=_os_disk(profile), tags={k: v or "" for k, v in (scale_set.tags or {}).items()})

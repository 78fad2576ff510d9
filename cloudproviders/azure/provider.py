"""The Azure ``CloudProvider``: static and tag-discovered scale sets, and nodes mapped to them.

Groups: ``--nodes=MIN:MAX:NAME`` (NAME a scale set in the configured resource group, or
its resource ID) and ``--node-group-auto-discovery=label:key=value[,key=value][,min=N][,max=M]``
(``discovery.py``, as upstream CA's ``cloudprovider/azure/azure_manager.go``). A
``--nodes`` scale set that does not exist is reported and left out (upstream's
``TestVMSSNotFound``: start-up does not fail), and the other groups keep autoscaling.

``refresh()`` re-reads every scale set (capacity, size, tags) each loop; VM lists are
re-read on the refresh timer, or sooner for a group we acted on or whose VMs are in
flight. Azure's provider ID names its scale set
(``azure:///subscriptions/S/resourceGroups/RG/providers/Microsoft.Compute/virtualMachineScaleSets/NAME/virtualMachines/ID``),
so a node maps to its group from the ID itself, case-insensitively as CA does; the VM
must also be in the group's cached VM list, which an unknown VM re-reads (at most once
per ``miss_refresh_seconds``) so a node that just registered finds its group.

VM sizes are read from the Resource SKUs API once per location and kept for the
provider's life; the shipped table of every size upstream knows (``skus.py``) covers
sizes the API does not answer for, and all of them when the API is refused.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Sequence

from azure.mgmt.compute import models

from cloudproviders.azure.api import ComputeApi
from cloudproviders.azure.discovery import LabelDiscovery, discovered_bounds, parse_auto_discovery
from cloudproviders.azure.group import VmssGroup
from cloudproviders.azure.prices import load_prices
from cloudproviders.azure.settings import AzureSettings
from cloudproviders.azure.skus import SkuInfo, sku_from_resource_sku, static_sku, without_promo
from cloudproviders.config import CloudConfigError, ProviderConfig
from cloudproviders.interface import CloudError, NodeGroup, NotFound
from kube.model import Node

__all__ = ["AzureProvider"]

_log = logging.getLogger(__name__)
_PROVIDER_ID = re.compile(
    r"^azure:///subscriptions/([^/]+)/resourceGroups/([^/]+)/providers/Microsoft\.Compute/"
    r"virtualMachineScaleSets/([^/]+)/virtualMachines/[^/]+$", re.IGNORECASE)
_RESOURCE_ID = re.compile(r"/virtualMachineScaleSets/([^/]+)$", re.IGNORECASE)


def _static_name(name: str) -> str:
    match = _RESOURCE_ID.search(name)
    if match:
        return match.group(1)
    if "/" in name:
        raise CloudConfigError(f"--nodes: {name!r} is neither a scale set name nor its resource ID")
    return name


def _static_groups(config: ProviderConfig) -> list[tuple[str, int, int]]:
    """``--nodes`` as upstream registers them (``azure_cache.go`` ``Register``): a scale set given twice
    is one group, the last bounds given win (logged), case-insensitively."""
    by_key: dict[str, tuple[str, int, int]] = {}
    for spec in config.static_groups:
        name = _static_name(spec.name)
        earlier = by_key.get(name.lower())
        if earlier is not None and earlier[1:] != (spec.min_size, spec.max_size):
            _log.warning("--nodes: scale set given twice, the last bounds win",
                         extra={"node_group": name, "min": spec.min_size, "max": spec.max_size})
        by_key[name.lower()] = (name, spec.min_size, spec.max_size)
    return list(by_key.values())


class AzureProvider:
    def __init__(self, config: ProviderConfig, settings: AzureSettings, api: ComputeApi,
                 clock: Callable[[], float] = time.monotonic, miss_refresh_seconds: float = 10.0) -> None:
        self._config = config
        self._settings = settings
        self._api = api
        self._clock = clock
        self._prices = load_prices(config.price_file)
        self._static = _static_groups(config)
        self._discovery: list[LabelDiscovery] = [parse_auto_discovery(s) for s in config.auto_discovery]
        self._groups: dict[str, VmssGroup] = {}
        self._skus: dict[str, dict[str, SkuInfo]] = {}
        self._last_full: float | None = None
        self._miss_refresh_seconds = miss_refresh_seconds
        self._last_miss: float | None = None

    @property
    def name(self) -> str:
        return "azure"

    def close(self) -> None:
        self._api.close()

    def node_groups(self) -> Sequence[NodeGroup]:
        return [self._groups[key] for key in sorted(self._groups)]

    def refresh(self) -> None:
        now = self._clock()
        full = self._last_full is None or now - self._last_full >= self._config.refresh_interval_seconds
        seen: set[str] = set()
        for name, low, high in self._static:
            scale_set = self._static_scale_set(name)
            if scale_set is not None:
                self._group(name, low, high).update(scale_set, low, high)
                seen.add(name.lower())
        for scale_set in self._api.list_scale_sets() if self._discovery else ():
            name = scale_set.name or ""
            if name.lower() in seen:
                continue  # static groups win over discovered ones
            bounds = discovered_bounds(dict(scale_set.tags or {}), self._discovery)
            if isinstance(bounds, str):
                _log.warning("discovered scale set skipped", extra={"node_group": name, "reason": bounds})
            elif bounds is not None:
                self._group(name, *bounds).update(scale_set, *bounds)
                seen.add(name.lower())
        for key in set(self._groups) - seen:
            _log.info("node group gone", extra={"node_group": self._groups[key].name})
            del self._groups[key]
        for group in self._groups.values():
            if full or group.needs_instances():
                group.load_instances()
        if full:
            self._last_full = now

    def _static_scale_set(self, name: str) -> models.VirtualMachineScaleSet | None:
        try:
            return self._api.get_scale_set(name)
        except NotFound as exc:
            _log.warning("--nodes scale set not found, left out", extra={"node_group": name, "error": str(exc)})
            return None

    def _group(self, name: str, low: int, high: int) -> VmssGroup:
        group = self._groups.get(name.lower())
        if group is None:
            group = VmssGroup(name, low, high, api=self._api, storage=self._config.storage, prices=self._prices,
                              sku_lookup=self._sku, predict_labels=self._settings.label_predictions)
            self._groups[name.lower()] = group
        return group

    def _listed_skus(self, location: str) -> dict[str, SkuInfo]:
        """The location's sizes from the Resource SKUs API, read once; empty when the API refuses."""
        key = location.lower()
        if key not in self._skus:
            try:
                listed = self._api.list_skus(location)
            except CloudError as exc:
                _log.warning("resource SKUs unavailable; using the shipped size table",
                             extra={"location": location, "error": str(exc)})
                return {}
            infos = (sku_from_resource_sku(s) for s in listed if (s.resource_type or "") == "virtualMachines")
            self._skus[key] = {i.name.lower(): i for i in infos if i is not None}
        return self._skus[key]

    def _sku(self, size: str, location: str) -> SkuInfo | None:
        """The size from the SKU API (or its non-promo twin), else the shipped table (upstream's fallback)."""
        listed = self._listed_skus(location)
        return listed.get(size.lower()) or listed.get(without_promo(size).lower()) or static_sku(size)

    def node_group_for(self, node: Node) -> NodeGroup | None:
        match = _PROVIDER_ID.match(node.provider_id)
        if match is None:
            return None
        subscription, resource_group, name = match.groups()
        if (subscription.lower(), resource_group.lower()) != (self._settings.subscription_id.lower(),
                                                              self._settings.resource_group.lower()):
            return None
        group = self._groups.get(name.lower())
        if group is None or group.has_instance(node.provider_id):
            return group
        now = self._clock()
        if self._last_miss is not None and now - self._last_miss < self._miss_refresh_seconds:
            return None
        self._last_miss = now
        try:
            group.load_instances()
        except CloudError as exc:
            _log.warning("cannot re-list VMs for an unknown node", extra={"node": node.name, "error": str(exc)})
            return None
        return group if group.has_instance(node.provider_id) else None

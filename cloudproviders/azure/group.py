"""One virtual machine scale set (Uniform orchestration) as a ``NodeGroup``.

Cached target (``sku.capacity``) and VMs, refreshed by the provider; acting updates the
cache at once and marks the VM list stale. Upstream: CA's
``cloudprovider/azure/azure_scale_set.go``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping, Sequence

from azure.mgmt.compute import models

from cloudproviders.azure.api import ComputeApi
from cloudproviders.azure.errors import instance_error
from cloudproviders.azure.skus import SkuInfo
from cloudproviders.azure.tags import options_from_tags
from cloudproviders.azure.template import GroupTemplate, build_template
from cloudproviders.azure.vmss import vmss_facts
from cloudproviders.deletable import check_deletable
from cloudproviders.interface import CloudError, GroupOptions, Instance, InstanceState
from cloudproviders.shrink import plan_shrink
from cloudproviders.template_pods import kube_proxy_pod
from kube.model import Node, Pod
from kube.names import StorageNames

__all__ = ["VmssGroup", "instance_id_of"]

_log = logging.getLogger(__name__)
_VM_INDEX = re.compile(r"/virtualMachines/([^/]+)$", re.IGNORECASE)

#: (VM size, location) -> what the size has, or None when unknown.
SkuLookup = Callable[[str, str], SkuInfo | None]


def instance_id_of(provider_id: str) -> str | None:
    """The VMSS instance ID (``3``) at the end of an ``azure:///...`` provider ID."""
    match = _VM_INDEX.search(provider_id)
    return match.group(1) if match else None


def _instance(vm: models.VirtualMachineScaleSetVM) -> Instance:
    properties = vm.properties
    state_text = (properties.provisioning_state if properties else None) or ""
    view = properties.instance_view if properties else None
    statuses = [(s.code or "", s.message or "") for s in (view.statuses or [])] if view else []
    pid = f"azure://{vm.id}"
    if state_text == "Creating":
        return Instance(pid, InstanceState.CREATING)
    if state_text == "Deleting":
        return Instance(pid, InstanceState.DELETING)
    if state_text == "Failed":
        # A VM that failed to provision never registers; CA reports it as creating
        # with an error so the group is backed off and the VM cleaned up.
        return Instance(pid, InstanceState.CREATING, instance_error(statuses))
    return Instance(pid, InstanceState.RUNNING)


class VmssGroup:
    def __init__(self, name: str, min_size: int, max_size: int, *, api: ComputeApi, storage: StorageNames,
                 prices: Mapping[str, float], sku_lookup: SkuLookup, predict_labels: bool = True) -> None:
        self._name = name
        self._min = min_size
        self._max = max_size
        self._api = api
        self._storage = storage
        self._prices = prices
        self._sku_lookup = sku_lookup
        self._predict_labels = predict_labels
        self._scale_set: models.VirtualMachineScaleSet | None = None
        self._target = 0
        self._instances: tuple[Instance, ...] = ()
        #: lower-cased provider ID -> VMSS instance ID.
        self._ids: dict[str, str] = {}
        self._template: GroupTemplate | None = None
        self.stale = True

    # --- cache, driven by the provider ------------------------------------------------------

    def update(self, scale_set: models.VirtualMachineScaleSet, min_size: int, max_size: int) -> None:
        self._min, self._max = min_size, max_size
        def shape(each: models.VirtualMachineScaleSet) -> tuple[object, ...]:
            profile = each.properties.virtual_machine_profile if each.properties else None
            return each.tags, each.sku.name if each.sku else None, each.location, each.zones, profile

        if self._scale_set is None or shape(scale_set) != shape(self._scale_set):
            self._template = None  # tags, size, zones or VM profile changed: rebuild the template
        self._scale_set = scale_set
        self._target = (scale_set.sku.capacity if scale_set.sku else None) or 0

    def needs_instances(self) -> bool:
        return (self.stale or len(self._instances) != self._target
                or any(i.state is not InstanceState.RUNNING for i in self._instances))

    def load_instances(self) -> None:
        instances: list[Instance] = []
        ids: dict[str, str] = {}
        for vm in self._api.list_vms(self._name):
            if not vm.id or vm.instance_id is None:
                raise CloudError(f"VMSS {self._name}: virtualMachines.list: a VM without id/instanceId")
            instance = _instance(vm)
            instances.append(instance)
            ids[instance.id.lower()] = vm.instance_id
        self._instances = tuple(instances)
        self._ids = ids
        self.stale = False

    def has_instance(self, provider_id: str) -> bool:
        return provider_id.lower() in self._ids

    def _forget(self, keys: Sequence[str]) -> None:
        gone = set(keys)
        self._instances = tuple(i for i in self._instances if i.id.lower() not in gone)
        for key in gone:
            self._ids.pop(key, None)

    # --- NodeGroup ---------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self._name

    def min_size(self) -> int:
        return self._min

    def max_size(self) -> int:
        return self._max

    def target_size(self) -> int:
        return self._target

    def instances(self) -> Sequence[Instance]:
        return self._instances

    def _template_info(self) -> GroupTemplate | None:
        if self._template is not None or self._scale_set is None:
            return self._template
        try:
            facts = vmss_facts(self._scale_set)
        except CloudError as exc:
            _log.warning("no template node", extra={"node_group": self._name, "error": str(exc)})
            return None
        sku = self._sku_lookup(facts.sku_name, facts.location)
        if sku is None:
            _log.warning("no template node: VM size unknown", extra={"node_group": self._name,
                                                                     "vm_size": facts.sku_name})
            return None
        self._template = build_template(facts, sku, self._storage, predict_labels=self._predict_labels)
        for message in self._template.dropped:
            _log.warning("template tag left out", extra={"node_group": self._name, "error": message})
        return self._template

    def template_node(self) -> Node | None:
        info = self._template_info()
        return info.node if info is not None else None

    def template_pods(self) -> tuple[Pod, ...]:
        return (kube_proxy_pod(self.name),)

    def group_options(self) -> GroupOptions:
        """From the tags alone: upstream reads options even when no template can be built (``GetOptions``)."""
        tags = self._scale_set.tags if self._scale_set is not None else None
        return options_from_tags({k: v or "" for k, v in (tags or {}).items()}).value

    def price_per_hour(self) -> float | None:
        size = self._scale_set.sku.name if self._scale_set is not None and self._scale_set.sku else None
        return self._prices.get(size.lower()) if size else None

    def _sku(self) -> models.Sku:
        if self._scale_set is None or self._scale_set.sku is None:
            raise CloudError(f"VMSS {self._name}: not read from Azure yet (refresh first)")
        return self._scale_set.sku

    def _set_capacity(self, capacity: int) -> None:
        try:
            self._api.set_capacity(self._name, self._sku(), capacity)
        finally:
            self.stale = True
        self._target = capacity

    def increase_size(self, delta: int) -> None:
        if delta <= 0:
            raise CloudError(f"VMSS {self._name}: size increase must be positive, got {delta}")
        if self._target + delta > self._max:
            raise CloudError(f"VMSS {self._name}: size {self._target + delta} above max {self._max}")
        self._set_capacity(self._target + delta)

    def _delete(self, keys: Sequence[str]) -> None:
        try:
            self._api.delete_instances(self._name, [self._ids[k] for k in keys])
        finally:
            self.stale = True
        self._target -= len(keys)
        self._forget(keys)

    def delete_nodes(self, nodes: Sequence[Node]) -> None:
        keys = [n.provider_id.lower() for n in nodes]
        check_deletable(f"VMSS {self._name}", nodes, keys, is_member=lambda k: k in self._ids, target=self._target,
                        min_size=self._min, reload=self.load_instances, member="an instance of this scale set")
        self._delete(keys)

    def decrease_target_size(self, delta: int) -> None:
        """Lower the capacity by VMs still being created (failed ones first), never a running one (read fresh)."""
        if delta >= 0:
            raise CloudError(f"VMSS {self._name}: size decrease must be negative, got {delta}")
        # Read the scale set fresh: a VM the cache still calls creating may be up by now,
        # and may be a registered node.
        self.update(self._api.get_scale_set(self._name), self._min, self._max)
        self.load_instances()
        plan = plan_shrink(self._target, self._instances, delta)
        if -delta > plan.not_created:
            raise CloudError(f"VMSS {self._name}: attempt to delete existing nodes: capacity {self._target}, "
                             f"instances not yet created {plan.not_created}, delta {delta}")
        by_capacity = plan.by_size
        by_name = [i.id.lower() for i in plan.by_name]
        if by_capacity:
            self._set_capacity(self._target - by_capacity)
        if by_name:
            self._delete(by_name)

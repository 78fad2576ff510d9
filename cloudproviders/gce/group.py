"""One MIG as a ``NodeGroup``: cached target size and instances, acting through ``ComputeApi``.

The provider refreshes the cache; acting updates it at once (the target) and marks the
instance list stale, so the next refresh re-lists it. Upstream: CA's
``cloudprovider/gce/gce_cloud_provider.go`` (``gceMig``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from google.cloud import compute_v1

from cloudproviders.deletable import check_deletable
from cloudproviders.gce import kube_env as ke
from cloudproviders.gce.api import ComputeApi
from cloudproviders.gce.errors import instance_error
from cloudproviders.gce.machine import MachineShape, custom_machine, from_api, is_custom
from cloudproviders.gce.options import group_options
from cloudproviders.gce.prices import LOCAL_SSD_PER_HOUR
from cloudproviders.gce.settings import MigRef, parse_instance_url
from cloudproviders.gce.template import GroupTemplate, build_template
from cloudproviders.interface import CloudError, GroupOptions, Instance, InstanceState
from cloudproviders.shrink import plan_shrink
from cloudproviders.template_pods import kube_proxy_pod
from kube.model import Node, Pod
from kube.names import StorageNames

__all__ = ["MigGroup", "provider_id"]

_log = logging.getLogger(__name__)
_CREATING = frozenset({"CREATING", "RECREATING", "CREATING_WITHOUT_RETRIES", "VERIFYING"})
_DELETING = frozenset({"ABANDONING", "DELETING"})


@dataclass(frozen=True, slots=True)
class _TemplateInfo:
    """What one instance template says: the node (None when it cannot be built) and the options."""

    node: GroupTemplate | None
    options: GroupOptions


def provider_id(project: str, zone: str, name: str) -> str:
    """``spec.providerID`` of a GCE node (kubelet / cloud-provider-gcp)."""
    return f"gce://{project}/{zone}/{name}"


def _instance(managed: compute_v1.ManagedInstance) -> tuple[Instance, str] | None:
    parsed = parse_instance_url(managed.instance)
    if parsed is None:
        return None
    action = managed.current_action
    state = (InstanceState.CREATING if action in _CREATING
             else InstanceState.DELETING if action in _DELETING else InstanceState.RUNNING)
    error = None
    if state is InstanceState.CREATING and managed.last_attempt and managed.last_attempt.errors:
        error = instance_error([(e.code, e.message) for e in managed.last_attempt.errors.errors])
    return Instance(provider_id(*parsed), state, error), managed.instance


class MigGroup:
    def __init__(self, ref: MigRef, min_size: int, max_size: int, *, api: ComputeApi, storage: StorageNames,
                 prices: Mapping[str, float]) -> None:
        self.ref = ref
        self._min = min_size
        self._max = max_size
        self._api = api
        self._storage = storage
        self._prices = prices
        self._target = 0
        self._template_url = ""
        self._template: _TemplateInfo | None = None
        self._template_for = ""
        self._instances: tuple[Instance, ...] = ()
        #: provider ID -> instance URL, for deleteInstances.
        self._urls: dict[str, str] = {}
        self.stale = True

    # --- cache, driven by the provider ------------------------------------------------------

    def update(self, mig: compute_v1.InstanceGroupManager, min_size: int, max_size: int) -> None:
        self._min, self._max = min_size, max_size
        self._target = mig.target_size
        self._template_url = mig.instance_template

    def needs_instances(self) -> bool:
        """Whether the instance list may be out of date (we acted, or something is in flight)."""
        return (self.stale or len(self._instances) != self._target
                or any(i.state is not InstanceState.RUNNING for i in self._instances))

    def load_instances(self) -> None:
        instances: list[Instance] = []
        urls: dict[str, str] = {}
        for managed in self._api.list_managed_instances(self.ref):
            parsed = _instance(managed)
            if parsed is None:
                raise CloudError(f"MIG {self.name}: listManagedInstances: bad instance URL {managed.instance!r}")
            instances.append(parsed[0])
            urls[parsed[0].id] = parsed[1]
        self._instances = tuple(instances)
        self._urls = urls
        self.stale = False

    def _forget(self, ids: Sequence[str]) -> None:
        """Drop deleted instances from the cache at once, so a second call does not pick them again."""
        gone = set(ids)
        self._instances = tuple(i for i in self._instances if i.id not in gone)
        for each in gone:
            self._urls.pop(each, None)

    def instance_ids(self) -> Sequence[str]:
        return tuple(self._urls)

    # --- NodeGroup ---------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self.ref.url

    def min_size(self) -> int:
        return self._min

    def max_size(self) -> int:
        return self._max

    def target_size(self) -> int:
        return self._target

    def instances(self) -> Sequence[Instance]:
        return self._instances

    def _template_info(self) -> _TemplateInfo | None:
        """The template node and options, read once per instance template (upstream caches by name)."""
        if self._template is not None and self._template_for == self._template_url:
            return self._template
        if not self._template_url:
            return None
        try:
            template = self._api.get_template(self._template_url)
            env = ke.kube_env_of(template)
        except CloudError as exc:
            # One group's unreadable template must not stop the others: no template,
            # so no scale-from-zero for it, until a later call reads it.
            _log.warning("no template node", extra={"node_group": self.name, "error": str(exc)})
            return None
        # Options are read apart from the node, as upstream's refreshAutoscalingOptions.
        options = group_options(ke.autoscaling_options(env), self.name)
        try:
            machine = self._machine(template)
        except CloudError as exc:
            _log.warning("no template node", extra={"node_group": self.name, "error": str(exc)})
            return _TemplateInfo(None, options)  # not kept: the next call asks again
        node: GroupTemplate | None = None
        try:
            node = build_template(self.name, self.ref.zone, template, env, machine=machine, storage=self._storage)
        except CloudError as exc:
            _log.warning("no template node", extra={"node_group": self.name, "error": str(exc)})
        self._template = _TemplateInfo(node, options)
        self._template_for = self._template_url
        return self._template

    def _machine(self, template: compute_v1.InstanceTemplate) -> MachineShape:
        """Upstream ``GetMigMachineType``: a custom type from its name, others from ``machineTypes.get``."""
        name = template.properties.machine_type.rsplit("/", 1)[-1]
        if is_custom(name):
            return custom_machine(name)
        return from_api(name, self._api.get_machine_type(self.ref.project, self.ref.zone, name))

    def template_node(self) -> Node | None:
        info = self._template_info()
        return info.node.node if info is not None and info.node is not None else None

    def template_pods(self) -> tuple[Pod, ...]:
        return (kube_proxy_pod(self.name),)

    def group_options(self) -> GroupOptions:
        info = self._template_info()
        return info.options if info is not None else GroupOptions()

    def price_per_hour(self) -> float | None:
        info = self._template_info()
        built = info.node if info is not None else None
        if built is None or built.machine_type not in self._prices:
            return None
        return self._prices[built.machine_type] + built.local_ssd_count * LOCAL_SSD_PER_HOUR

    def increase_size(self, delta: int) -> None:
        if delta <= 0:
            raise CloudError(f"MIG {self.name}: size increase must be positive, got {delta}")
        if self._target + delta > self._max:
            raise CloudError(f"MIG {self.name}: size {self._target + delta} above max {self._max}")
        try:
            self._api.resize(self.ref, self._target + delta)
        finally:
            self.stale = True
        self._target += delta

    def delete_nodes(self, nodes: Sequence[Node]) -> None:
        ids = [n.provider_id for n in nodes]
        check_deletable(f"MIG {self.name}", nodes, ids, is_member=lambda k: k in self._urls, target=self._target,
                        min_size=self._min, reload=self.load_instances, member="an instance of this group")
        try:
            self._api.delete_instances(self.ref, [self._urls[i] for i in ids])
        finally:
            self.stale = True
        self._target -= len(nodes)
        self._forget(ids)

    def decrease_target_size(self, delta: int) -> None:
        """Lower the target by instances still being created, never a running one (read fresh).

        GCE's resize-down may pick any instance, so instances the MIG lists as creating
        are removed by name (failed ones first); only a target above the listed
        instances is lowered by a plain resize.
        """
        if delta >= 0:
            raise CloudError(f"MIG {self.name}: size decrease must be negative, got {delta}")
        # Read the group fresh: an instance the cache still calls creating may be up by
        # now, and may be a registered node.
        self.update(self._api.get_mig(self.ref), self._min, self._max)
        self.load_instances()
        plan = plan_shrink(self._target, self._instances, delta)
        if -delta > plan.not_created:
            raise CloudError(f"MIG {self.name}: attempt to delete existing nodes: target {self._target}, "
                             f"instances not yet created {plan.not_created}, delta {delta}")
        by_resize, by_name = plan.by_size, plan.by_name
        try:
            if by_resize:
                self._api.resize(self.ref, self._target - by_resize)
                self._target -= by_resize
            if by_name:
                self._api.delete_instances(self.ref, [self._urls[i.id] for i in by_name])
                self._target -= len(by_name)
                self._forget([i.id for i in by_name])
        finally:
            self.stale = True

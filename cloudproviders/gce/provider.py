"""The GCE ``CloudProvider``: static and auto-discovered MIGs, and nodes mapped to them.

Groups: ``--nodes=MIN:MAX:NAME`` (NAME a MIG URL or ``zone/name``) and
``--node-group-auto-discovery=mig:namePrefix=P,min=N,max=M`` (MIGs in the configured
zones whose name matches the regular expression ``^P.+``, as upstream CA's
``cloudprovider/gce/gce_manager.go`` ``fetchAutoMigs``).

``refresh()`` re-reads every MIG (target size, template) each loop, because acting on a
stale target is wrong; instance lists are re-read on the refresh timer, or sooner for a
group we acted on or whose instances are in flight. A node whose ``spec.providerID``
is unknown triggers one re-list of all groups (at most once per ``miss_refresh_seconds``),
so a node that just registered finds its group without waiting for the timer.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from cloudproviders.config import CloudConfigError, ProviderConfig
from cloudproviders.gce.api import ComputeApi
from cloudproviders.gce.group import MigGroup
from cloudproviders.gce.prices import load_prices
from cloudproviders.gce.settings import GceSettings, MigRef, parse_mig_name
from cloudproviders.interface import CloudError, NodeGroup
from kube.model import Node

__all__ = ["AutoDiscovery", "GceProvider", "parse_auto_discovery"]

_log = logging.getLogger(__name__)
_PROVIDER_ID = re.compile(r"^gce://([^/]+)/([^/]+)/([^/]+)$")
#: What Go's ``strconv.Atoi`` reads.
_GO_INT = re.compile(r"[+-]?[0-9]+")


@dataclass(frozen=True, slots=True)
class AutoDiscovery:
    name_pattern: re.Pattern[str]
    min_size: int
    max_size: int


def parse_auto_discovery(spec: str) -> AutoDiscovery:
    """``mig:namePrefix=P,min=N,max=M``; ``CloudConfigError`` where upstream refuses it.

    Upstream ``parseMIGAutoDiscoverySpec``: ``min`` defaults to 0, a repeated key keeps its
    last value, and the prefix, ``min <= max`` and ``max >= 1`` are required.
    """
    def refuse(why: str) -> CloudConfigError:
        return CloudConfigError(f"--node-group-auto-discovery: {spec!r}: {why}")

    tokens = spec.split(":")
    if len(tokens) != 2 or tokens[0] != "mig":
        raise refuse("GCE expects mig:namePrefix=P,min=N,max=M")
    prefix: str | None = None
    bounds = {"min": 0, "max": 0}
    for part in tokens[1].split(","):
        pair = part.split("=")
        if len(pair) != 2:
            raise refuse(f"{part!r} is not key=value")
        key, value = pair
        if key == "namePrefix":
            prefix = value
        elif key in bounds:
            if not _GO_INT.fullmatch(value):
                raise refuse(f"{key}={value!r} is not an integer")
            bounds[key] = int(value)
        else:
            raise refuse(f"unknown key {key!r} (namePrefix, min, max)")
    if not prefix:
        raise refuse("empty instance group name prefix")
    try:
        pattern = re.compile(f"^{prefix}.+")
    except re.error as exc:
        raise refuse(f"namePrefix: ^{prefix}.+ is not a regular expression: {exc}") from None
    low, high = bounds["min"], bounds["max"]
    if low < 0 or low > high:
        raise refuse(f"need 0 <= min <= max, got min={low}, max={high}")
    if high < 1:
        raise refuse(f"max must be at least 1, got {high}")
    return AutoDiscovery(pattern, low, high)


def _static_groups(config: ProviderConfig, project: str) -> list[tuple[MigRef, int, int]]:
    """``--nodes`` MIGs; one named twice takes its last bounds (upstream re-registers it, ``cache.go``)."""
    bounds: dict[MigRef, tuple[int, int]] = {}
    for spec in config.static_groups:
        ref = parse_mig_name(spec.name, project)
        if ref in bounds:
            _log.warning("MIG given twice in --nodes, the last bounds win",
                         extra={"node_group": ref.url, "min": spec.min_size, "max": spec.max_size})
        bounds[ref] = (spec.min_size, spec.max_size)
    return [(ref, low, high) for ref, (low, high) in bounds.items()]


class GceProvider:
    def __init__(self, config: ProviderConfig, settings: GceSettings, api: ComputeApi,
                 clock: Callable[[], float] = time.monotonic, miss_refresh_seconds: float = 10.0) -> None:
        self._config = config
        self._settings = settings
        self._api = api
        self._clock = clock
        self._miss_refresh_seconds = miss_refresh_seconds
        self._prices = load_prices(config.price_file)
        self._static = _static_groups(config, settings.project)
        self._discovery = [parse_auto_discovery(spec) for spec in config.auto_discovery]
        if self._discovery and not settings.zones:
            raise CloudConfigError("--node-group-auto-discovery with GCE needs zones in --cloud-config (or GCE_ZONES)")
        self._groups: dict[MigRef, MigGroup] = {}
        self._owner: dict[str, MigGroup] = {}
        self._last_full: float | None = None
        self._last_miss: float | None = None

    @property
    def name(self) -> str:
        return "gce"

    def close(self) -> None:
        self._api.close()

    def node_groups(self) -> Sequence[NodeGroup]:
        return [self._groups[ref] for ref in sorted(self._groups)]

    def refresh(self) -> None:
        now = self._clock()
        full = self._last_full is None or now - self._last_full >= self._config.refresh_interval_seconds
        seen: dict[MigRef, tuple[int, int]] = {}
        for ref, low, high in self._static:
            self._group(ref, low, high).update(self._api.get_mig(ref), low, high)
            seen[ref] = (low, high)
        for zone in self._settings.zones if self._discovery else ():
            for mig in self._api.list_migs(self._settings.project, zone):
                ref = MigRef(self._settings.project, zone, mig.name)
                rule = next((d for d in self._discovery if d.name_pattern.match(mig.name)), None)
                if rule is None or ref in seen:
                    continue  # static groups win over discovered ones
                self._group(ref, rule.min_size, rule.max_size).update(mig, rule.min_size, rule.max_size)
                seen[ref] = (rule.min_size, rule.max_size)
        for ref in set(self._groups) - set(seen):
            _log.info("node group gone", extra={"node_group": ref.url})
            del self._groups[ref]
        for group in self._groups.values():
            if full or group.needs_instances():
                group.load_instances()
        if full:
            self._last_full = now
        self._index()

    def _group(self, ref: MigRef, low: int, high: int) -> MigGroup:
        group = self._groups.get(ref)
        if group is None:
            group = MigGroup(ref, low, high, api=self._api, storage=self._config.storage, prices=self._prices)
            self._groups[ref] = group
        return group

    def _index(self) -> None:
        self._owner = {iid: group for group in self._groups.values() for iid in group.instance_ids()}

    def node_group_for(self, node: Node) -> NodeGroup | None:
        match = _PROVIDER_ID.match(node.provider_id)
        if match is None:
            return None
        group = self._owner.get(node.provider_id)
        if group is not None:
            return group
        project, zone = match.group(1), match.group(2)
        if not any(ref.project == project and ref.zone == zone for ref in self._groups):
            return None  # no group of ours lives there: no point asking the cloud
        now = self._clock()
        if self._last_miss is not None and now - self._last_miss < self._miss_refresh_seconds:
            return None
        self._last_miss = now
        try:
            for each in self._groups.values():
                each.load_instances()
        except CloudError as exc:
            _log.warning("cannot re-list instances for an unknown node",
                         extra={"node": node.name, "error": str(exc)})
            return None
        self._index()
        return self._owner.get(node.provider_id)

"""What every cloud provider is built from: CA's provider flags, validated once.

``--nodes=MIN:MAX:NAME`` (repeatable) names static groups; ``--node-group-auto-discovery``
(repeatable) discovers groups with CA's per-cloud syntax (AWS ``asg:tag=k1,k2=v``, GCE
``mig:namePrefix=p,min=0,max=10``, Azure ``label:key=value``); ``--cloud-config`` is the
provider's own file. ``load_provider`` imports only the named provider's package, so
``plan`` and the other providers never pay for an SDK they do not use.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol
from urllib.parse import urlsplit

from cloudproviders.interface import CloudProvider
from kube.names import StorageNames

__all__ = [
    "PROVIDERS",
    "CloudConfigError",
    "ProviderConfig",
    "StaticGroup",
    "is_loopback_http",
    "load_provider",
    "parse_nodes_flag",
]

#: ``--cloud-provider`` value -> package under ``cloudproviders``.
PROVIDERS = {"aws": "cloudproviders.aws", "gce": "cloudproviders.gce", "azure": "cloudproviders.azure"}


class CloudConfigError(ValueError):
    """A provider flag or the cloud config file is wrong; the message names the flag or field."""


@dataclass(frozen=True, slots=True)
class StaticGroup:
    """One ``--nodes=MIN:MAX:NAME``."""

    min_size: int
    max_size: int
    name: str


@dataclass(frozen=True, slots=True)
class ProviderConfig:
    static_groups: tuple[StaticGroup, ...] = ()
    #: Raw ``--node-group-auto-discovery`` values; each provider parses its own syntax.
    auto_discovery: tuple[str, ...] = ()
    #: ``--cloud-config``: the provider's own configuration file, if any.
    cloud_config: str | None = None
    #: Node names of the storage extension (the max-capacity label a template gets).
    storage: StorageNames = field(default_factory=StorageNames)
    #: Seconds between full refreshes of the group and instance cache (CA: 1 min for AWS).
    refresh_interval_seconds: float = 60.0
    #: A JSON/YAML file of ``{instanceType: pricePerHour}`` overriding the shipped table.
    price_file: str | None = None


def parse_nodes_flag(value: str) -> StaticGroup:
    """``MIN:MAX:NAME`` as CA's ``--nodes`` (``dynamic.SpecFromString``)."""
    parts = value.split(":", 2)
    if len(parts) != 3 or not parts[2]:
        raise CloudConfigError(f"--nodes: {value!r} is not MIN:MAX:NAME (e.g. 1:10:my-asg)")
    try:
        low, high = int(parts[0]), int(parts[1])
    except ValueError:
        raise CloudConfigError(f"--nodes: {value!r}: MIN and MAX must be integers") from None
    if low < 0:
        raise CloudConfigError(f"--nodes: {value!r}: min size must be >= 0")
    if high < low:
        raise CloudConfigError(f"--nodes: {value!r}: max size must be >= min size")
    return StaticGroup(low, high, parts[2])


class _ProviderModule(Protocol):
    def build_provider(self, config: ProviderConfig) -> CloudProvider: ...


def load_provider(name: str, config: ProviderConfig) -> CloudProvider:
    """Import ``cloudproviders.<name>`` and build its provider; ``CloudConfigError`` for a bad name."""
    package = PROVIDERS.get(name)
    if package is None:
        raise CloudConfigError(f"--cloud-provider: {name!r} is not one of {', '.join(sorted(PROVIDERS))}")
    module: _ProviderModule = importlib.import_module(package)
    return module.build_provider(config)


def unique_names(groups: Sequence[StaticGroup]) -> None:
    """Raise ``CloudConfigError`` if two ``--nodes`` flags name the same group."""
    seen: set[str] = set()
    for group in groups:
        if group.name in seen:
            raise CloudConfigError(f"--nodes: group {group.name!r} given twice")
        seen.add(group.name)


def is_loopback_http(endpoint: str | None) -> bool:
    """Whether ``endpoint`` is plain http to this machine (a test fake): the one case plain http is allowed."""
    if endpoint is None:
        return False
    parts = urlsplit(endpoint)
    return parts.scheme == "http" and parts.hostname in ("127.0.0.1", "localhost", "::1")

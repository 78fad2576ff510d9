"""GCE provider settings: the ``--cloud-config`` file, environment fallbacks, MIG references.

The cloud config is an INI file with a ``[global]`` section, in the spirit of the
``gce.conf`` upstream CA reads (``cloudprovider/gce/gce_manager.go``)::

    [global]
    project-id = my-project
    # zones that auto-discovery searches (comma-separated); static groups name their own
    zones = europe-west4-a, europe-west4-b
    # only for tests or private endpoints; default: Google's public endpoint
    api-endpoint = http://127.0.0.1:8089
    # how long to wait for a resize/deleteInstances operation (Go duration)
    operation-timeout = 20s

Environment fallbacks when there is no file (or a key is missing): ``GCE_PROJECT``,
``GCE_ZONES``, ``GCE_API_ENDPOINT``. A plain ``http://`` endpoint is accepted only on
a loopback host: it is a test server, and no credentials are sent to it.
"""

from __future__ import annotations

import configparser
import re
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from cloudproviders.config import CloudConfigError, is_loopback_http
from kube.duration import parse_duration

__all__ = ["GceSettings", "MigRef", "load_settings", "parse_mig_name"]

_MIG_URL = re.compile(r"(?:^|/)projects/([^/]+)/zones/([^/]+)/(?:instanceGroups|instanceGroupManagers)/([^/]+)$")
_ZONE_NAME = re.compile(r"^([a-z][-a-z0-9]*)/([a-z]([-a-z0-9]*[a-z0-9])?)$")
_INSTANCE_URL = re.compile(r"(?:^|/)projects/([^/]+)/zones/([^/]+)/instances/([^/]+)$")


@dataclass(frozen=True, slots=True)
class GceSettings:
    project: str
    #: Zones auto-discovery lists MIGs in.
    zones: tuple[str, ...] = ()
    #: ``None``: Google's endpoint with Application Default Credentials.
    endpoint: str | None = None
    #: Seconds to wait for a zone operation before leaving it to the next refresh (CA: 20 s).
    operation_timeout_seconds: float = 20.0
    #: Seconds between zoneOperations.get polls (CA: 100 ms).
    operation_poll_seconds: float = 0.1


@dataclass(frozen=True, slots=True, order=True)
class MigRef:
    project: str
    zone: str
    name: str

    @property
    def url(self) -> str:
        """CA's MIG id (``GceRef`` -> ``GenerateMigUrl``): also the NodeGroup name."""
        return f"https://www.googleapis.com/compute/v1/projects/{self.project}/zones/{self.zone}/instanceGroups/{self.name}"


def parse_mig_name(name: str, default_project: str) -> MigRef:
    """A ``--nodes`` NAME: a MIG URL (``.../projects/P/zones/Z/instanceGroups/N``) or ``zone/name``."""
    match = _MIG_URL.search(name)
    if match:
        return MigRef(match.group(1), match.group(2), match.group(3))
    match = _ZONE_NAME.match(name)
    if match:
        return MigRef(default_project, match.group(1), match.group(2))
    raise CloudConfigError(
        f"--nodes: {name!r} is not a MIG URL (https://www.googleapis.com/compute/v1/projects/P/zones/Z/"
        "instanceGroups/N) nor zone/name")


def parse_instance_url(url: str) -> tuple[str, str, str] | None:
    """(project, zone, name) of an instance URL, or None."""
    match = _INSTANCE_URL.search(url)
    return (match.group(1), match.group(2), match.group(3)) if match else None


def load_settings(cloud_config: str | None, env: Mapping[str, str]) -> GceSettings:
    """Settings from the file (if given) over the environment; ``CloudConfigError`` names the key."""
    values: dict[str, str] = {}
    if cloud_config is not None:
        parser = configparser.ConfigParser()
        try:
            with open(cloud_config, encoding="utf-8") as handle:
                parser.read_file(handle)
        except (OSError, configparser.Error) as exc:
            raise CloudConfigError(f"--cloud-config {cloud_config}: {exc}") from None
        if not parser.has_section("global"):
            raise CloudConfigError(f"--cloud-config {cloud_config}: no [global] section")
        values = dict(parser["global"])
    where = f"--cloud-config {cloud_config}" if cloud_config else "environment"
    project = values.get("project-id") or env.get("GCE_PROJECT", "")
    if not project:
        raise CloudConfigError(f"{where}: project-id (or GCE_PROJECT) is required for --cloud-provider=gce")
    zones_text = values.get("zones") or env.get("GCE_ZONES", "")
    zones = tuple(z.strip() for z in zones_text.split(",") if z.strip())
    endpoint = values.get("api-endpoint") or env.get("GCE_API_ENDPOINT") or None
    if endpoint is not None:
        scheme = urlsplit(endpoint).scheme
        if scheme not in ("http", "https") or (scheme == "http" and not is_loopback_http(endpoint)):
            raise CloudConfigError(f"{where}: api-endpoint {endpoint!r} must be https:// (http:// only on loopback)")
    timeout = 20.0
    if "operation-timeout" in values:
        try:
            timeout = parse_duration(values["operation-timeout"])
        except ValueError as exc:
            raise CloudConfigError(f"{where}: operation-timeout: {exc}") from None
    return GceSettings(project=project, zones=zones, endpoint=endpoint, operation_timeout_seconds=timeout)

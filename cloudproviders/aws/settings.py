"""What the AWS provider is told: the region and CA's ASG auto-discovery specs.

Region: ``region`` in ``--cloud-config``, else ``AWS_REGION``, else ``AWS_DEFAULT_REGION``,
else the boto3 profile's region. ``--cloud-config`` is a small file, INI or YAML
(by extension: ``.yaml``/``.yml``/``.json`` are YAML, anything else INI)::

    [Global]                 # or, in YAML:   region: eu-west-1
    region = eu-west-1

Auto-discovery follows CA's AWS syntax (``cloudprovider/aws/aws_manager.go``,
``parseASGAutoDiscoverySpecs``): ``asg:tag=<key>[=<value>][,<key>[=<value>]...]``; a group
must carry every key (with that value, when one is given; ``key=`` is a bare key, as in CA).
Several specs combine as CA combines them (``auto_scaling_groups.go``, ``buildAsgTags``):
their tags merge into one set, a later spec's value winning for a key given twice, and a
group must carry all of them, so a second spec narrows discovery, never widens it to
another cluster's groups.
"""

from __future__ import annotations

import configparser
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from cloudproviders.config import CloudConfigError

__all__ = ["AsgDiscovery", "CloudConfig", "combine_discovery", "parse_auto_discovery", "read_cloud_config",
           "resolve_region"]


@dataclass(frozen=True, slots=True)
class AsgDiscovery:
    """One ``asg:tag=...`` spec: tag keys that must exist and key/value pairs that must match."""

    #: (key, value or None) in the order given.
    tags: tuple[tuple[str, str | None], ...]

    def filters(self) -> list[dict[str, object]]:
        """DescribeAutoScalingGroups ``Filters`` (AWS ANDs them)."""
        out: list[dict[str, object]] = []
        for key, value in self.tags:
            if value is None:
                out.append({"Name": "tag-key", "Values": [key]})
            else:
                out.append({"Name": f"tag:{key}", "Values": [value]})
        return out


def parse_auto_discovery(spec: str) -> AsgDiscovery:
    """``asg:tag=k1,k2=v`` -> ``AsgDiscovery``; ``CloudConfigError`` naming the flag for anything else."""
    flag = "--node-group-auto-discovery"
    kind, sep, rest = spec.partition(":")
    if not sep or kind != "asg":
        raise CloudConfigError(f"{flag}: {spec!r}: the AWS provider takes asg:tag=<key>[=<value>],...")
    name, sep, body = rest.partition("=")
    if not sep or name != "tag":
        raise CloudConfigError(f"{flag}: {spec!r}: expected tag=<key>[=<value>],... after 'asg:'")
    tags: list[tuple[str, str | None]] = []
    for item in body.split(","):
        key, _, value = item.partition("=")
        key = key.strip()
        if not key:
            raise CloudConfigError(f"{flag}: {spec!r}: empty tag key")
        tags.append((key, value or None))
    return AsgDiscovery(tuple(tags))


def combine_discovery(specs: Sequence[AsgDiscovery]) -> AsgDiscovery | None:
    """All specs' tags as one filter set (see the module docstring); None without specs."""
    merged: dict[str, str | None] = {}
    for spec in specs:
        for key, value in spec.tags:
            merged.pop(key, None)  # a key given again moves to where it was given last
            merged[key] = value
    return AsgDiscovery(tuple(merged.items())) if merged else None


@dataclass(frozen=True, slots=True)
class CloudConfig:
    """The fields of ``--cloud-config`` the provider reads."""

    region: str | None = None


def read_cloud_config(path: str | None) -> CloudConfig:
    """Parse ``--cloud-config``; ``CloudConfigError`` naming the file and field when it is unreadable."""
    if path is None:
        return CloudConfig()
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise CloudConfigError(f"--cloud-config: cannot read {path}: {error.strerror}") from None
    if path.endswith((".yaml", ".yml", ".json")):
        try:
            loaded = yaml.safe_load(text)
        except yaml.YAMLError as error:
            raise CloudConfigError(f"--cloud-config: {path}: not YAML: {error}") from None
        values: Mapping[str, object] = loaded if isinstance(loaded, dict) else {}
        if loaded is not None and not isinstance(loaded, dict):
            raise CloudConfigError(f"--cloud-config: {path}: expected a mapping such as 'region: us-east-1'")
    else:
        parser = configparser.ConfigParser()
        try:
            parser.read_string(text, source=path)
        except configparser.Error as error:
            raise CloudConfigError(f"--cloud-config: {path}: not INI: {error.message}") from None
        section = next((s for s in parser.sections() if s.lower() == "global"), None)
        values = dict(parser[section]) if section is not None else {}
    region = values.get("region")
    if region is not None and (not isinstance(region, str) or not region.strip()):
        raise CloudConfigError(f"--cloud-config: {path}: region must be a non-empty string")
    return CloudConfig(region=region.strip() if isinstance(region, str) else None)


def resolve_region(config: CloudConfig, profile_region: str | None, env: Mapping[str, str] | None = None) -> str:
    """The region to use (see the module docstring for the order); ``CloudConfigError`` if none."""
    environ = os.environ if env is None else env
    for candidate in (config.region, environ.get("AWS_REGION"), environ.get("AWS_DEFAULT_REGION"), profile_region):
        if candidate:
            return candidate
    raise CloudConfigError("--cloud-provider=aws: no region: set region in --cloud-config, or AWS_REGION")

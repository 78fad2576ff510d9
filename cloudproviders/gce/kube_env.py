"""The ``kube-env`` metadata of an instance template, read field by field as upstream CA reads it.

Upstream: ``cluster-autoscaler/cloudprovider/gce/kube_env.go`` (the YAML map) and the
``extract*FromKubeEnv`` functions of ``templates.go``. Most fields live in
``AUTOSCALER_ENV_VARS: name=value;name=value``; older templates use ``NODE_LABELS``,
``NODE_TAINTS`` and ``KUBELET_TEST_ARGS``. How bad input degrades is upstream's, field by
field: a malformed ``AUTOSCALER_ENV_VARS`` entry makes the lookups that reach it fail
(each caller then falls back, as upstream's does), a bad extended resource or
kube-reserved quantity drops that entry, and only a bad label or taint list, or an
unknown ``os``, costs the template (``template.py`` decides).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass

import yaml
from google.cloud import compute_v1

from cloudproviders.gce.reserved import Arch, Distribution
from cloudproviders.interface import CloudError
from kube.model import Taint
from kube.quantity import QuantityError, parse_cpu_millis, parse_quantity

__all__ = [
    "KubeEnv",
    "arch",
    "autoscaler_var",
    "autoscaling_options",
    "boot_disk_ephemeral_blocked",
    "distribution",
    "ephemeral_local_ssd_count",
    "eviction_hard",
    "extended_resources",
    "key_values",
    "kube_env_of",
    "kube_reserved",
    "labels",
    "operating_system",
    "parse_kube_env",
    "taints",
]

_log = logging.getLogger(__name__)
_KUBE_RESERVED_ARG = re.compile(r"--kube-reserved=([^ ]+)")
_EXTENDED_LABEL_PREFIX = "clusterautoscaler-nodetemplate-resources."
_DISTRIBUTIONS = {"cos": Distribution.COS, "cos_containerd": Distribution.COS, "ubuntu": Distribution.UBUNTU,
                  "ubuntu_containerd": Distribution.UBUNTU, "windows_ltsc": Distribution.WINDOWS_LTSC,
                  "windows_sac": Distribution.WINDOWS_SAC}


@dataclass(frozen=True, slots=True)
class KubeEnv:
    """``env`` is None when the template has no ``kube-env`` item (not the same as an empty one)."""

    template: str
    env: Mapping[str, str] | None

    def var(self, name: str) -> str | None:
        return self.env.get(name) if self.env is not None else None


def parse_kube_env(template: str, text: str) -> KubeEnv:
    """A YAML map of strings, as ``sigs.k8s.io/yaml`` into ``map[string]string`` accepts it."""
    try:
        loaded = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise CloudError(f"instance template {template}: metadata kube-env is not YAML: {exc}") from None
    if loaded is None:
        return KubeEnv(template, {})
    if not isinstance(loaded, dict):
        raise CloudError(f"instance template {template}: metadata kube-env is not a NAME: value map")
    env: dict[str, str] = {}
    for key, value in loaded.items():
        if value is not None and not isinstance(value, str):
            raise CloudError(f"instance template {template}: metadata kube-env {key}: {value!r} is not a string "
                             "(quote it)")
        env[str(key)] = value or ""
    return KubeEnv(template, env)


def kube_env_of(template: compute_v1.InstanceTemplate) -> KubeEnv:
    """Upstream ``ExtractKubeEnv``: no metadata is an error, no ``kube-env`` item is no env."""
    if "properties" not in template or "metadata" not in template.properties:
        raise CloudError(f"instance template {template.name}: no metadata")
    for item in template.properties.metadata.items:
        if item.key == "kube-env":
            if "value" not in item:
                raise CloudError(f"instance template {template.name}: metadata kube-env has no value")
            return parse_kube_env(template.name, item.value)
    return KubeEnv(template.name, None)


def autoscaler_var(env: KubeEnv, name: str) -> str | None:
    """``name`` from ``AUTOSCALER_ENV_VARS``, quotes trimmed; None when absent.

    Entries are scanned in order, as upstream's ``extractAutoscalerVarFromKubeEnv``: one
    without ``=`` met before ``name`` raises ``CloudError``.
    """
    text = env.var("AUTOSCALER_ENV_VARS")
    if text is None or not text.strip(" "):
        return None
    for entry in text.split(";"):
        entry = entry.strip(" ")
        key, sep, value = entry.partition("=")
        if not sep:
            raise CloudError(f"instance template {env.template}: kube-env AUTOSCALER_ENV_VARS: malformed entry "
                             f"{entry!r} (not name=value)")
        if key.strip(" ") == name:
            return value.strip(" \"'")
    return None


def _var_or_none(env: KubeEnv, name: str) -> str | None:
    """``autoscaler_var`` for the fields that fall back when the lookup fails (logged)."""
    try:
        return autoscaler_var(env, name)
    except CloudError as exc:
        _log.warning("kube-env field unreadable, using its fallback", extra={"field": name, "error": str(exc)})
        return None


def key_values(text: str, where: str) -> dict[str, str]:
    """``k=v,k=v`` (upstream ``parseKeyValueListToMap``): any item without ``=`` fails the list."""
    result: dict[str, str] = {}
    if not text:
        return result
    for item in text.split(","):
        key, sep, value = item.partition("=")
        if not sep:
            raise CloudError(f"{where}: {item!r} is not key=value")
        result[key] = value
    return result


def labels(env: KubeEnv) -> dict[str, str]:
    """``node_labels``, else ``NODE_LABELS``; a malformed list raises ``CloudError``."""
    text = _var_or_none(env, "node_labels")
    if text is None:
        text = env.var("NODE_LABELS") or ""
    return key_values(text, f"instance template {env.template}: kube-env node labels")


def taints(env: KubeEnv) -> tuple[Taint, ...]:
    """``node_taints``, else ``NODE_TAINTS`` (``key=value:Effect``, any effect, as upstream)."""
    text = _var_or_none(env, "node_taints")
    if text is None:
        text = env.var("NODE_TAINTS") or ""
    where = f"instance template {env.template}: kube-env node taints"
    result = []
    for key, rest in key_values(text, where).items():
        value, sep, effect = rest.partition(":")
        if not sep:
            raise CloudError(f"{where}: {key}={rest!r} is not key=value:Effect")
        result.append(Taint(key, value, effect))
    return tuple(result)


def kube_reserved(env: KubeEnv) -> tuple[int, int, int] | None:
    """(cpu millicores, memory, ephemeral-storage) kept for the kubelet; None when not stated.

    ``kube_reserved``, else ``--kube-reserved=`` in ``KUBELET_TEST_ARGS``. Unknown names,
    bad or negative quantities are dropped one by one; a malformed list is None
    (upstream then makes allocatable equal to capacity).
    """
    text = _var_or_none(env, "kube_reserved")
    if text is None:
        match = _KUBE_RESERVED_ARG.search(env.var("KUBELET_TEST_ARGS") or "")
        if match is None:
            return None
        text = match.group(1)
    try:
        pairs = key_values(text, f"instance template {env.template}: kube-reserved")
    except CloudError as exc:
        _log.warning("kube-reserved unreadable, allocatable = capacity", extra={"error": str(exc)})
        return None
    amounts = {"cpu": 0, "memory": 0, "ephemeral-storage": 0}
    for name, quantity in pairs.items():
        if name not in amounts:
            continue
        try:
            amounts[name] = parse_cpu_millis(quantity) if name == "cpu" else parse_quantity(quantity)
        except QuantityError:
            continue
    return amounts["cpu"], amounts["memory"], amounts["ephemeral-storage"]


def extended_resources(env: KubeEnv) -> dict[str, int]:
    """``extended_resources`` plus ``node_labels`` keys prefixed ``clusterautoscaler-nodetemplate-resources.``.

    A bad quantity drops that resource; an unreadable list drops them all (logged; the
    template stays, as upstream's).
    """
    where = f"instance template {env.template}: kube-env extended_resources"
    try:
        declared = key_values(autoscaler_var(env, "extended_resources") or "", where)
        for key, value in key_values(autoscaler_var(env, "node_labels") or "", where).items():
            if key.startswith(_EXTENDED_LABEL_PREFIX):
                declared[key.removeprefix(_EXTENDED_LABEL_PREFIX)] = value
    except CloudError as exc:
        _log.warning("extended resources unreadable, none declared", extra={"error": str(exc)})
        return {}
    result: dict[str, int] = {}
    for name, quantity in declared.items():
        try:
            result[name] = parse_quantity(quantity)
        except QuantityError:
            _log.warning("extended resource dropped", extra={"resource": name, "value": quantity})
    return result


def operating_system(env: KubeEnv) -> str | None:
    """``os``: "linux" (also when absent) or "windows"; None (no template) for anything else."""
    try:
        value = autoscaler_var(env, "os")
    except CloudError:
        return None
    if value is None:
        return "linux"
    return value if value in ("linux", "windows") else None


def distribution(env: KubeEnv) -> Distribution:
    """``os_distribution``; absent, empty or unknown is COS (upstream's default)."""
    return _DISTRIBUTIONS.get(_var_or_none(env, "os_distribution") or "", Distribution.COS)


def arch(env: KubeEnv) -> Arch:
    """``arch``; absent or unknown is amd64 (upstream's ``DefaultArch``, whatever the machine type)."""
    value = _var_or_none(env, "arch")
    return Arch.ARM64 if value == "arm64" else Arch.AMD64


def boot_disk_ephemeral_blocked(env: KubeEnv) -> bool:
    """``BLOCK_EPH_STORAGE_BOOT_DISK=true``: the boot disk does not back ephemeral storage."""
    return _var_or_none(env, "BLOCK_EPH_STORAGE_BOOT_DISK") == "true"


def ephemeral_local_ssd_count(env: KubeEnv) -> int:
    """``ephemeral_storage_local_ssd_count``: local SSDs that back ephemeral storage (0 if unreadable)."""
    value = _var_or_none(env, "ephemeral_storage_local_ssd_count")
    return int(value) if value is not None and re.fullmatch(r"[+-]?\d+", value) else 0


def eviction_hard(env: KubeEnv) -> dict[str, str] | None:
    """``evictionHard`` (``memory.available=...,nodefs.available=...``); None: upstream's defaults."""
    try:
        return key_values(autoscaler_var(env, "evictionHard") or "", "kube-env evictionHard")
    except CloudError:
        return None


def autoscaling_options(env: KubeEnv) -> dict[str, str] | None:
    """``autoscaling_options``; None when unreadable (the group keeps the defaults)."""
    try:
        return key_values(autoscaler_var(env, "autoscaling_options") or "", "kube-env autoscaling_options")
    except CloudError as exc:
        _log.warning("autoscaling options unreadable, defaults kept", extra={"error": str(exc)})
        return None

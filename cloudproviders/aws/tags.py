"""What an ASG's tags say about its nodes: labels, taints, resources and autoscaling options.

Each reader is one of CA's (``cloudprovider/aws/aws_manager.go``) and reads the tags as it
does, oddities included, so a group tagged for CA templates here as it does there:

* labels: ``k8s.io/cluster-autoscaler/node-template/label/<key>`` and, for EKS, every
  ``eks:<key>`` tag (``eks:nodegroup-name`` becomes the label ``nodegroup-name``);
* taints: a value matching ``<value>:<Effect>`` (``extractTaintsFromAsg``: the value is
  what precedes the first colon, the effect the rest);
* resources: ``.../resources/<name>`` = a quantity; one that does not parse is skipped;
* options: ``.../autoscaling-options/<option>`` for the five options CA's AWS provider reads
  (``GetAsgOptions``); a bad value is logged and the flag applies.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from typing import Any

from cloudproviders.interface import GroupOptions
from kube.duration import parse_duration
from kube.model import Taint
from kube.quantity import QuantityError, parse_cpu_millis, parse_quantity

__all__ = ["TEMPLATE_TAG_PREFIX", "TagResources", "group_options", "labels_from_tags", "resources_from_tags",
           "taints_from_tags"]

log = logging.getLogger(__name__)

TEMPLATE_TAG_PREFIX = "k8s.io/cluster-autoscaler/node-template/"
_LABEL = TEMPLATE_TAG_PREFIX + "label/"
_TAINT = TEMPLATE_TAG_PREFIX + "taint/"
_RESOURCE = TEMPLATE_TAG_PREFIX + "resources/"
_OPTION = TEMPLATE_TAG_PREFIX + "autoscaling-options/"
_EKS = "eks:"
#: ``extractTaintsFromAsg``: the value must contain ``<anything>:<Effect>`` (unanchored).
_TAINT_VALUE = re.compile(r"(.*):(?:NoSchedule|NoExecute|PreferNoSchedule)")

#: Resource name -> quantity as parsed (cpu in millicores, everything else in units).
TagResources = dict[str, int]


def _after(key: str, marker: str) -> str | None:
    """Go's ``strings.Split(key, marker)[1]`` when the marker occurs, as CA reads tag keys."""
    parts = key.split(marker)
    return parts[1] if len(parts) > 1 else None


def labels_from_tags(tags: Mapping[str, str]) -> dict[str, str]:
    """Node labels from ``.../label/<key>`` and ``eks:<key>`` tags (``extractLabelsFromAsg``)."""
    labels: dict[str, str] = {}
    for key, value in tags.items():
        label = _after(key, _LABEL)
        if label is None:
            label = _after(key, _EKS)
        if label:
            labels[label] = value
    return labels


def taints_from_tags(tags: Mapping[str, str]) -> list[Taint]:
    """Taints from ``.../taint/<key>`` tags whose value holds ``<value>:<Effect>``."""
    taints: list[Taint] = []
    for key, value in tags.items():
        if not _TAINT_VALUE.search(value):
            continue
        taint_key = _after(key, _TAINT)
        if taint_key is None:
            continue
        taint_value, _, effect = value.partition(":")
        taints.append(Taint(taint_key, taint_value, effect))
    return taints


def resources_from_tags(tags: Mapping[str, str], group: str) -> TagResources:
    """``.../resources/<name>`` tags that parse as quantities (others are logged and skipped)."""
    resources: TagResources = {}
    for key, value in tags.items():
        name = _after(key, _RESOURCE)
        if not name:
            continue
        try:
            resources[name] = parse_cpu_millis(value) if name == "cpu" else parse_quantity(value)
        except (QuantityError, ValueError):
            log.warning("ignoring a resource template tag that is not a quantity",
                        extra={"node_group": group, "tag": key, "value": value})
    return resources


def _go_float(text: str) -> float:
    """``strconv.ParseFloat``'s decimal forms (Python's ``float`` also takes ``1_0``, Go does not)."""
    if "_" in text or text != text.strip():
        raise ValueError(text)
    return float(text)


def _go_bool(text: str) -> bool:
    """``strconv.ParseBool``."""
    if text in ("1", "t", "T", "TRUE", "true", "True"):
        return True
    if text in ("0", "f", "F", "FALSE", "false", "False"):
        return False
    raise ValueError(text)


#: The options CA's AWS provider reads from tags (``GetAsgOptions``; keys from ``config/const.go``,
#: matched as written) -> (``GroupOptions`` field, parser).
_OPTIONS: dict[str, tuple[str, Callable[[str], Any]]] = {
    "scaledownutilizationthreshold": ("scale_down_utilization_threshold", _go_float),
    "scaledowngpuutilizationthreshold": ("scale_down_gpu_utilization_threshold", _go_float),
    "scaledownunneededtime": ("scale_down_unneeded_seconds", lambda t: parse_duration(t, signed=True)),
    "scaledownunreadytime": ("scale_down_unready_seconds", lambda t: parse_duration(t, signed=True)),
    "ignoredaemonsetsutilization": ("ignore_daemonsets_utilization", _go_bool),
}


def group_options(group: str, tags: Mapping[str, str]) -> GroupOptions:
    """Per-group overrides from ``.../autoscaling-options/<option>`` tags; others and bad values are ignored."""
    values: dict[str, Any] = {}
    for key, value in tags.items():
        option = _after(key, _OPTION) if key.startswith(_OPTION) else None
        if not option:
            continue
        known = _OPTIONS.get(option)
        if known is None:
            log.info("ignoring an autoscaling-options tag CA's AWS provider does not read",
                     extra={"node_group": group, "tag": key})
            continue
        field_name, parse = known
        try:
            values[field_name] = parse(value)
        except ValueError:
            log.warning("ignoring a bad autoscaling-options tag", extra={"node_group": group, "tag": key,
                                                                          "value": value})
    return GroupOptions(**values)

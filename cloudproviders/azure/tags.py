"""CA's node-template tags on a scale set, read as upstream reads them: one bad tag drops that tag only.

Tag names (upstream ``cloudprovider/azure/azure_util.go``, read in ``azure_template.go``
and ``azure_manager.go``):

* ``k8s.io_cluster-autoscaler_node-template_label_<key>`` = value,
* ``k8s.io_cluster-autoscaler_node-template_taint_<key>`` = ``value:Effect``,
* ``k8s.io_cluster-autoscaler_node-template_resources_<resource>`` = quantity,
* ``k8s.io_cluster-autoscaler_node-template_autoscaling-options_<option>`` = value,

where ``<key>`` spells ``/`` as ``_`` and ``_`` as ``~2`` (tag names cannot hold ``/``);
in a resource name upstream turns ``~2`` into ``/`` as well, and so do we. As upstream,
the label, taint and resource prefixes are found anywhere in the tag name (the text
after the first one is the key), the option prefix only at its start; option values
are lower-cased and an option name is matched exactly (lower case).

Each reader returns what it kept and one message per tag it left out, for the caller
to log: a template with one typo in a taint still scales its group from zero.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from cloudproviders.interface import GroupOptions
from cloudproviders.options import OPTION_FIELDS, TAINT_EFFECTS
from kube.autoscaling_options import parse_option_value
from kube.model import Taint
from kube.quantity import QuantityError, parse_cpu_millis, parse_quantity

__all__ = ["LABEL_TAG", "OPTIONS_TAG", "RESOURCES_TAG", "TAINT_TAG", "FromTags", "decode_tag_key", "labels_from_tags",
           "options_from_tags", "resources_from_tags", "taints_from_tags"]

LABEL_TAG = "k8s.io_cluster-autoscaler_node-template_label_"
TAINT_TAG = "k8s.io_cluster-autoscaler_node-template_taint_"
RESOURCES_TAG = "k8s.io_cluster-autoscaler_node-template_resources_"
OPTIONS_TAG = "k8s.io_cluster-autoscaler_node-template_autoscaling-options_"
#: Upstream's test of a taint tag's value (``extractTaintsFromTags``): unanchored.
_TAINT_VALUE = re.compile(r"(.*):(?:NoSchedule|NoExecute|PreferNoSchedule)")
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class FromTags(Generic[T]):
    value: T
    #: One message per tag left out, naming the tag.
    dropped: tuple[str, ...] = ()


def decode_tag_key(key: str) -> str:
    """``rok.arrikto.com_max-instance-capacity`` -> ``rok.arrikto.com/max-instance-capacity`` (``~2`` is ``_``)."""
    return key.replace("_", "/").replace("~2", "_")


def _after(tag: str, prefix: str) -> str | None:
    """Upstream's ``strings.Split(tag, prefix)[1]``: the text after the first ``prefix``, up to a second one."""
    parts = tag.split(prefix)
    return parts[1] if len(parts) > 1 else None


def labels_from_tags(tags: Mapping[str, str]) -> dict[str, str]:
    """Labels from ``..._label_<key>`` tags (upstream ``extractLabelsFromTags``); an empty key is skipped."""
    labels = {}
    for tag, value in tags.items():
        rest = _after(tag, LABEL_TAG)
        if rest:
            labels[decode_tag_key(rest)] = value
    return labels


def taints_from_tags(tags: Mapping[str, str]) -> FromTags[tuple[Taint, ...]]:
    """Taints from ``..._taint_<key>`` = ``value:Effect`` tags, sorted by key.

    Upstream keeps a tag whose value matches ``(.*):(NoSchedule|NoExecute|PreferNoSchedule)``
    and splits it at the first ``:``; a value such as ``a:b:NoSchedule`` would give the
    effect ``b:NoSchedule``, which no scheduler filter acts on, so it is dropped here.
    """
    taints, dropped = [], []
    for tag, text in sorted(tags.items()):
        rest = _after(tag, TAINT_TAG)
        if rest is None:
            continue
        value, _, effect = text.partition(":")
        if not rest or not _TAINT_VALUE.search(text) or effect not in TAINT_EFFECTS:
            dropped.append(f"tag {tag}={text!r}: expected value:Effect, Effect one of {', '.join(TAINT_EFFECTS)}")
            continue
        taints.append(Taint(decode_tag_key(rest), value, effect))
    return FromTags(tuple(taints), tuple(dropped))


def _resource_name(rest: str) -> str:
    # Upstream (extractAllocatableResourcesFromScaleSet) maps both "_" and "~2" to "/".
    return rest.replace("_", "/").replace("~2", "/")


def resources_from_tags(tags: Mapping[str, str]) -> FromTags[dict[str, int]]:
    """Resource name -> amount (cpu in millicores, the rest in units) from ``..._resources_<name>`` tags."""
    amounts: dict[str, int] = {}
    dropped = []
    for tag, text in sorted(tags.items()):
        rest = _after(tag, RESOURCES_TAG)
        if not rest:
            continue
        name = _resource_name(rest)
        try:
            amounts[name] = parse_cpu_millis(text) if name == "cpu" else parse_quantity(text)
        except QuantityError as exc:
            dropped.append(f"tag {tag}={text!r}: {exc}")
    return FromTags(amounts, tuple(dropped))


def options_from_tags(tags: Mapping[str, str]) -> FromTags[GroupOptions]:
    """Per-group options from ``..._autoscaling-options_<option>`` tags (upstream ``GetScaleSetOptions``)."""
    values: dict[str, Any] = {}
    dropped = []
    for tag, raw in sorted(tags.items()):
        if not tag.startswith(OPTIONS_TAG) or tag == OPTIONS_TAG:
            continue
        name, text = tag[len(OPTIONS_TAG):], raw.lower()
        field = OPTION_FIELDS.get(name)
        if field is None:
            dropped.append(f"tag {tag}: unknown autoscaling option (one of {', '.join(OPTION_FIELDS)})")
            continue
        try:
            values[field] = parse_option_value(field, text)
        except ValueError as exc:
            dropped.append(f"tag {tag}={raw!r}: {exc}")
    return FromTags(GroupOptions.of(values), tuple(dropped))

"""CA's per-group autoscaling options, as clouds carry them in tags or metadata.

Upstream's ``NodeGroupAutoscalingOptions`` names (``scaledownutilizationthreshold``,
``scaledownunneededtime``, ...) read case-insensitively into ``GroupOptions``;
thresholds are numbers, times are Go durations, ``ignoredaemonsetsutilization``
a boolean (``kube.autoscaling_options``). Shared by the providers that take
them from tags (GCE metadata, Azure tags), so the words and the errors are the same; AWS
reads the five options CA's AWS provider reads with its own log-and-ignore reader (``aws/tags.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cloudproviders.interface import CloudError, GroupOptions
from kube.autoscaling_options import OPTION_FIELDS, parse_option_value

__all__ = ["OPTION_FIELDS", "TAINT_EFFECTS", "parse_group_options"]

#: ``core/v1`` taint effects, for taints given in tags.
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def parse_group_options(options: Mapping[str, str], where: str) -> GroupOptions:
    """CA's autoscaling-option names (any case) -> ``GroupOptions``; ``CloudError`` names the bad one."""
    values: dict[str, Any] = {}
    for key, text in options.items():
        field = OPTION_FIELDS.get(key.lower())
        if field is None:
            raise CloudError(f"{where}: unknown autoscaling option {key!r} (one of {', '.join(OPTION_FIELDS)})")
        try:
            values[field] = parse_option_value(field, text.strip())
        except ValueError as exc:
            raise CloudError(f"{where}: autoscaling option {key}={text!r}: {exc}") from None
    return GroupOptions.of(values)

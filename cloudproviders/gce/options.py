"""Per-group autoscaling options from kube-env's ``autoscaling_options``, read as upstream CA reads them.

Upstream: ``gce_manager.go`` ``GetMigOptions``: the names of ``NodeGroupAutoscalingOptions``
in lower case (``scaledownutilizationthreshold=0.6,scaledownunneededtime=5m``); a name it
does not know is ignored, and a value that does not parse keeps the flag's default
(logged), never costs the group its template.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from cloudproviders.interface import GroupOptions
from cloudproviders.options import OPTION_FIELDS
from kube.autoscaling_options import parse_option_value

__all__ = ["group_options"]

_log = logging.getLogger(__name__)


def group_options(options: Mapping[str, str] | None, group: str) -> GroupOptions:
    values: dict[str, Any] = {}
    for key, field in OPTION_FIELDS.items():
        text = (options or {}).get(key)
        if text is None:
            continue
        try:
            values[field] = parse_option_value(field, text)
        except ValueError:
            _log.warning("autoscaling option ignored", extra={"node_group": group, "option": key, "value": text})
    return GroupOptions.of(values)

"""CA's per-group autoscaling option names and how their values are read.

Upstream's ``NodeGroupAutoscalingOptions`` keys (``config/const.go``:
``scaledownutilizationthreshold``, ...) as clouds carry them in tags and as ``plan``'s
``NodeGroup`` objects carry them in ``spec.autoscalingOptions``. Thresholds are numbers
(Go ``strconv.ParseFloat``), times Go durations, ``ignoredaemonsetsutilization`` a Go
``strconv.ParseBool``. It lives in the bottom layer so the snapshot converter and the
cloud providers read the same words the same way.
"""

from __future__ import annotations

import math

from kube.duration import parse_duration

__all__ = ["OPTION_FIELDS", "parse_option_value"]

#: CA's option name (lower case) -> ``GroupOptions`` field (``cloudproviders.interface``).
OPTION_FIELDS = {
    "scaledownutilizationthreshold": "scale_down_utilization_threshold",
    "scaledowngpuutilizationthreshold": "scale_down_gpu_utilization_threshold",
    "scaledownunneededtime": "scale_down_unneeded_seconds",
    "scaledownunreadytime": "scale_down_unready_seconds",
    "ignoredaemonsetsutilization": "ignore_daemonsets_utilization",
    "maxnodeprovisiontime": "max_node_provision_seconds",
}

#: Go ``strconv.ParseBool``'s words.
_TRUE = ("1", "t", "T", "TRUE", "true", "True")
_FALSE = ("0", "f", "F", "FALSE", "false", "False")


def parse_option_value(field: str, text: str) -> float | bool:
    """One option's value for its ``GroupOptions`` field; ``ValueError`` says what was expected."""
    if field == "ignore_daemonsets_utilization":
        if text in _TRUE or text in _FALSE:
            return text in _TRUE
        raise ValueError(f"{text!r} is not a boolean (true or false)")
    if field.endswith("threshold"):
        try:
            value = float(text)
        except ValueError:
            raise ValueError(f"{text!r} is not a number") from None
        if not math.isfinite(value):
            raise ValueError(f"{text!r} is not a finite number")
        return value
    # CA's scale-down-unready-time may be negative (the flag's meaning: never remove).
    return parse_duration(text, signed=True)

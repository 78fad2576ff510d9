"""Go ``time.ParseDuration`` strings in seconds, shared by flags and scenario files.

It lives in the bottom layer so the autoscaler's flags and the simulated world's
scenarios (which may not import each other) read durations the same way.
"""

from __future__ import annotations

import math
import re

__all__ = ["parse_duration"]

_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h)")
_BARE = re.compile(r"[0-9]+(?:\.[0-9]+)?")
#: Go durations are int64 nanoseconds: about 292 years.
_MAX_SECONDS = (2**63 - 1) / 1e9
_MAX_LENGTH = 64
_EXAMPLES = "expected e.g. 90s, 15m, 2h, 1h30m"


def parse_duration(text: str, *, signed: bool = False, bare_seconds: bool = False) -> float:
    """``90s``, ``15m``, ``1h30m``, ``1.5h`` -> seconds; ``"0"`` is zero, as in Go.

    ``signed``: a leading ``-``/``+`` is allowed (``--scale-down-unready-time=-1s``).
    ``bare_seconds``: a number without a unit is seconds (Go refuses it; flags accept it
    because the storage documentation writes ``-1``). Raises ``ValueError``.
    """
    if len(text) > _MAX_LENGTH:
        raise ValueError(f"{text[:20]!r}... is not a duration (longer than {_MAX_LENGTH} characters)")
    value = text.strip()
    sign = 1.0
    if signed and value[:1] in ("-", "+"):
        sign = -1.0 if value[0] == "-" else 1.0
        value = value[1:]
    if not value:
        raise ValueError(f"empty duration ({_EXAMPLES})")
    if value == "0":
        return 0.0
    if bare_seconds and _BARE.fullmatch(value):
        return _bounded(text, sign * float(value))
    pos = 0
    total = 0.0
    while pos < len(value):
        match = _PART.match(value, pos)
        if match is None:
            raise ValueError(f"{text!r} is not a duration ({_EXAMPLES})")
        total += float(match.group(1)) * _UNITS[match.group(2)]
        pos = match.end()
    return _bounded(text, sign * total)


def _bounded(text: str, seconds: float) -> float:
    if not math.isfinite(seconds) or abs(seconds) > _MAX_SECONDS:
        raise ValueError(f"{text!r} is out of range (more than {_MAX_SECONDS:.0f}s)")
    return seconds

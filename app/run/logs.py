"""Logging of a live run: one line per record on stderr, text (klog-like) or JSON.

A record may carry structured fields (``extra={"fields": {...}}``); the loop's one line
per iteration does (phases' timings, decision summary). Text renders them as
``key=value`` after the message, JSON as keys of the object, so a log pipeline can
index them. ``--v`` maps klog verbosity onto levels: 4 and above is DEBUG.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any

__all__ = ["JSONFormatter", "TextFormatter", "configure_logging", "remove_logging"]

_LEVEL_LETTER = {"DEBUG": "I", "INFO": "I", "WARNING": "W", "ERROR": "E", "CRITICAL": "F"}


def _fields(record: logging.LogRecord) -> dict[str, Any]:
    """A record's structured fields: ``extra={"fields": ...}`` (ours) or ``{"autoscaler": ...}`` (the library's)."""
    out: dict[str, Any] = {}
    for attr in ("autoscaler", "fields"):
        value = getattr(record, attr, None)
        if isinstance(value, dict):
            out.update(value)
    return out


class TextFormatter(logging.Formatter):
    """``I1123 12:00:00.123456 autoscaler.run] message key=value ...`` (klog's header)."""

    def format(self, record: logging.LogRecord) -> str:
        stamp = time.strftime("%m%d %H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs * 1000):06d}"
        parts = [f"{_LEVEL_LETTER.get(record.levelname, 'I')}{stamp} {record.name}] {record.getMessage()}"]
        parts.extend(f"{k}={json.dumps(v, separators=(',', ':'))}" for k, v in _fields(record).items())
        line = " ".join(parts)
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


class JSONFormatter(logging.Formatter):
    """One JSON object per line: ``ts`` (seconds), ``level``, ``logger``, ``msg`` and the fields."""

    def format(self, record: logging.LogRecord) -> str:
        payload: dict[str, Any] = {"ts": round(record.created, 6), "level": record.levelname.lower(),
                                   "logger": record.name, "msg": record.getMessage()}
        payload.update(_fields(record))
        if record.exc_info:
            payload["error"] = self.formatException(record.exc_info)
        return json.dumps(payload, separators=(",", ":"), default=str)


def configure_logging(verbosity: int, fmt: str) -> logging.Handler:
    """Send the project's loggers to stderr in ``fmt``; returns the handler (to remove it at exit)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JSONFormatter() if fmt == "json" else TextFormatter())
    level = logging.DEBUG if verbosity >= 4 else logging.INFO
    for name in ("autoscaler", "app", "kubeapi", "cloudproviders"):
        logger = logging.getLogger(name)
        logger.addHandler(handler)
        logger.setLevel(level)
        logger.propagate = False
    # ``run`` logs one line per loop (``autoscaler.run``: the decision, the phases' timings and
    # the reporting); the library loop's own line says less, so it shows only at --v=4.
    logging.getLogger("autoscaler.loop").setLevel(level if verbosity >= 4 else logging.WARNING)
    return handler


def remove_logging(handler: logging.Handler) -> None:
    logging.getLogger("autoscaler.loop").setLevel(logging.NOTSET)
    for name in ("autoscaler", "app", "kubeapi", "cloudproviders"):
        logger = logging.getLogger(name)
        logger.removeHandler(handler)
        logger.propagate = True
        logger.setLevel(logging.NOTSET)

"""Logging of a live run: one line per record on stderr, text (klog-like) or JSON.

A record may carry structured fields (``extra={"fields": {...}}``); the loop's one line
per iteration does (phases' timings, decision summary). Text renders them as
``key=value`` after the message, JSON as keys of the object, so a log pipeline can
index them. klog's flags map onto logging: ``--v`` 4 and above is DEBUG, ``--vmodule``
sets it per logger, ``--logtostderr=false`` with ``--log-file``/``--log-dir`` writes a file
and sends stderr what reaches ``--stderrthreshold`` (everything with ``--alsologtostderr``),
``--skip-headers`` drops the header.
"""

from __future__ import annotations

import fnmatch
import json
import logging
import os
import sys
import time
from typing import Any

from app.run.flags import LogSettings

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


_LOGGERS = ("autoscaler", "app", "kubeapi", "cloudproviders")


class _HeaderlessFormatter(TextFormatter):
    """``--skip-headers``: the message and its fields, no klog header."""

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        return line.split("] ", 1)[1] if "] " in line else line


def _formatter(settings: LogSettings) -> logging.Formatter:
    if settings.format == "json":
        return JSONFormatter()
    return _HeaderlessFormatter() if settings.skip_headers else TextFormatter()


def _handlers(settings: LogSettings) -> list[logging.Handler]:
    """klog's routing: stderr only (``--logtostderr``), else the file plus stderr above the threshold."""
    stderr = logging.StreamHandler(sys.stderr)
    path = settings.file or (os.path.join(settings.dir, "storage-autoscaler.log") if settings.dir else "")
    if settings.to_stderr or not path:
        return [stderr]
    if not settings.also_to_stderr:
        stderr.setLevel(settings.stderr_threshold)
    return [logging.FileHandler(path, encoding="utf-8"), stderr]


def configure_logging(settings: LogSettings) -> list[logging.Handler]:
    """Send the project's loggers where klog's flags say; returns the handlers (to remove them at exit)."""
    handlers = _handlers(settings)
    for handler in handlers:
        handler.setFormatter(_formatter(settings))
    level = logging.DEBUG if settings.verbosity >= 4 else logging.INFO
    for name in _LOGGERS:
        logger = logging.getLogger(name)
        for handler in handlers:
            logger.addHandler(handler)
        logger.setLevel(level)
        logger.propagate = False
    # ``run`` logs one line per loop (``autoscaler.run``: the decision, the phases' timings and
    # the reporting); the library loop's own line says less, so it shows only at --v=4.
    logging.getLogger("autoscaler.loop").setLevel(level if settings.verbosity >= 4 else logging.WARNING)
    for pattern, verbosity in settings.vmodule:
        for name in _matching(pattern):
            logging.getLogger(name).setLevel(logging.DEBUG if verbosity >= 4 else logging.INFO)
    return handlers


def _matching(pattern: str) -> list[str]:
    """Logger names (or their last part, as klog matches file names) the ``--vmodule`` glob matches."""
    known = [n for n in logging.root.manager.loggerDict if n.split(".")[0] in _LOGGERS]
    names = [n for n in known if fnmatch.fnmatchcase(n, pattern) or fnmatch.fnmatchcase(n.rsplit(".", 1)[-1], pattern)]
    return names or ([pattern] if not any(c in pattern for c in "*?[") else [])


def remove_logging(handlers: list[logging.Handler]) -> None:
    logging.getLogger("autoscaler.loop").setLevel(logging.NOTSET)
    for name in _LOGGERS:
        logger = logging.getLogger(name)
        for handler in handlers:
            logger.removeHandler(handler)
        logger.propagate = True
        logger.setLevel(logging.NOTSET)
    for handler in handlers:
        if isinstance(handler, logging.FileHandler):
            handler.close()

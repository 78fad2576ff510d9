"""Connecting ``run`` to the live Kubernetes adapter (``kubeapi``): the one place that knows its API."""

from __future__ import annotations

import threading

from app.run.command import Live, StartupError
from app.run.flags import RunSettings

__all__ = ["connect"]


def connect(settings: RunSettings, stop: threading.Event) -> Live:
    raise StartupError("the live Kubernetes adapter is not available in this build")

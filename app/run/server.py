"""The HTTP endpoints of a live run on ``--address``: ``/metrics`` and ``/health-check``.

``/health-check`` answers 200 while a loop started within ``--max-inactivity`` and one
succeeded within ``--max-failing-time``, and 500 after that, as CA's ``metrics.HealthCheck`` does, so a liveness probe
restarts a replica whose loop is stuck or keeps failing. Monitoring starts when the
replica becomes the leader (a standby never runs the loop and stays healthy); the
start counts as the first success, so a new leader has the whole window to sync.
The server runs on its own event loop in a daemon thread and never touches the loop's
state except through ``Health`` (a lock-guarded timestamp) and the metrics registry.
Unknown paths get aiohttp's 404.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from prometheus_client import CONTENT_TYPE_LATEST

from app.run.metrics import Metrics
from scheduling.server import HttpServer, Limits, Reply

__all__ = ["Endpoints", "Health"]

_TEXT = "text/plain; charset=utf-8"


@dataclass(slots=True)
class Health:
    max_failing_seconds: float
    clock: Callable[[], float] = time.monotonic
    #: ``--max-inactivity``: unhealthy once no loop even started for this long.
    max_inactivity_seconds: float = math.inf
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _monitoring: bool = False
    _last_success: float = 0.0
    _last_activity: float = 0.0

    def start_monitoring(self) -> None:
        with self._lock:
            if not self._monitoring:
                self._monitoring = True
                self._last_success = self._last_activity = self.clock()

    def active(self) -> None:
        """A loop starts (CA's ``UpdateLastActivity``)."""
        with self._lock:
            self._last_activity = self.clock()

    def stop_monitoring(self) -> None:
        with self._lock:
            self._monitoring = False

    def succeeded(self) -> None:
        with self._lock:
            self._last_success = self.clock()

    def check(self) -> tuple[bool, str]:
        """(healthy, a one-line reason) for ``/health-check``."""
        with self._lock:
            if not self._monitoring:
                return True, "OK: not monitoring (not the leader yet)"
            now = self.clock()
            since, idle = now - self._last_success, now - self._last_activity
        if idle > self.max_inactivity_seconds:
            return False, (f"Error: no loop ran for {idle:.0f}s "
                           f"(--max-inactivity={self.max_inactivity_seconds:g}s)")
        if since > self.max_failing_seconds:
            return False, (f"Error: no successful loop for {since:.0f}s "
                           f"(--max-failing-time={self.max_failing_seconds:g}s)")
        return True, f"OK: last successful loop {since:.0f}s ago"


class Endpoints:
    """``/metrics`` and ``/health-check`` on the scheduling side's HTTP server (aiohttp, in a
    daemon thread, with its limits and timeouts: ``scheduling.server``); ``close()`` stops it."""

    def __init__(self, host: str, port: int, metrics: Metrics, health: Health) -> None:
        def health_check() -> Reply:
            ok, text = health.check()
            return Reply(200 if ok else 500, (text + "\n").encode(), _TEXT)

        # GET pages only: any request body is refused (a probe sends none).
        self._server = HttpServer(host, port, pages={
            "/metrics": lambda: Reply(200, metrics.render(), CONTENT_TYPE_LATEST),
            "/health-check": health_check,
        }, limits=Limits(max_request_bytes=64 << 10), name="http-endpoints")

    @property
    def port(self) -> int:
        return self._server.port

    def start(self) -> None:
        self._server.start()

    def close(self) -> None:
        self._server.close()

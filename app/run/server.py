"""The HTTP endpoints of a live run on ``--address``: ``/metrics`` and ``/health-check``.

``/health-check`` answers 200 while a loop started within ``--max-inactivity`` and one
succeeded within ``--max-failing-time``, and 500 after that, as CA's ``metrics.HealthCheck`` does, so a liveness probe
restarts a replica whose loop is stuck or keeps failing. Monitoring starts when the
replica becomes the leader (a standby never runs the loop and stays healthy); the
start counts as the first success, so a new leader has the whole window to sync.
The server runs in a daemon thread and never touches the loop's state except
through ``Health`` (a lock-guarded timestamp) and the metrics registry.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import CONTENT_TYPE_LATEST

from app.run.metrics import Metrics

__all__ = ["Endpoints", "Health"]


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


def _handler(metrics: Metrics, health: Health) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path == "/metrics":
                self._reply(200, metrics.render(), CONTENT_TYPE_LATEST)
            elif path == "/health-check":
                ok, text = health.check()
                self._reply(200 if ok else 500, (text + "\n").encode(), "text/plain; charset=utf-8")
            else:
                self._reply(404, b"not found: try /metrics or /health-check\n", "text/plain; charset=utf-8")

        def _reply(self, status: int, body: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            """Probes every few seconds would flood the log; requests are not logged."""

    return Handler


class Endpoints:
    """``ThreadingHTTPServer`` serving both paths from a daemon thread; ``close()`` stops it."""

    def __init__(self, host: str, port: int, metrics: Metrics, health: Health) -> None:
        self._server = ThreadingHTTPServer((host, port), _handler(metrics, health))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.2},
                                        name="http-endpoints", daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

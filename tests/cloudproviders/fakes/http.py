"""A tiny routed JSON HTTP server on 127.0.0.1 (port 0), run in a thread, for the cloud fakes.

Every response closes its connection, so the SDKs' pooled sockets are closed when the
server stops and no ResourceWarning reaches pytest (warnings are errors there).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self
from urllib.parse import parse_qs, urlsplit

__all__ = ["FakeServer", "Request", "Response"]


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    query: Mapping[str, str]
    body: Any
    match: re.Match[str]
    headers: Mapping[str, str]


@dataclass(frozen=True)
class Response:
    status: int
    body: Any = None
    headers: Mapping[str, str] = field(default_factory=dict)


Handler = Callable[[Request], Response]


class FakeServer:
    """Routes ``(method, path regex)`` to handlers; records every call as ``"METHOD path"``."""

    def __init__(self) -> None:
        self._routes: list[tuple[str, re.Pattern[str], Handler]] = []
        self.calls: list[str] = []
        self.lock = threading.RLock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def route(self, method: str, pattern: str, handler: Handler) -> None:
        self._routes.append((method, re.compile(pattern + r"$"), handler))

    @property
    def url(self) -> str:
        assert self._server is not None, "server not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def dispatch(self, method: str, raw_path: str, body: bytes, headers: Mapping[str, str]) -> Response:
        parts = urlsplit(raw_path)
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        with self.lock:
            self.calls.append(f"{method} {parts.path}")
            for route_method, pattern, handler in self._routes:
                match = pattern.match(parts.path)
                if route_method == method and match:
                    payload = json.loads(body) if body else None
                    return handler(Request(method, parts.path, query, payload, match, headers))
        return Response(404, {"error": {"code": 404, "message": f"no fake route for {method} {parts.path}"}})

    def start(self) -> None:
        fake = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                response = fake.dispatch(self.command, self.path, body, dict(self.headers))
                data = b"" if response.body is None else json.dumps(response.body).encode()
                self.send_response(response.status)
                for key, value in response.headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(data)
                self.close_connection = True

            def do_GET(self) -> None:
                self._serve()

            def do_POST(self) -> None:
                self._serve()

            def do_PUT(self) -> None:
                self._serve()

            def do_PATCH(self) -> None:
                self._serve()

            def do_DELETE(self) -> None:
                self._serve()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            assert self._thread is not None
            self._thread.join(timeout=5)
            self._server = None

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

"""Per-connection policy under aiohttp: the count of open connections, the TLS handshake,
and one log line per bad client. Used by ``scheduling.server`` only.

``Gate`` is the protocol asyncio accepts each connection with. It counts the connection
(closing the oldest idle one when the server is full), does the TLS handshake itself with
``loop.start_tls`` (a timeout, and one log line when it fails, which asyncio's own
server-side TLS would drop silently or with a traceback), then hands the connection to
aiohttp's request handler and forwards its events. ``Connections`` knows, per connection,
whether a request is in flight: aiohttp tells it through ``request_started`` /
``request_finished`` (called from the server's route wrapper).
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from dataclasses import dataclass, field
from typing import Any

from scheduling.tls import ReloadingContext

__all__ = ["Connections", "Gate", "OneLineLogger"]

log = logging.getLogger("scheduling.server")


class OneLineLogger(logging.LoggerAdapter):  # type: ignore[type-arg]
    """aiohttp's server logger: a malformed request (bad Content-Length, smuggling attempts,
    garbage) is one warning naming the error, never a traceback."""

    def exception(self, msg: object, *args: object, exc_info: Any = True, **kwargs: Any) -> None:
        reason = exc_info if isinstance(exc_info, BaseException) else None
        text = str(msg) % args if args else str(msg)
        self.logger.warning("%s: %s", text, _one_line(reason) if reason is not None else "error")

    def error(self, msg: object, *args: object, exc_info: Any = None, **kwargs: Any) -> None:
        reason = exc_info if isinstance(exc_info, BaseException) else None
        text = str(msg) % args if args else str(msg)
        self.logger.warning("%s%s", text, f": {_one_line(reason)}" if reason is not None else "")


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return f"{type(exc).__name__}: {text[:300]}"


@dataclass(eq=False, slots=True)
class _Conn:
    raw: asyncio.Transport
    in_flight: int = 0
    evicted: bool = False


@dataclass(slots=True)
class Connections:
    """Open connections in the order they came, each with its requests in flight."""

    cap: int
    _open: dict[asyncio.Transport, _Conn] = field(default_factory=dict)
    #: The transport aiohttp sees (the TLS one, once wrapped) -> the connection.
    _by_app: dict[object, _Conn] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self._open)

    def opened(self, raw: asyncio.Transport) -> _Conn | None:
        """Count a new connection; None when the server is full of busy ones (refuse it)."""
        if len(self._open) >= self.cap and not self._evict_one():
            return None
        conn = _Conn(raw)
        self._open[raw] = conn
        return conn

    def _evict_one(self) -> bool:
        for conn in self._open.values():
            if conn.in_flight == 0 and not conn.evicted:
                conn.evicted = True
                conn.raw.abort()
                log.info("closing an idle connection: %d open, the limit is %d", len(self._open), self.cap)
                return True
        return False

    def attached(self, conn: _Conn, app_transport: object) -> None:
        self._by_app[app_transport] = conn

    def closed(self, conn: _Conn, app_transport: object | None) -> None:
        self._open.pop(conn.raw, None)
        if app_transport is not None:
            self._by_app.pop(app_transport, None)

    def request_started(self, app_transport: object) -> None:
        conn = self._by_app.get(app_transport)
        if conn is not None:
            conn.in_flight += 1

    def request_finished(self, app_transport: object) -> None:
        conn = self._by_app.get(app_transport)
        if conn is not None:
            conn.in_flight -= 1

    def close_all(self) -> None:
        for conn in list(self._open.values()):
            conn.raw.abort()


class Gate(asyncio.Protocol):
    """One accepted connection: counted, TLS-wrapped when the server has TLS, then served by
    ``inner`` (aiohttp's request handler), whose events it forwards."""

    def __init__(self, inner: asyncio.Protocol, connections: Connections, tls: ReloadingContext | None,
                 handshake_timeout: float) -> None:
        self._inner = inner
        self._connections = connections
        self._tls = tls
        self._handshake_timeout = handshake_timeout
        self._conn: _Conn | None = None
        self._app: asyncio.BaseTransport | None = None
        self._pending: list[bytes] = []
        self._lost = False
        self._task: asyncio.Task[None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._conn = self._connections.opened(transport)
        if self._conn is None:
            log.warning("refusing a connection from %s: %d connections, all busy",
                        transport.get_extra_info("peername"), self._connections.cap)
            transport.abort()
            return
        if self._tls is None:
            self._attach(transport)
            return
        transport.pause_reading()  # not a byte read until start_tls owns the socket
        self._task = asyncio.get_running_loop().create_task(self._handshake(transport, self._tls.current()))

    async def _handshake(self, raw: asyncio.Transport, context: ssl.SSLContext) -> None:
        loop = asyncio.get_running_loop()
        peer = raw.get_extra_info("peername")
        try:
            wrapped = await loop.start_tls(raw, self, context, server_side=True,
                                           ssl_handshake_timeout=self._handshake_timeout)
        except (OSError, ssl.SSLError, TimeoutError, ConnectionError, RuntimeError) as exc:
            log.warning("TLS handshake with %s failed: %s", _peer(peer), _one_line(exc))
            raw.abort()
            self._forget()
            return
        if wrapped is None or self._lost:
            self._forget()
            return
        self._attach(wrapped)

    def _attach(self, transport: asyncio.BaseTransport) -> None:
        assert self._conn is not None
        self._app = transport
        self._connections.attached(self._conn, transport)
        self._inner.connection_made(transport)
        pending, self._pending = self._pending, []
        for data in pending:
            self._inner.data_received(data)

    def _forget(self) -> None:
        if self._conn is not None:
            self._connections.closed(self._conn, self._app)

    # --- forwarded ------------------------------------------------------------------------
    def data_received(self, data: bytes) -> None:
        if self._app is None:
            self._pending.append(data)  # the handshake finished before _handshake resumed
        else:
            self._inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self._inner.eof_received() if self._app is not None else None

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost = True
        self._forget()
        if self._app is not None:
            self._app = None
            self._inner.connection_lost(exc)

    def pause_writing(self) -> None:
        if self._app is not None:
            self._inner.pause_writing()

    def resume_writing(self) -> None:
        if self._app is not None:
            self._inner.resume_writing()


def _peer(peer: object) -> str:
    if isinstance(peer, tuple) and len(peer) >= 2:
        return f"{peer[0]}:{peer[1]}"
    return str(peer)

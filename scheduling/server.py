"""HTTP(S) hosting for the extender, the webhook and ``run``'s endpoints, on aiohttp.

These servers sit in the scheduling path of every storage pod, so the transport is a
production one (aiohttp: its own C HTTP parser with header limits, chunked bodies and
keep-alive done right; see the README for the choice) run on an event loop in one
thread beside the caller's synchronous code. What this module adds is policy:

* a listen backlog of ``Limits.backlog`` (a burst of pod creations must not be dropped);
* a body limit per server, refused with 413 from ``Content-Length`` before a byte of the
  body is read, or as soon as a chunked body passes it (the rest is discarded for a
  moment, then the connection closed); a body must arrive within ``body_timeout`` (408);
  compressed bodies are not inflated;
* idle and half-sent requests are closed after ``idle_timeout`` (aiohttp's keep-alive
  timer, which also runs before the first request), a TLS handshake must finish within
  ``handshake_timeout``, and past ``max_connections`` (or near the process's descriptor
  limit) the oldest connection without a request in flight is closed for a new one, so
  idle sockets cannot keep a real request out;
* JSON nested too deep, or denser in objects than ``_MAX_CONTAINER_DENSITY`` allows, is a
  400 before routes see it; every refused client costs one log line, never a traceback;
* TLS through ``scheduling.tls`` (a certificate and key reloaded as a pair, optional
  client-certificate verification: with a client CA, POST routes answer 403 to a client
  without a certificate), the handshake done here so a failed one is logged as one line
  naming the peer.

Routes stay what they were: POST routes take the decoded JSON body (or ``Undecodable``)
and return a JSON-serializable answer, raising ``BadRequest`` for a 400; GET pages take
nothing and return a ``Reply``. Every request is answered on the loop thread, one at a
time: the extender serializes its filters anyway, and a thread hop per call would cost
more than it saves.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import resource
import socket
import ssl
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import msgspec
from aiohttp import HttpVersion11, StreamReader, web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from scheduling.server_conn import Connections, Gate, OneLineLogger
from scheduling.tls import ReloadingContext, TLSFiles

__all__ = ["BadRequest", "HttpServer", "Limits", "Page", "Reply", "Route", "TLSFiles", "Undecodable", "health_pages"]

log = logging.getLogger(__name__)

#: A POST route: decoded JSON body -> JSON-serializable answer. Raise ``BadRequest`` for a 400.
Route = Callable[[object], Any]

# msgspec: a 5,000-node answer encodes in a fifth of json's time, which matters at a 10 ms budget.
_ENCODER = msgspec.json.Encoder()
_DECODER = msgspec.json.Decoder()

#: At most one JSON object or array per this many body bytes (plus a small allowance).
#: Each costs a Python object of 56-250 bytes once decoded: ``[{},{},...]`` would turn
#: 60 MB into 1.5 GB. A NodeList of full nodes averages one per ~40 bytes, a pod ~1 per 30.
_MAX_CONTAINER_DENSITY = 12
_CONTAINER_ALLOWANCE = 4096

#: After refusing a body, read and discard what the client still sends for this long before
#: closing (a lingering close, as nginx does): a client that writes its whole body before
#: reading then sees the 413 instead of a connection reset. Nothing read is kept.
_LINGER_SECONDS = 2.0


class BadRequest(Exception):
    """The request cannot be answered; the message goes back with status 400."""


@dataclass(frozen=True, slots=True)
class Reply:
    status: int
    body: bytes
    content_type: str = "application/json"


#: A GET page: nothing in, the whole answer out.
Page = Callable[[], Reply]


@dataclass(frozen=True, slots=True)
class Limits:
    """What one client may cost the server. Defaults suit the webhook and the metrics server;
    the extender's body limit is its own flag (``--max-request-bytes``)."""

    #: Largest request body in bytes (413 above it).
    max_request_bytes: int = 4 << 20
    #: Seconds a connection may sit without a complete request (idle keep-alive, slow headers).
    idle_timeout: float = 15.0
    #: Seconds a body may take to arrive once its headers have.
    body_timeout: float = 10.0
    #: Seconds a TLS handshake may take.
    handshake_timeout: float = 5.0
    #: Pending connections the kernel queues before ``accept`` (capped by net.core.somaxconn).
    backlog: int = 1024
    #: Open connections; past it the oldest one without a request in flight is closed.
    max_connections: int = 1024
    #: Longest request line or header field.
    max_header_bytes: int = 8190


@dataclass(frozen=True, slots=True)
class Undecodable:
    """A body that is not JSON; routes decide whether that is an error or an answer."""

    message: str

    def __repr__(self) -> str:
        return f"not JSON: {self.message}"


class _Refused(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def decode_json(raw: bytes) -> object:
    """The body as JSON (``Undecodable`` when it is not), or ``_Refused`` (400) when decoding it
    would cost far more memory than its size, or recurse too deep."""
    if not raw:
        return None
    containers = raw.count(b"{") + raw.count(b"[")
    if containers > len(raw) // _MAX_CONTAINER_DENSITY + _CONTAINER_ALLOWANCE:
        raise _Refused(400, f"body of {len(raw)} bytes holds {containers} JSON objects or arrays, "
                            f"more than one per {_MAX_CONTAINER_DENSITY} bytes")
    try:
        return _DECODER.decode(raw)
    except RecursionError:
        raise _Refused(400, "JSON nested too deep") from None
    except msgspec.DecodeError as exc:
        return Undecodable(str(exc))


def _descriptor_budget() -> int:
    """Connections this process can hold open beside its files, watches and logs."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return max(16, soft - 64) if soft != resource.RLIM_INFINITY else 1 << 20


class HttpServer:
    """``pages`` (GET) and ``routes`` (POST, JSON) on ``host:port`` (port 0: any free port).

    The socket is bound here, so a port in use or bad TLS files fail the caller at once
    (``OSError``, ``ssl.SSLError``); ``start()`` serves from a daemon thread, ``close()``
    stops accepting, lets requests in flight finish, and joins it.
    """

    def __init__(self, host: str, port: int, *, pages: Mapping[str, Page] | None = None,
                 routes: Mapping[str, Route] | None = None, tls: TLSFiles | None = None,
                 limits: Limits | None = None, name: str = "http") -> None:
        self.limits = limits or Limits()
        self._pages = dict(pages or {})
        self._routes = dict(routes or {})
        self._tls = ReloadingContext(tls) if tls is not None else None
        self._name = name
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._sock = socket.create_server((host, port), family=family, backlog=self.limits.backlog)
        self._connections = Connections(min(self.limits.max_connections, _descriptor_budget()))
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._sock.getsockname()[1])

    @property
    def scheme(self) -> str:
        return "https" if self._tls is not None else "http"

    def start(self) -> None:
        started = threading.Event()
        failure: list[BaseException] = []
        self._thread = threading.Thread(target=self._run, args=(started, failure), name=f"{self._name}-{self.port}",
                                        daemon=True)
        self._thread.start()
        started.wait()
        if failure:
            raise failure[0]

    def close(self, timeout: float = 5.0) -> None:
        loop, stop = self._loop, self._stop
        if loop is not None and stop is not None:
            with contextlib.suppress(RuntimeError):  # the loop already ended
                loop.call_soon_threadsafe(stop.set)
        if self._thread is not None:
            self._thread.join(timeout)
        self._sock.close()

    # --- the loop thread ------------------------------------------------------------------
    def _run(self, started: threading.Event, failure: list[BaseException]) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._serve(started))
        except BaseException as exc:
            if started.is_set():  # serving had begun: nobody waits on start() any more
                log.error("%s server on port %d stopped: %s: %s", self._name, self.port, type(exc).__name__, exc)
            failure.append(exc)
            started.set()
        finally:
            loop.run_until_complete(_cancel_the_rest())
            loop.close()

    async def _serve(self, started: threading.Event) -> None:
        self._stop = asyncio.Event()
        # aiohttp's low-level server with our dispatch below: an Application and its router
        # cost ~7 % of a small call to look a path up among four.
        handler = web.Server(
            self._dispatch, access_log=None, logger=OneLineLogger(log),
            keepalive_timeout=self.limits.idle_timeout, lingering_time=_LINGER_SECONDS, auto_decompress=False,
            max_line_size=self.limits.max_header_bytes, max_field_size=self.limits.max_header_bytes)
        runner = web.ServerRunner(handler, handle_signals=False)
        await runner.setup()
        loop = asyncio.get_running_loop()

        def gate() -> Gate:
            return Gate(handler(), self._connections, self._tls, self.limits.handshake_timeout)

        server = await loop.create_server(gate, sock=self._sock, backlog=self.limits.backlog)
        started.set()
        try:
            await self._stop.wait()
        finally:
            server.close()
            await runner.shutdown()
            self._connections.close_all()
            await runner.cleanup()

    async def _dispatch(self, request: web.BaseRequest) -> web.StreamResponse:
        """The page or route for ``request`` (404 and 405 as aiohttp's router answers them), its
        connection marked busy meanwhile (busy ones are never evicted)."""
        method, path = request.method, request.path
        if method == "POST" and path in self._routes:
            handler = self._post
        elif method in ("GET", "HEAD") and path in self._pages:
            handler = self._page
        elif path in self._routes:
            raise web.HTTPMethodNotAllowed(method, ["POST"])
        elif path in self._pages:
            raise web.HTTPMethodNotAllowed(method, ["GET", "HEAD"])
        else:
            raise web.HTTPNotFound()
        transport = request.transport
        self._connections.request_started(transport)
        try:
            return await handler(request)
        finally:
            self._connections.request_finished(transport)

    async def _page(self, request: web.BaseRequest) -> web.StreamResponse:
        reply = self._pages[request.path]()
        return web.Response(status=reply.status, body=reply.body, headers={"Content-Type": reply.content_type})

    async def _post(self, request: web.BaseRequest) -> web.StreamResponse:
        route = self._routes[request.path]
        if self._tls is not None and self._tls.files.client_ca_file and not _has_client_certificate(request):
            return _refuse(request, 403, "a client certificate signed by --client-ca-file is required")
        try:
            body = decode_json(await self._body(request))
            answer = route(body)
        except _Refused as exc:
            return _refuse(request, exc.status, str(exc))
        except BadRequest as exc:
            return _json(400, {"error": str(exc)})
        except RecursionError:
            return _refuse(request, 400, "JSON nested too deep")
        return web.Response(body=_ENCODER.encode(answer), content_type="application/json")

    async def _body(self, request: web.BaseRequest) -> bytes:
        limit = self.limits.max_request_bytes
        length = request.content_length
        if length is None and "Transfer-Encoding" not in request.headers:
            # HTTP/1.1 says such a request has no body, so whatever follows is the next request:
            # a proxy in front may disagree (smuggling). Refuse, and close the connection.
            raise _Refused(411, "a POST needs Content-Length or Transfer-Encoding: chunked")
        if length is not None and length > limit:
            raise _Refused(413, f"body of {length} bytes is over the limit of {limit} bytes")
        content = request.content
        if content.is_eof():
            # The whole body came in with the headers (every call of a few kB): no timer to arm.
            body = content.read_nowait()
        else:
            await _continue(request)
            try:
                async with asyncio.timeout(self.limits.body_timeout):
                    body = await _read_up_to(content, limit)
            except TimeoutError:
                raise _Refused(408, f"body not received within {self.limits.body_timeout:g}s") from None
        if len(body) > limit:
            raise _Refused(413, f"chunked body over the limit of {limit} bytes")
        return body


async def _read_up_to(content: StreamReader, limit: int) -> bytes:
    """The rest of the body, or ``_Refused`` (413) as soon as it passes ``limit`` bytes."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in content.iter_any():
        size += len(chunk)
        if size > limit:
            raise _Refused(413, f"chunked body over the limit of {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


async def _continue(request: web.BaseRequest) -> None:
    """``Expect: 100-continue`` answered as aiohttp's router answers it, once the length is known
    to be within the limit: a client that waits for it sends its body only then."""
    expect = request.headers.get("Expect", "")
    if not expect or request.version != HttpVersion11:
        return
    if expect.lower() != "100-continue":
        raise _Refused(417, f"unknown Expect: {expect}")
    await request.writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
    request.writer.output_size = 0  # the interim answer is not part of the answer's size


async def _cancel_the_rest() -> None:
    """Handlers still lingering on a closed connection end here, not as "destroyed" tasks."""
    pending = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
    for task in pending:
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)


def _has_client_certificate(request: web.BaseRequest) -> bool:
    """The client presented a certificate (the handshake has verified it against the CA)."""
    transport = request.transport
    ssl_object = transport.get_extra_info("ssl_object") if transport is not None else None
    return isinstance(ssl_object, ssl.SSLObject) and bool(ssl_object.getpeercert())


def _json(status: int, payload: object) -> web.Response:
    return web.Response(status=status, body=_ENCODER.encode(payload), content_type="application/json")


def _refuse(request: web.BaseRequest, status: int, message: str) -> web.Response:
    """One log line, a JSON error, and the connection closed once the client stops sending (at
    most ``_LINGER_SECONDS``; an unread body is discarded, never buffered)."""
    log.warning("%s %s from %s refused (%d): %s", request.method, request.path, request.remote, status, message)
    response = _json(status, {"error": message})
    response.force_close()
    return response


def health_pages(ready: Callable[[], str | None], metrics: CollectorRegistry | None = None) -> dict[str, Page]:
    """``/healthz`` (liveness: always 200), ``/readyz`` (200, or 503 with ``ready()``'s reason:
    the view is incomplete or stale) and, with a registry, ``/metrics``."""
    def healthz() -> Reply:
        return Reply(200, _ENCODER.encode({"status": "ok"}))

    def readyz() -> Reply:
        reason = ready()
        return Reply(200 if reason is None else 503, _ENCODER.encode({"status": reason or "ok"}))

    pages = {"/healthz": healthz, "/readyz": readyz}
    if metrics is not None:
        registry = metrics
        pages["/metrics"] = lambda: Reply(200, generate_latest(registry), CONTENT_TYPE_LATEST)
    return pages

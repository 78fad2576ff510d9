"""A small fake Kubernetes API server on loopback, shared by every test that talks HTTP.

What it serves (enough for the live adapter, faithful where the adapter depends on it):

* LIST with ``metadata.resourceVersion`` (items without kind, like the real server),
  ``fieldSelector`` on plain fields (``metadata.name=x``, ``spec.nodeName=y``);
* WATCH (``?watch=1&resourceVersion=N&allowWatchBookmarks=true&timeoutSeconds=T``):
  newline-delimited JSON events in a chunked response, BOOKMARK events every
  ``bookmark_seconds``, an ERROR event with a 410 ``Expired`` Status when N is older
  than the history (``state.compact()`` also ends open watches that way);
* GET, POST (create), PUT (409 on a stale resourceVersion), PATCH (merge, strategic
  merge, JSON patch; a resourceVersion in a merge patch is a precondition), DELETE;
* ``pods/{name}/eviction``: 201, 429 when a PDB allows no disruption, 404 when gone
  (``state.graceful_deletion``: the pod stays terminating until the test removes it);
* fault injection (``fail``): the next N requests matching a path answer a status,
  hang past the client's timeout, or (watches) stream a 410;
* a request log and ``read_only``: every mutating call is recorded, and refused
  with 403 when read-only, so a test can prove ``--dry-run`` made none.

Every watch ends when the server stops, so tests never hang on a stream.
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.fakeapi.patching import PatchError, apply_json_patch, apply_merge_patch
from tests.fakeapi.resources import BY_PATH, Resource
from tests.fakeapi.state import ApiError, FakeState, fields_match

__all__ = ["FakeAPIServer", "Fault", "Request"]

Json = dict[str, Any]
MUTATING = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_PATH = re.compile(r"^(/api/v1|/apis/[^/]+/[^/]+)(?:/namespaces/([^/]+))?/([^/]+)(?:/([^/]+))?(?:/([^/]+))?$")


@dataclass(frozen=True, slots=True)
class Request:
    method: str
    path: str
    query: dict[str, str]
    content_type: str
    body: Any
    authorization: str

    @property
    def watch(self) -> bool:
        return _truthy(self.query.get("watch"))

    @property
    def mutating(self) -> bool:
        return self.method in MUTATING


@dataclass(slots=True)
class Fault:
    """The next ``times`` requests whose path matches ``pattern`` (and ``method``) fail."""

    pattern: str
    #: An HTTP status to answer, or ``"timeout"``: hold the request ``delay`` seconds, then drop it.
    outcome: int | str
    times: int = 1
    method: str | None = None
    delay: float = 10.0
    watch: bool | None = None

    def matches(self, method: str, path: str, watch: bool) -> bool:
        return (self.times > 0 and re.search(self.pattern, path) is not None
                and (self.method is None or self.method == method)
                and (self.watch is None or self.watch == watch))


@dataclass(slots=True)
class _Route:
    resource: Resource
    namespace: str | None
    name: str | None
    subresource: str | None


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    # Every informer connects at once; socketserver's default backlog of 5 would make
    # the rest wait for a SYN retransmit (1 s).
    request_queue_size = 256

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that drops its connection (a closed watch, a timeout) is normal here."""


class FakeAPIServer:
    """``with FakeAPIServer() as api:`` serves on ``api.url`` until the block ends."""

    def __init__(self, state: FakeState | None = None, *, bookmark_seconds: float = 1.0,
                 max_watch_seconds: float = 60.0) -> None:
        self.state = state or FakeState()
        self.bookmark_seconds = bookmark_seconds
        self.max_watch_seconds = max_watch_seconds
        self.read_only = False
        self.faults: list[Fault] = []
        self.log: list[Request] = []
        self._lock = threading.Lock()
        handler = type("Handler", (_Handler,), {"api": self})
        self._httpd = _Server(("127.0.0.1", 0), handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="fakeapi", daemon=True)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> FakeAPIServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.state.close()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> FakeAPIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- test controls --------------------------------------------------
    def fail(self, pattern: str, outcome: int | str, times: int = 1, *, method: str | None = None,
             delay: float = 10.0, watch: bool | None = None) -> Fault:
        fault = Fault(pattern, outcome, times, method, delay, watch)
        with self._lock:
            self.faults.append(fault)
        return fault

    def requests(self, method: str | None = None, pattern: str = "", *, watch: bool | None = None) -> list[Request]:
        with self._lock:
            return [r for r in self.log if (method is None or r.method == method)
                    and re.search(pattern, r.path) is not None and (watch is None or r.watch == watch)]

    @property
    def mutations(self) -> list[Request]:
        with self._lock:
            return [r for r in self.log if r.mutating]

    def write_kubeconfig(self, path: Path, token: str = "fake-token", namespace: str = "kube-system") -> Path:
        """A kubeconfig pointing at this server over plain HTTP with a bearer token."""
        config = {
            "apiVersion": "v1", "kind": "Config", "current-context": "fake",
            "clusters": [{"name": "fake", "cluster": {"server": self.url}}],
            "users": [{"name": "fake", "user": {"token": token}}],
            "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "fake", "namespace": namespace}}],
        }
        path.write_text(json.dumps(config), encoding="utf-8")
        return path

    def _take_fault(self, method: str, path: str, watch: bool) -> Fault | None:
        with self._lock:
            for fault in self.faults:
                if fault.matches(method, path, watch):
                    fault.times -= 1
                    return fault
        return None

    def _record(self, request: Request) -> None:
        with self._lock:
            self.log.append(request)


class _Handler(BaseHTTPRequestHandler):
    api: FakeAPIServer
    protocol_version = "HTTP/1.1"
    #: Headers and body go out in separate writes: without TCP_NODELAY the body waits for the
    #: client's delayed ACK (about 40 ms a request on Linux).
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: tests read ``FakeAPIServer.log`` instead."""

    # --- plumbing -------------------------------------------------------
    def _send(self, code: int, body: bytes | Json) -> None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _error(self, err: ApiError) -> None:
        self._send(err.code, err.status())

    def _body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        return json.loads(raw) if raw else None

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_PUT(self) -> None:
        self._handle("PUT")

    def do_PATCH(self) -> None:
        self._handle("PATCH")

    def do_DELETE(self) -> None:
        self._handle("DELETE")

    def _handle(self, method: str) -> None:
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        try:
            body = self._body() if method in MUTATING else None
        except ValueError as exc:
            self._error(ApiError(400, "BadRequest", f"the body is not JSON: {exc}"))
            return
        request = Request(method, url.path, query, self.headers.get("Content-Type") or "", body,
                          self.headers.get("Authorization") or "")
        self.api._record(request)
        fault = self.api._take_fault(method, url.path, request.watch)
        try:
            if fault is not None and not (request.watch and fault.outcome == 410):
                self._inject(fault)
                return
            if method in MUTATING and self.api.read_only:
                raise ApiError(403, "Forbidden", f"the fake API server is read-only: {method} {url.path}")
            route = self._route(url.path)
            if request.watch:
                self._watch(route, query, expired=fault is not None)
            else:
                self._dispatch(method, route, query, request)
        except ApiError as err:
            self._error(err)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception as exc:  # a gap in the fake: answer, never hang the client
            if request.watch:  # headers are out: end the stream instead
                self.close_connection = True
                return
            self._error(ApiError(500, "InternalError", f"fake API server: {type(exc).__name__}: {exc}"))

    def _inject(self, fault: Fault) -> None:
        if fault.outcome == "timeout":
            deadline = time.monotonic() + fault.delay
            with self.api.state.cond:
                while not self.api.state.closed and time.monotonic() < deadline:
                    self.api.state.cond.wait(deadline - time.monotonic())
            self.close_connection = True
            return
        code = int(fault.outcome)
        self._error(ApiError(code, "InternalError" if code >= 500 else "Injected", f"injected fault {code}"))

    @staticmethod
    def _route(path: str) -> _Route:
        match = _PATH.match(path)
        if match is None:
            raise ApiError(404, "NotFound", f"the server could not find the requested resource ({path})")
        prefix, namespace, plural, name, sub = match.groups()
        resource = BY_PATH.get((prefix, plural))
        if resource is None:
            raise ApiError(404, "NotFound", f"the server could not find the requested resource ({path})")
        return _Route(resource, namespace, name, sub)

    # --- verbs ----------------------------------------------------------
    def _dispatch(self, method: str, route: _Route, query: dict[str, str], request: Request) -> None:
        state, res = self.api.state, route.resource
        ns = route.namespace or ("default" if res.namespaced and route.name else "")
        if route.name is None:
            if method == "GET":
                self._list(route, query)
            elif method == "POST":
                self._send(201, state.create(res, self._with_namespace(request.body, route)))
            else:
                raise ApiError(405, "MethodNotAllowed", f"{method} on a collection")
            return
        if route.subresource == "eviction" and res.kind == "Pod" and method == "POST":
            options = (request.body or {}).get("deleteOptions") or {}
            grace = options.get("gracePeriodSeconds")
            state.evict(ns, route.name, int(grace) if grace is not None else None)
            self._send(201, {"kind": "Status", "apiVersion": "v1", "status": "Success", "code": 201})
        elif route.subresource is not None:
            raise ApiError(404, "NotFound", f"no subresource {route.subresource} here")
        elif method == "GET":
            self._send(200, state.read(res, ns, route.name))
        elif method == "PUT":
            body = self._with_namespace(request.body, route)
            if (body.get("metadata") or {}).get("name") != route.name:
                raise ApiError(400, "BadRequest", "the name of the object does not match the URL")
            self._send(200, state.update(res, body))
        elif method == "PATCH":
            self._send(200, self._patch(route, ns, request))
        elif method == "DELETE":
            self._send(200, state.delete(res, ns, route.name))

    @staticmethod
    def _with_namespace(body: Any, route: _Route) -> Json:
        if not isinstance(body, dict):
            raise ApiError(400, "BadRequest", "the body must be a JSON object")
        if route.namespace:
            body.setdefault("metadata", {})["namespace"] = route.namespace
        return body

    def _patch(self, route: _Route, ns: str, request: Request) -> Json:
        assert route.name is not None
        state = self.api.state
        with state.cond:
            current = state.read(route.resource, ns, route.name)
            precondition = None
            try:
                if request.content_type.startswith("application/json-patch+json"):
                    patched = apply_json_patch(current, request.body)
                elif request.content_type.startswith(("application/merge-patch+json",
                                                      "application/strategic-merge-patch+json")):
                    precondition = ((request.body or {}).get("metadata") or {}).get("resourceVersion")
                    patched = apply_merge_patch(current, request.body)
                else:
                    raise ApiError(415, "UnsupportedMediaType", f"unsupported patch type {request.content_type!r}")
            except PatchError as exc:
                raise ApiError(409 if exc.conflict else 422, "Conflict" if exc.conflict else "Invalid",
                               str(exc)) from None
            return state.replace_with(route.resource, ns, route.name, patched, precondition)

    def _list(self, route: _Route, query: dict[str, str]) -> None:
        rv, items = self.api.state.list_json(route.resource, route.namespace, _field_selector(query))
        kind = f"{route.resource.kind}List"
        head = (f'{{"kind":"{kind}","apiVersion":"{route.resource.api_version}",'
                f'"metadata":{{"resourceVersion":"{rv}"}},"items":[').encode()
        self._send(200, head + b",".join(items) + b"]}")

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _watch(self, route: _Route, query: dict[str, str], expired: bool) -> None:
        state, res = self.api.state, route.resource
        rv = int(query.get("resourceVersion") or 0)
        bookmarks = _truthy(query.get("allowWatchBookmarks"))
        timeout = min(float(query.get("timeoutSeconds") or self.api.max_watch_seconds), self.api.max_watch_seconds)
        fields = _field_selector(query)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        deadline = time.monotonic() + timeout
        try:
            with state.cond:
                epoch, generation = state.epoch, state.generation
                if rv == 0:  # "any version": the current state as ADDED events first
                    rv, items = state.list_json(res, route.namespace, fields)
                    for item in items:
                        self._chunk(b'{"type":"ADDED","object":' + item + b"}\n")
            next_bookmark = time.monotonic() + self.api.bookmark_seconds
            while True:
                with state.cond:
                    if expired or state.epoch != epoch:
                        raise ApiError(410, "Expired", f"too old resource version: {rv}")
                    events = state.events_since(rv, res, route.namespace)
                    if not events and not state.closed:
                        state.cond.wait(min(0.2, max(0.0, next_bookmark - time.monotonic())))
                        events = state.events_since(rv, res, route.namespace)
                    closed, current = state.closed or state.generation != generation, state.rv
                for event in events:
                    rv = event.rv
                    if fields and not fields_match(json.loads(event.obj), fields):
                        continue
                    self._chunk(b'{"type":"%s","object":%s}\n' % (event.type.encode(), event.obj))
                now = time.monotonic()
                if closed or now >= deadline:
                    break
                if bookmarks and now >= next_bookmark:
                    # Every event of this resource up to ``current`` has been sent.
                    rv = max(rv, current)
                    self._chunk(json.dumps({"type": "BOOKMARK", "object": {
                        "kind": res.kind, "apiVersion": res.api_version,
                        "metadata": {"resourceVersion": str(rv)}}}).encode() + b"\n")
                    next_bookmark = now + self.api.bookmark_seconds
        except ApiError as err:
            self._chunk(json.dumps({"type": "ERROR", "object": err.status()}).encode() + b"\n")
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
            return
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


def _truthy(value: str | None) -> bool:
    """A query boolean as the API server parses it (Go's strconv.ParseBool: 1, t, true, True, ...)."""
    return value in ("1", "t", "T", "true", "TRUE", "True")


def _field_selector(query: dict[str, str]) -> dict[str, str]:
    raw = query.get("fieldSelector") or ""
    out: dict[str, str] = {}
    for part in filter(None, raw.split(",")):
        key, _, value = part.partition("=")
        out[key.strip()] = value.strip().lstrip("=")
    return out

"""Talking to the scheduling servers at the wire: real HTTP on loopback, the JSON shapes
kube-scheduler (k8s.io/kube-scheduler/extender/v1) and the API server (admission/v1) send."""

from __future__ import annotations

import http.client
import json
import re
import socket
import ssl
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from kube.model import ClusterObjects
from kube.names import StorageNames
from scheduling.extender import Extender
from scheduling.server import HttpServer, Limits, Route, health_pages
from scheduling.tls import TLSFiles
from scheduling.view import StaticView
from tests.factories import NAMES

Json = dict[str, Any]


@dataclass(slots=True)
class FakeClock:
    now: float = 1000.0

    def __call__(self) -> float:
        return self.now


class Client:
    """One keep-alive connection, as kube-scheduler keeps one to its extender."""

    def __init__(self, server: HttpServer, context: ssl.SSLContext | None = None) -> None:
        if context is None:
            self.conn: http.client.HTTPConnection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
        else:
            self.conn = http.client.HTTPSConnection("127.0.0.1", server.port, timeout=10, context=context)

    def post_raw(self, path: str, body: bytes) -> tuple[int, Any]:
        self.conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
        response = self.conn.getresponse()
        return response.status, json.loads(response.read())

    def post(self, path: str, payload: object) -> Any:
        status, answer = self.post_raw(path, json.dumps(payload).encode())
        assert status == 200, answer
        return answer

    def close(self) -> None:
        self.conn.close()


def server_at(routes: Mapping[str, Route], tls: TLSFiles | None = None, limits: Limits | None = None,
              ready: Callable[[], str | None] = lambda: None) -> HttpServer:
    """A started server on a free loopback port, with the health pages both commands serve."""
    server = HttpServer("127.0.0.1", 0, pages=health_pages(ready), routes=routes, tls=tls, limits=limits)
    server.start()
    return server


@contextmanager
def serving(routes: Mapping[str, Route], tls: TLSFiles | None = None,
            context: ssl.SSLContext | None = None) -> Iterator[Client]:
    server = server_at(routes, tls)
    client = Client(server, context)
    try:
        yield client
    finally:
        client.close()
        server.close()


@contextmanager
def extender_at(objects: ClusterObjects, clock: FakeClock | None = None, timeout: float = 300.0,
                names: StorageNames = NAMES) -> Iterator[tuple[Client, Extender, StaticView]]:
    """An extender over a static view of ``objects``, served on loopback."""
    view = StaticView.of(objects)
    extender = Extender(view, names, reservation_timeout=timeout, clock=clock or FakeClock())
    with serving(extender.routes()) as client:
        yield client, extender, view


def extender_args(pod: Json, names: Sequence[str] | None = None, nodes: Sequence[Json] | None = None) -> Json:
    """ExtenderArgs: ``NodeNames`` when the extender is nodeCacheCapable, else ``Nodes``."""
    return {
        "Pod": pod,
        "Nodes": None if nodes is None else {"metadata": {}, "items": list(nodes)},
        "NodeNames": None if names is None else list(names),
    }


def exchange(port: int, data: bytes, *, wait: float = 3.0, chunks: Sequence[bytes] = ()) -> bytes:
    """Send raw bytes (then ``chunks``), read until the server closes or ``wait`` seconds pass
    without a byte; what came back. For requests no client library would send."""
    with socket.create_connection(("127.0.0.1", port), timeout=wait) as sock:
        sock.sendall(data)
        try:
            for chunk in chunks:
                sock.sendall(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server answered and closed before taking it all: read what it said
        out = b""
        try:
            while True:
                got = sock.recv(65536)
                if not got:
                    break
                out += got
        except (TimeoutError, ConnectionResetError):
            pass
    return out


def statuses(answer: bytes) -> list[int]:
    """The status codes of every response in ``answer``, in order."""
    return [int(code) for code in re.findall(rb"HTTP/1\.[01] (\d{3}) ", answer)]

"""The servers' own dispatch and body reading, at the socket: methods and paths answered as
aiohttp's router answers them (404, 405 with ``Allow``, HEAD on pages), ``Expect:
100-continue``, and a body that arrives after its headers (read under the body timeout)."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest

from scheduling.server import HttpServer, Limits
from tests.scheduling.wire import exchange, server_at, statuses

LIMITS = Limits(max_request_bytes=64 << 10, idle_timeout=2.0, body_timeout=1.0)


def _echo(body: object) -> object:
    return {"echo": body}


@pytest.fixture
def server() -> Iterator[HttpServer]:
    served = server_at({"/filter": _echo}, limits=LIMITS)
    yield served
    served.close()


def _request(line: str, headers: str = "", body: bytes = b"") -> bytes:
    return f"{line} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{headers}\r\n".encode() + body


@pytest.mark.parametrize(("sent", "status", "header"), [
    pytest.param(_request("GET /filter"), 405, b"Allow: POST", id="get-on-a-post-route"),
    pytest.param(_request("POST /healthz", "Content-Length: 2\r\n", b"{}"), 405, b"Allow: GET,HEAD",
                 id="post-on-a-page"),
    pytest.param(_request("GET /nothing"), 404, b"404: Not Found", id="unknown-path"),
    pytest.param(_request("POST /nothing", "Content-Length: 2\r\n", b"{}"), 404, b"404: Not Found",
                 id="post-to-an-unknown-path"),
    pytest.param(_request("GET /healthz?probe=1"), 200, b'{"status":"ok"}', id="query-string-ignored"),
    pytest.param(_request("POST /filter", "Content-Length: 2\r\nExpect: teapot\r\n"), 417, b"unknown Expect",
                 id="unknown-expectation"),
])
def test_methods_and_paths_are_answered_as_the_router_did(server: HttpServer, sent: bytes, status: int,
                                                          header: bytes) -> None:
    answer = exchange(server.port, sent)
    assert statuses(answer) == [status], answer[:300]
    assert header in answer


def test_head_on_a_page_is_its_headers_without_the_body(server: HttpServer) -> None:
    answer = exchange(server.port, _request("HEAD /healthz"))
    head, _, body = answer.partition(b"\r\n\r\n")
    assert statuses(head) == [200]
    assert b"Content-Length: 15" in head
    assert body == b""


def _read_until(sock: socket.socket, marker: bytes) -> bytes:
    got = b""
    while marker not in got:
        chunk = sock.recv(65536)
        if not chunk:
            break
        got += chunk
    return got


def test_expect_100_continue_is_answered_before_the_body_is_sent(server: HttpServer) -> None:
    """As curl does for larger bodies: headers, wait for the 100, then the body."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=3) as sock:
        sock.sendall(_request("POST /filter", "Content-Length: 7\r\nExpect: 100-continue\r\n"))
        assert _read_until(sock, b"\r\n\r\n").startswith(b"HTTP/1.1 100 Continue\r\n\r\n")
        sock.sendall(b"[1,2,3]")
        answer = _read_until(sock, b"}")
    assert statuses(answer) == [200]
    assert answer.endswith(b'{"echo":[1,2,3]}')


def test_expect_100_continue_over_the_limit_is_413_without_the_100(server: HttpServer) -> None:
    answer = exchange(server.port, _request("POST /filter", "Content-Length: 70000\r\nExpect: 100-continue\r\n"))
    assert statuses(answer) == [413]


@pytest.mark.parametrize(("headers", "parts", "expected"), [
    pytest.param("Content-Length: 7\r\n", [b"[1,", b"2,3]"], b'{"echo":[1,2,3]}', id="length-in-two-parts"),
    pytest.param("Transfer-Encoding: chunked\r\n", [b"3\r\n[1,\r\n", b"4\r\n2,3]\r\n", b"0\r\n\r\n"],
                 b'{"echo":[1,2,3]}', id="chunked-in-three-parts"),
])
def test_a_body_that_follows_its_headers_is_read_whole(server: HttpServer, headers: str, parts: list[bytes],
                                                       expected: bytes) -> None:
    with socket.create_connection(("127.0.0.1", server.port), timeout=3) as sock:
        sock.sendall(_request("POST /filter", headers))
        for part in parts:
            time.sleep(0.05)  # each part its own packet: the server waits for the rest
            sock.sendall(part)
        answer = _read_until(sock, b"}")
    assert statuses(answer) == [200]
    assert answer.endswith(expected)

"""The servers' HTTP transport under hostile and busy clients, at the socket: framing errors,
smuggling attempts, body limits, slow and idle connections, bursts. Every case runs on
loopback against a real server with small limits, and each test ends by itself."""

from __future__ import annotations

import http.client
import logging
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from scheduling.server import HttpServer, Limits
from tests.scheduling.wire import exchange, server_at, statuses


def _echo(body: object) -> object:
    return {"kind": type(body).__name__}


FAST = Limits(max_request_bytes=64 << 10, idle_timeout=0.6, body_timeout=0.6, handshake_timeout=0.6)


@contextmanager
def echo_server(limits: Limits = FAST) -> Iterator[HttpServer]:
    server = server_at({"/filter": _echo}, limits=limits)
    try:
        yield server
    finally:
        server.close()


def _post(headers: str, body: bytes = b"") -> bytes:
    return b"POST /filter HTTP/1.1\r\nHost: x\r\n" + headers.encode() + b"\r\n" + body


def _one_line_each(records: list[logging.LogRecord]) -> None:
    for record in records:
        assert record.exc_info is None, record.getMessage()
        assert "\n" not in record.getMessage() and "Traceback" not in record.getMessage()


@pytest.mark.parametrize(("request_bytes", "status"), [
    pytest.param(_post("Content-Length: -1\r\n", b"{}"), 400, id="negative-length"),
    pytest.param(_post("Content-Length: abc\r\n", b"{}"), 400, id="non-numeric-length"),
    pytest.param(_post("Content-Length: 2\r\nContent-Length: 3\r\n", b"{}"), 400, id="two-lengths"),
    pytest.param(_post("Content-Length: 5\r\nTransfer-Encoding: chunked\r\n", b"0\r\n\r\n"), 400,
                 id="length-and-chunked"),
    pytest.param(_post("Transfer-Encoding: chunked, identity\r\n", b"0\r\n\r\n"), 400, id="chunked-not-last"),
    pytest.param(_post("Transfer-Encoding: chunked\r\n", b"zz\r\n{}\r\n0\r\n\r\n"), 400, id="bad-chunk-size"),
    pytest.param(_post("X-Long: " + "a" * 9000 + "\r\n"), 400, id="header-too-long"),
    pytest.param(_post("", b"GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n"), 411, id="post-without-length"),
    pytest.param(b"\x16\x03\x01\x00\xa5garbage\r\n\r\n", 400, id="not-http"),
])
def test_malformed_requests_get_one_answer_and_one_log_line(request_bytes: bytes, status: int,
                                                            caplog: pytest.LogCaptureFixture) -> None:
    with echo_server() as server:
        caplog.clear()
        answer = exchange(server.port, request_bytes)
        time.sleep(0.05)  # the log line is written after the answer
    assert statuses(answer) == [status], answer[:200]
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) <= 1, [r.getMessage() for r in warnings]
    _one_line_each(caplog.records)


def test_a_chunked_body_is_one_request_and_what_follows_it_the_next() -> None:
    """The body of a chunked POST (even one that reads like a request) is never answered as a request;
    a request pipelined after the final chunk is answered after it."""
    smuggled = b'["GET /metrics HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n"]'
    body = b"%x\r\n%s\r\n0\r\n\r\n" % (len(smuggled), smuggled)
    pipelined = b"GET /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    with echo_server() as server:
        answer = exchange(server.port, _post("Transfer-Encoding: chunked\r\n", body) + pipelined)
    assert statuses(answer) == [200, 200]
    assert b'{"kind":"list"}' in answer
    assert b"# HELP" not in answer


@pytest.mark.parametrize(("headers", "chunks"), [
    pytest.param("Content-Length: 60000000\r\n", [], id="length-over-the-limit-refused-before-the-body"),
    pytest.param("Transfer-Encoding: chunked\r\n", [b"8000\r\n" + b"[" * 0x8000 + b"\r\n"] * 4,
                 id="chunked-past-the-limit"),
])
def test_a_body_over_the_limit_is_413_and_the_connection_closed(headers: str, chunks: list[bytes]) -> None:
    with echo_server() as server:
        started = time.monotonic()
        answer = exchange(server.port, _post(headers), chunks=chunks)
    assert statuses(answer) == [413]
    assert b"Connection: close" in answer
    assert time.monotonic() - started < 4.0  # answered and closed, not waiting for 60 MB


def test_a_client_that_sends_its_whole_body_first_reads_the_413() -> None:
    """As ``requests``/``http.client`` do: the whole body is written before the answer is read.
    The server discards the rest instead of resetting the connection under the client."""
    body = b"[" + b"{}," * 3_000_000 + b"{}]"  # 9 MB against 64 kB: more than the socket buffers hold
    with echo_server() as server:
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
        conn.request("POST", "/filter", body=body, headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        answer = response.read()
        conn.close()
    assert response.status == 413, answer


def test_a_body_that_never_arrives_is_408() -> None:
    with echo_server() as server:
        started = time.monotonic()
        answer = exchange(server.port, _post("Content-Length: 100\r\n", b'{"Pod": '))
    assert statuses(answer) == [408]
    assert time.monotonic() - started < 3.0


@pytest.mark.parametrize("body", [
    pytest.param(b"[" * 1000 + b"]" * 1000, id="arrays-1000-deep"),
    pytest.param(b'{"a":' * 1000 + b"1" + b"}" * 1000, id="objects-1000-deep"),
    pytest.param(b"[" + b"{}," * 20000 + b"{}]", id="dense-empty-objects"),
])
def test_json_that_would_cost_far_more_than_its_size_is_400(body: bytes, caplog: pytest.LogCaptureFixture) -> None:
    with echo_server() as server:
        answer = exchange(server.port, _post(f"Content-Length: {len(body)}\r\n", body))
        time.sleep(0.05)
    assert statuses(answer) == [400]
    assert len([r for r in caplog.records if "refused (400)" in r.getMessage()]) == 1
    _one_line_each(caplog.records)


@pytest.mark.parametrize("sent", [
    pytest.param(b"", id="nothing-sent"),
    pytest.param(b"POST /filter HTTP/1.1\r\nHost: x\r\n", id="headers-never-finished"),
])
def test_idle_and_half_sent_connections_are_closed(sent: bytes) -> None:
    with echo_server() as server:
        started = time.monotonic()
        answer = exchange(server.port, sent, wait=5.0)
        closed_after = time.monotonic() - started
    assert answer == b"" or statuses(answer) in ([400], [408])
    assert closed_after < 3.0, closed_after


def test_idle_connections_cannot_keep_a_real_request_out() -> None:
    """Past the connection limit the oldest idle connection makes room for a new one (as under a
    low descriptor limit, where idle sockets once made a real /filter time out)."""
    limits = Limits(max_connections=8, idle_timeout=30.0)
    with echo_server(limits) as server:
        idle = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(20)]
        try:
            started = time.monotonic()
            answer = exchange(server.port, _post("Content-Length: 2\r\nConnection: close\r\n", b"{}"))
            took = time.monotonic() - started
        finally:
            for sock in idle:
                sock.close()
    assert statuses(answer) == [200]
    assert took < 2.0


def test_a_burst_of_200_new_connections_is_answered() -> None:
    """200 clients connect at once (a burst of pod creations): every one is answered, quickly."""
    with echo_server(Limits()) as server:
        go = threading.Barrier(200, timeout=10)
        codes: list[int] = []
        lock = threading.Lock()

        def one() -> None:
            go.wait()
            answer = exchange(server.port, _post("Content-Length: 2\r\nConnection: close\r\n", b"{}"), wait=10.0)
            with lock:
                codes.extend(statuses(answer))

        threads = [threading.Thread(target=one) for _ in range(200)]
        started = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=20)
        took = time.monotonic() - started
    assert codes == [200] * 200
    assert took < 5.0, took

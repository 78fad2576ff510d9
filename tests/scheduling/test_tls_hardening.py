"""TLS under failure, at the socket: handshakes that fail or stall cost one log line and close;
a certificate renewed before its key keeps the old pair serving; client certificates are
checked when the server has a client CA (``--client-ca-file``)."""

from __future__ import annotations

import logging
import os
import shutil
import socket
import ssl
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from scheduling.server import HttpServer, Limits
from scheduling.tls import TLSFiles
from scheduling.webhook import WebhookConfig, mutate
from tests.factories import pod_json
from tests.scheduling.certs import Issued, issue
from tests.scheduling.wire import Client, exchange, server_at

REVIEW = {"request": {"uid": "u1", "namespace": "default", "object": pod_json("p")}}
LIMITS = Limits(handshake_timeout=0.5, idle_timeout=2.0)


def _webhook(files: TLSFiles) -> HttpServer:
    return server_at({"/mutate": lambda b: mutate(b, WebhookConfig())}, files, limits=LIMITS)


def _trusting(cert: Path, client: Issued | None = None) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(cert))
    if client is not None:
        context.load_cert_chain(str(client.cert), str(client.key))
    return context


def _handshake_lines(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if "TLS handshake" in r.getMessage()]


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[HttpServer, Issued]]:
    pair = issue(tmp_path / "serving", "webhook")
    server = _webhook(TLSFiles(str(pair.cert), str(pair.key)))
    try:
        yield server, pair
    finally:
        server.close()


@pytest.mark.parametrize("sent", [
    pytest.param(b"POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}", id="plain-http-to-tls"),
    pytest.param(b"", id="stalled-handshake"),
    pytest.param(b"\x16\x03\x01\x00\x05hello", id="garbled-client-hello"),
])
def test_a_failed_handshake_is_one_log_line_and_the_server_serves_on(
        served: tuple[HttpServer, Issued], sent: bytes, caplog: pytest.LogCaptureFixture) -> None:
    server, pair = served
    started = time.monotonic()
    exchange(server.port, sent, wait=3.0)
    assert time.monotonic() - started < 2.5  # a stalled handshake is cut at handshake_timeout
    time.sleep(0.05)
    lines = _handshake_lines(caplog)
    assert len(lines) == 1, [r.getMessage() for r in caplog.records]
    assert lines[0].exc_info is None and "\n" not in lines[0].getMessage()
    assert all(r.exc_info is None for r in caplog.records)
    client = Client(server, _trusting(pair.cert))
    assert client.post("/mutate", REVIEW)["response"]["uid"] == "u1"
    client.close()


def _touch_later(*paths: Path) -> None:
    """Bump modification times as a rewrite a second later would."""
    for path in paths:
        stamp = path.stat().st_mtime + 5
        os.utime(path, (stamp, stamp))


def test_certificate_renewed_before_its_key_keeps_the_old_pair_serving(tmp_path: Path,
                                                                      caplog: pytest.LogCaptureFixture) -> None:
    old, new = issue(tmp_path / "old", "webhook-v1"), issue(tmp_path / "new", "webhook-v2")
    mounted = tmp_path / "mounted"
    shutil.copytree(tmp_path / "old", mounted)
    server = _webhook(TLSFiles(str(mounted / "tls.crt"), str(mounted / "tls.key")))
    try:
        # The kubelet updates the Secret's files one at a time: the certificate first.
        shutil.copyfile(new.cert, mounted / "tls.crt")
        _touch_later(mounted / "tls.crt")
        for _ in range(3):  # every connection meanwhile gets the old pair, and one warning is logged
            client = Client(server, _trusting(old.cert))
            assert client.post("/mutate", REVIEW)["response"]["allowed"] is True
            client.close()
        refusals = [r for r in caplog.records if "do not load as a pair" in r.getMessage()]
        assert len(refusals) == 1
        shutil.copyfile(new.key, mounted / "tls.key")
        _touch_later(mounted / "tls.key")
        client = Client(server, _trusting(new.cert))
        assert client.post("/mutate", REVIEW)["response"]["allowed"] is True
        client.close()
    finally:
        server.close()


@pytest.fixture
def mutual(tmp_path: Path) -> Iterator[tuple[HttpServer, Issued, Issued]]:
    """A webhook that asks for client certificates from its CA; (server, CA, a client it signed)."""
    ca = issue(tmp_path / "ca", "scheduling-ca", is_ca=True)
    serving = issue(tmp_path / "serving", "webhook", ca)
    client = issue(tmp_path / "client", "kube-scheduler", ca)
    server = _webhook(TLSFiles(str(serving.cert), str(serving.key), str(ca.cert)))
    try:
        yield server, ca, client
    finally:
        server.close()


def test_client_certificate_from_the_ca_is_served(mutual: tuple[HttpServer, Issued, Issued]) -> None:
    server, ca, client_pair = mutual
    client = Client(server, _trusting(ca.cert, client_pair))
    assert client.post("/mutate", REVIEW)["response"]["uid"] == "u1"
    client.close()


def test_no_client_certificate_is_403_on_routes_but_probes_pass(mutual: tuple[HttpServer, Issued, Issued]) -> None:
    server, ca, _ = mutual
    client = Client(server, _trusting(ca.cert))
    status, answer = client.post_raw("/mutate", b"{}")
    client.close()
    probe = Client(server, _trusting(ca.cert))
    probe.conn.request("GET", "/readyz")
    ready = probe.conn.getresponse()
    ready.read()
    probe.close()
    assert status == 403 and "client certificate" in answer["error"]
    assert ready.status == 200


def test_client_certificate_of_another_ca_fails_the_handshake(tmp_path: Path,
                                                              mutual: tuple[HttpServer, Issued, Issued],
                                                              caplog: pytest.LogCaptureFixture) -> None:
    server, ca, _ = mutual
    stranger = issue(tmp_path / "stranger", "intruder")
    context = _trusting(ca.cert, stranger)
    with pytest.raises((ssl.SSLError, ConnectionError)), \
            socket.create_connection(("127.0.0.1", server.port), timeout=3) as raw, \
            context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
        tls.sendall(b"POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
        if not tls.recv(1024):  # TLS 1.3: the refusal arrives after the client's Finished
            raise ConnectionError("closed")
    time.sleep(0.05)
    assert len(_handshake_lines(caplog)) == 1

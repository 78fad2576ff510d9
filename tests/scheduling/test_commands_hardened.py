"""The commands as deployed (their own processes) under the issue-18 probes: a 60 MB body,
the body limit flag, and mutual TLS from the command line."""

from __future__ import annotations

import http.client
import json
import socket
import ssl
from pathlib import Path

import pytest

from app.scheduling_cmd import STALE_AFTER_SECONDS, WATCH_SECONDS
from tests.factories import node_json, pod_json, pvc_json, storage_class_json
from tests.scheduling.certs import issue
from tests.scheduling.test_live import start, stop
from tests.scheduling.wire import exchange, extender_args, statuses

MB = 1_000_000


def _snapshot(tmp_path: Path) -> str:
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps({"kind": "List", "items": [
        node_json("n1", storage_free="100Gi"), storage_class_json(), pvc_json("a", "10Gi"),
        pod_json("p", claims=["a"])]}))
    return str(path)


def _peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024 / MB
    raise AssertionError("no VmHWM")


def _send_chunked(port: int, total: int) -> bytes:
    """A chunked body of ``total`` bytes of ``[{},{},...]``, sent until the server answers or closes."""
    block = b"[{}," * (MB // 4)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"POST /filter HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
        try:
            for _ in range(total // len(block)):
                sock.sendall(b"%x\r\n%s\r\n" % (len(block), block))
        except (BrokenPipeError, ConnectionResetError):
            pass
        try:
            return sock.recv(65536)
        except ConnectionResetError:
            return b""


@pytest.mark.parametrize("chunked", [pytest.param(False, id="content-length"), pytest.param(True, id="chunked")])
def test_a_60_mb_body_is_413_and_memory_stays_bounded(tmp_path: Path, chunked: bool) -> None:
    proc, port = start("scheduler-extender", "--insecure-http", "--snapshot", _snapshot(tmp_path))
    try:
        before = _peak_rss_mb(proc.pid)
        if chunked:
            answer = _send_chunked(port, 60 * MB)
        else:
            answer = exchange(port, b"POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: 60000000\r\n\r\n")
        after = _peak_rss_mb(proc.pid)
    finally:
        assert stop(proc) == 0
    if answer or not chunked:  # a reset may drop the 413 the server sent before closing
        assert statuses(answer) == [413], answer[:200]
    assert after - before < 120, (before, after)  # at most the 48 MiB limit read, never decoded


def test_max_request_bytes_is_the_limit(tmp_path: Path) -> None:
    proc, port = start("scheduler-extender", "--insecure-http", "--snapshot", _snapshot(tmp_path),
                       "--max-request-bytes", "3000")
    small = json.dumps(extender_args(pod_json("p", claims=["a"]), names=["n1"])).encode()
    large = json.dumps(extender_args(pod_json("p", claims=["a"]), names=["n1"] * 400)).encode()
    assert len(small) < 3000 < len(large)
    try:
        answers = [exchange(port, b"POST /filter HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                                  b"Content-Length: %d\r\n\r\n%s" % (len(body), body)) for body in (small, large)]
    finally:
        assert stop(proc) == 0
    assert [statuses(a) for a in answers] == [[200], [413]]


def test_client_ca_file_from_the_command_line(tmp_path: Path) -> None:
    ca = issue(tmp_path / "ca", "scheduling-ca", is_ca=True)
    serving = issue(tmp_path / "serving", "extender", ca)
    client = issue(tmp_path / "client", "kube-scheduler", ca)
    proc, port = start("scheduler-extender", "--snapshot", _snapshot(tmp_path), "--tls-cert-file", str(serving.cert),
                       "--tls-private-key-file", str(serving.key), "--client-ca-file", str(ca.cert))
    body = json.dumps(extender_args(pod_json("p", claims=["a"]), names=["n1"]))
    codes = []
    try:
        for presents in (False, True):
            context = ssl.create_default_context(cafile=str(ca.cert))
            if presents:
                context.load_cert_chain(str(client.cert), str(client.key))
            conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=10, context=context)
            conn.request("POST", "/filter", body=body, headers={"Content-Type": "application/json"})
            response = conn.getresponse()
            response.read()
            codes.append(response.status)
            conn.close()
    finally:
        assert stop(proc) == 0
    assert codes == [403, 200]


def test_a_hung_watch_is_noticed_within_a_minute_as_deployed() -> None:
    """A healthy watch is reopened every WATCH_SECONDS, so silence past STALE_AFTER_SECONDS is a
    hung connection; the bound the extender's /readyz answers within (tested scaled down in
    test_live.test_a_hung_watch_marks_the_view_stale)."""
    assert WATCH_SECONDS < STALE_AFTER_SECONDS < 60

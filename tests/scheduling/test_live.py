"""The extender fed by a fake API server at the wire: the adapter's watch caches, real HTTP on
both sides, and the ``scheduler-extender`` / ``pod-webhook`` commands as deployed."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.scheduling_cmd import ready_check
from kube.names import StorageNames
from kubeapi.caches import Caches
from kubeapi.config import api_client
from kubeapi.ratelimit import TokenBucket
from kubeapi.transport import Transport
from scheduling.extender import Extender
from scheduling.live_view import CachesView, scheduling_kinds
from simulator.volumes import REASON_NOT_ENOUGH_SPACE
from tests.factories import NAMES, node_json, pod_json, pv_json, pvc_json, storage_class_json
from tests.fakeapi import FakeAPIServer
from tests.kubeapi.conftest import eventually
from tests.scheduling.wire import Client, extender_args, server_at, serving

REPO = Path(__file__).resolve().parents[2]
Json = dict[str, Any]


def seed(api: FakeAPIServer) -> None:
    api.state.put_all([
        node_json("n100", storage_free="100Gi"), node_json("n200", storage_free="200Gi"), storage_class_json(),
        pvc_json("a", "60Gi"), pvc_json("b", "60Gi"), pod_json("web", claims=["a", "b"]),
    ])


@pytest.fixture
def live(tmp_path: Path) -> Iterator[tuple[FakeAPIServer, Client, Extender]]:
    with FakeAPIServer(bookmark_seconds=0.1) as api:
        seed(api)
        kubeconfig = str(api.write_kubeconfig(tmp_path / "kubeconfig"))
        transport = Transport(api_client(kubeconfig), TokenBucket(1000.0, 1000), timeout=(1.0, 1.0))
        caches = Caches(transport, NAMES, kinds=scheduling_kinds(), watch_seconds=5, backoff=(0.01, 0.1))
        caches.start()
        try:
            assert caches.wait_synced(5.0), caches.unavailable_reason()
            extender = Extender(CachesView(caches), NAMES, reservation_timeout=300.0, clock=time.monotonic)
            with serving(extender.routes()) as client:
                yield api, client, extender
        finally:
            caches.stop()


def test_filter_reads_nodes_and_claims_from_the_watch_caches(live: tuple[FakeAPIServer, Client, Extender]) -> None:
    api, client, _ = live
    args = extender_args(pod_json("web", claims=["a", "b"]), names=["n100", "n200"])
    first = client.post("/filter", args)
    assert first["NodeNames"] == ["n200"]
    assert first["FailedNodes"] == {"n100": REASON_NOT_ENOUGH_SPACE}
    # The driver reports more room on n100: a watch event, no LIST, and the answer follows.
    lists = len(api.requests("GET", "/api/v1/nodes", watch=False))
    api.state.put(node_json("n100", storage_free="500Gi"))

    def n100_fits() -> bool:
        return "n100" in client.post("/filter", args)["NodeNames"]

    eventually(n100_fits, what="the node's new capacity annotation")
    assert len(api.requests("GET", "/api/v1/nodes", watch=False)) == lists


def test_reservation_released_when_the_provisioner_binds(live: tuple[FakeAPIServer, Client, Extender]) -> None:
    api, client, extender = live
    api.state.put_all([pvc_json("c", "120Gi"), pvc_json("d", "100Gi"), pod_json("big", claims=["c"]),
                       pod_json("other", claims=["d"])])
    eventually(lambda: client.post("/filter", extender_args(pod_json("big", claims=["c"]), names=["n200"]))[
        "NodeNames"] == ["n200"] and extender.book.get("uid-default-big") is not None,
        what="claims c and d, and pod big, in the caches")
    # other's 100Gi no longer fits next to big's 120Gi in flight.
    assert client.post("/filter", extender_args(pod_json("other", claims=["d"]), names=["n200"]))["NodeNames"] == []
    # The provisioner binds c to a PV pinned to n200, the driver lowers the annotation.
    api.state.put_all([pv_json("pv-c", "120Gi", hosts=["n200"], claim=("default", "c")),
                       pvc_json("c", "120Gi", volume="pv-c"), node_json("n200", storage_free="80Gi")])
    # Reservations expire on the next filter call of a pod with claims that sees the bound claim
    # (a claimless pod's call reads no reservation, so it expires none).
    eventually(lambda: client.post("/filter", extender_args(pod_json("other", claims=["d"]), names=[]))["Error"] == ""
               and extender.book.get("uid-default-big") is None, what="the reservation to be released")
    after = client.post("/filter", extender_args(pod_json("other", claims=["d"]), names=["n200"]))
    assert after["FailedNodes"] == {"n200": REASON_NOT_ENOUGH_SPACE}  # 80Gi left: honest, not reserved


def test_unsynced_caches_answer_with_an_error_unless_the_pod_has_no_claims(tmp_path: Path) -> None:
    with FakeAPIServer(bookmark_seconds=0.1) as api:
        kubeconfig = str(api.write_kubeconfig(tmp_path / "kubeconfig"))
        transport = Transport(api_client(kubeconfig), TokenBucket(1000.0, 1000), timeout=(1.0, 1.0))
        caches = Caches(transport, StorageNames(), kinds=scheduling_kinds())  # never started
        extender = Extender(CachesView(caches), NAMES, reservation_timeout=300.0, clock=time.monotonic)
        with serving(extender.routes()) as client:
            local = client.post("/filter", extender_args(pod_json("web", claims=["a"]), names=["n1"]))
            plain = client.post("/filter", extender_args(pod_json("web"), names=["n1", "n2"]))
            body = json.dumps(extender_args(pod_json("w", claims=["a"]), names=[])).encode()
            status, answer = client.post_raw("/prioritize", body)
    assert "no complete view of the cluster" in local["Error"]
    assert local["NodeNames"] is None
    assert plain == {"NodeNames": ["n1", "n2"], "Nodes": None, "FailedNodes": {}, "FailedAndUnresolvableNodes": {},
                     "Error": ""}
    assert status == 400 and "no complete view" in answer["error"]


def test_a_hung_watch_marks_the_view_stale(tmp_path: Path) -> None:
    """A watch that goes silent (here: its reopen never answers) makes /readyz 503 after
    ``stale_after`` (45 s as deployed, under a minute); pods without claims still pass."""
    with FakeAPIServer(bookmark_seconds=0.2) as api:
        seed(api)
        kubeconfig = str(api.write_kubeconfig(tmp_path / "kubeconfig"))
        transport = Transport(api_client(kubeconfig), TokenBucket(1000.0, 1000), timeout=(1.0, 1.0))
        caches = Caches(transport, NAMES, kinds=scheduling_kinds(), watch_seconds=1, backoff=(0.01, 0.1),
                        stale_after=1.5)
        caches.start()
        view = CachesView(caches)
        extender = Extender(view, NAMES, reservation_timeout=300.0, clock=time.monotonic)
        server = server_at(extender.routes(), ready=ready_check(view))
        client = Client(server)
        try:
            assert caches.wait_synced(5.0), caches.unavailable_reason()
            assert get_status(server.port, "/readyz") == 200
            api.fail(r"/api/v1/nodes$", "timeout", times=3, watch=True, delay=4.0)
            started = time.monotonic()
            eventually(lambda: get_status(server.port, "/readyz") == 503, timeout=5.0, what="/readyz 503")
            noticed = time.monotonic() - started
            plain = client.post("/filter", extender_args(pod_json("p"), names=["n100"]))
            local = client.post("/filter", extender_args(pod_json("web", claims=["a"]), names=["n100"]))
        finally:
            client.close()
            server.close()
            caches.stop()
    assert noticed < 4.0
    assert plain["NodeNames"] == ["n100"] and plain["Error"] == ""
    assert "silent for" in local["Error"]


def get_status(port: int, path: str) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


# --- the commands, as deployed ---------------------------------------------------------------


def start(*argv: str) -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen([sys.executable, "-m", "autoscaler", *argv, "--address", "127.0.0.1", "--port", "0"],
                            stderr=subprocess.PIPE, text=True, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.stderr is not None
    deadline = time.monotonic() + 30
    lines = []
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        lines.append(line)
        match = re.search(r"listening on https?://[^:]+:(\d+)", line)
        if match:
            return proc, int(match.group(1))
        if not line and proc.poll() is not None:
            break
    proc.kill()
    raise AssertionError(f"did not start: {''.join(lines)}")


def stop(proc: subprocess.Popen[str]) -> int:
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout=20)
    finally:
        if proc.stderr is not None:
            proc.stderr.close()


def post(port: int, path: str, body: Json) -> Any:
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def test_scheduler_extender_command_against_the_fake_api(tmp_path: Path) -> None:
    with FakeAPIServer(bookmark_seconds=0.1) as api:
        seed(api)
        kubeconfig = str(api.write_kubeconfig(tmp_path / "kubeconfig"))
        proc, port = start("scheduler-extender", "--kubeconfig", kubeconfig, "--insecure-http", "--sync-timeout", "10s")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=10) as response:
                assert response.status == 200
            result = post(port, "/filter", extender_args(pod_json("web", claims=["a", "b"]), names=["n100", "n200"]))
            assert result["NodeNames"] == ["n200"]
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
                exposition = response.read().decode()
            assert "storage_scheduler_extender_filter_duration_seconds_count 1.0" in exposition
            assert 'storage_scheduler_extender_failed_nodes_total{reason="node(s) did not have enough free storage"}' \
                ' 1.0' in exposition
            assert "storage_scheduler_extender_reservations 1.0" in exposition
        finally:
            assert stop(proc) == 0
        assert api.mutations == [], "the extender only reads"


def test_pod_webhook_command_from_a_snapshot(tmp_path: Path) -> None:
    snapshot = tmp_path / "cluster.yaml"
    snapshot.write_text(json.dumps({"kind": "List", "items": [storage_class_json(), pvc_json("a")]}))
    proc, port = start("pod-webhook", "--insecure-http", "--snapshot", str(snapshot), "--only-local-storage-pods",
                       "--namespaces", "default,data-*")
    try:
        body = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                "request": {"uid": "u1", "namespace": "default", "operation": "CREATE",
                            "object": pod_json("p", claims=["a"])}}
        answer = post(port, "/mutate", body)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
            assert 'storage_scheduler_webhook_reviews_total{outcome="routed"} 1.0' in response.read().decode()
    finally:
        assert stop(proc) == 0
    assert answer["response"]["allowed"] is True and answer["response"]["patchType"] == "JSONPatch"


@pytest.mark.parametrize(("argv", "message"), [
    pytest.param(["scheduler-extender", "--snapshot", "x.yaml"], "--tls-cert-file and --tls-private-key-file are "
                 "required", id="tls-required"),
    pytest.param(["scheduler-extender", "--insecure-http", "--snapshot", "missing.yaml"], "missing.yaml: cannot read",
                 id="missing-snapshot"),
    pytest.param(["scheduler-extender", "--insecure-http", "--snapshot", "x", "--reservation-timeout", "soon"],
                 "--reservation-timeout", id="bad-duration"),
    pytest.param(["pod-webhook", "--insecure-http", "--namespaces", " , "], "--namespaces", id="no-globs"),
    pytest.param(["scheduler-extender", "--insecure-http", "--client-ca-file", "ca.crt", "--snapshot", "x"],
                 "--client-ca-file exclude each other", id="client-ca-without-tls"),
    pytest.param(["pod-webhook", "--insecure-http", "--max-request-bytes", "0"], "--max-request-bytes: must be "
                 "positive", id="no-body-allowed"),
    pytest.param(["pod-webhook", "--tls-cert-file", "/nonexistent.crt", "--tls-private-key-file", "/nonexistent.key"],
                 "cannot listen on", id="tls-files-missing"),
])
def test_bad_flags_one_line_exit_2(argv: list[str], message: str, tmp_path: Path) -> None:
    if "x" in argv or "x.yaml" in argv:
        (tmp_path / "x").write_text("")
        (tmp_path / "x.yaml").write_text("")
    done = subprocess.run([sys.executable, "-m", "autoscaler", *argv, "--port", "0", "--address", "127.0.0.1"],
                          capture_output=True, text=True, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO)},
                          timeout=30, check=False)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr
    assert "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_probes() -> None:
    with serving({}) as client:
        client.conn.request("GET", "/healthz")
        health = client.conn.getresponse()
        health.read()
        client.conn.request("GET", "/readyz")
        ready = client.conn.getresponse()
        ready.read()
    assert (health.status, ready.status) == (200, 200)

"""``autoscaler run`` end to end: the CLI, the live adapter over HTTP, a cloud, the endpoints.

A fake Kubernetes API server on loopback holds the cluster; a tiny cloud (``fakecloud``)
stands behind the provider seam. ``main(["run", ...])`` runs in this process's main
thread, bounded by ``--max-loops`` or a SIGTERM, while a helper thread reads
``/metrics`` and ``/health-check``. Afterwards the API server's request log shows what
was changed, and that every request is allowed by ``deploy/``'s RBAC.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from app.cli import main
from cloudproviders.config import PROVIDERS
from tests.app.ca_metrics import CA_METRICS
from tests.app.fakecloud import CLOUDS, FakeCloud, provider_id
from tests.app.run_helpers import free_port
from tests.app.test_run_metrics import exposed_types
from tests.deploy.kustomize import render
from tests.deploy.rbac import allowed, grants, needed
from tests.factories import node_json, pod_json, pv_json, pvc_json, storage_class_json
from tests.fakeapi import FakeAPIServer
from tests.fakeapi.resources import resource_for

Json = dict[str, Any]
DEPLOY = Path(__file__).resolve().parents[2] / "deploy"


def _node(name: str, group: str, free: str | None = None) -> Json:
    obj = node_json(name, "8", "32Gi", labels={"ng": group}, storage_max="1000Gi" if free is not None else None,
                    storage_free=free)
    obj["spec"]["providerID"] = provider_id(group, name)
    return obj


def _cluster() -> list[Json]:
    """Four brokers need 400Gi of local disk each; nvme-1 has 300Gi free and is busy.

    general-1 is idle; general-2 is idle too but holds a pinned ``local`` volume (its data
    cannot move): only general-1 may go.
    """
    objects = [
        storage_class_json("rok", "rok.arrikto.com"),
        storage_class_json("local-storage", "kubernetes.io/no-provisioner"),
        _node("nvme-1", "nvme", "300Gi"), _node("general-1", "general"), _node("general-2", "general"),
        pod_json("busy", "6", "8Gi", "nvme-1"),
        pv_json("logs-pv", "50Gi", "local-storage", hosts=["general-2"], claim=("default", "logs"), driver="local"),
        pvc_json("logs", "50Gi", "local-storage", volume="logs-pv"),
    ]
    for i in range(4):
        objects.append(pvc_json(f"data-kafka-{i}", "400Gi", "rok"))
        objects.append(pod_json(f"kafka-{i}", "1", "1Gi", owner=("StatefulSet", "kafka"),
                                claims=[f"data-kafka-{i}"], labels={"app": "kafka"}))
    return objects


def _get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()
    except OSError:
        return 0, ""


class Scraper(threading.Thread):
    """Polls the endpoints during a run and keeps the last answers; optionally SIGTERMs when satisfied."""

    def __init__(self, port: int, want: str, *, terminate: bool = False) -> None:
        super().__init__(daemon=True)
        self.port, self.want, self.terminate = port, want, terminate
        self.metrics = ""
        self.health = 0
        self.done = threading.Event()

    def run(self) -> None:
        deadline = time.monotonic() + 20
        while not self.done.is_set() and time.monotonic() < deadline:
            code, body = _get(self.port, "/metrics")
            if code == 200 and self.want in body:
                self.metrics = body
                self.health = _get(self.port, "/health-check")[0]
                if self.terminate:
                    os.kill(os.getpid(), signal.SIGTERM)
                return
            time.sleep(0.02)


@pytest.fixture
def api(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[FakeAPIServer, FakeCloud, list[str]]]:
    monkeypatch.setitem(PROVIDERS, "fake", "tests.app.fakecloud")
    with FakeAPIServer(bookmark_seconds=0.1) as server:
        server.state.put_all(_cluster())
        cloud = FakeCloud(server.state)
        CLOUDS["e2e"] = cloud
        kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")
        flags = [f"--kubeconfig={kubeconfig}", "--cloud-provider=fake", "--cloud-config=e2e", "--nodes=1:10:nvme",
                 "--nodes=0:10:general", "--kube-client-qps=1000", "--kube-client-burst=1000",
                 "--scan-interval=100ms", "--scale-down-unneeded-time=0s", "--scale-down-delay-after-add=0s",
                 "--leader-elect-lease-duration=3s", "--leader-elect-renew-deadline=2s",
                 "--leader-elect-retry-period=50ms", "--cache-sync-timeout=10s"]
        try:
            yield server, cloud, flags
        finally:
            del CLOUDS["e2e"]


def test_run_scales_up_for_storage_removes_an_idle_node_and_keeps_pinned_data(
        api: tuple[FakeAPIServer, FakeCloud, list[str]], capsys: pytest.CaptureFixture[str]) -> None:
    server, cloud, flags = api
    port = free_port()
    scraper = Scraper(port, 'cluster_autoscaler_scaled_down_nodes_total{dra_drivers="",gpu_name="",'
                            'gpu_resource_name="",reason="empty"} 1.0')
    scraper.start()
    assert main(["run", *flags, f"--address=127.0.0.1:{port}", "--max-loops=6"]) == 0
    scraper.done.set()
    scraper.join()
    assert cloud.groups["nvme"].target_size() == 3, "two brokers per new 1000Gi node"
    assert cloud.groups["general"].deleted == ["general-1"]
    assert cloud.groups["general"].target_size() == 1
    assert server.state.names("Node") == ["general-2", "nvme-1"], "general-2 holds a pinned local volume"
    assert cloud.refreshes == 6, "one cloud refresh per loop"
    status = server.state.get("ConfigMap", "cluster-autoscaler-status", "kube-system")
    parsed = yaml.safe_load(status["data"]["status"])
    assert parsed["autoscalerStatus"] == "Running"
    assert [g["name"] for g in parsed["nodeGroups"]] == ["general", "nvme"]
    reasons = {(e["reason"], e["involvedObject"]["name"]) for e in _events(server)}
    assert {("TriggeredScaleUp", f"kafka-{i}") for i in range(4)} <= reasons
    assert ("ScaleDown", "general-1") in reasons
    lease = server.state.get("Lease", "cluster-autoscaler", "kube-system")
    assert lease["spec"]["holderIdentity"] == "", "the lease is released at shutdown"
    assert ('cluster_autoscaler_scaled_up_nodes_total{dra_drivers="",gpu_name="",gpu_resource_name=""} 2.0'
            in scraper.metrics)
    types = exposed_types(scraper.metrics)
    assert {n: k for n, (k, _) in CA_METRICS.items() if types.get(f"cluster_autoscaler_{n}") != k} == {}
    assert "storage_autoscaler_pods_pending_local_storage 4.0" in scraper.metrics
    assert scraper.health == 200
    err = capsys.readouterr().err
    assert err.count("] loop ") >= 6, "one structured line per loop"
    assert "phasesMs=" in err


def _events(server: FakeAPIServer) -> list[Json]:
    _, items = server.state.list_json(resource_for("Event", "v1"), None, {})
    return [json.loads(item) for item in items]


@pytest.mark.parametrize("extra", [pytest.param([], id="acting"), pytest.param(["--dry-run"], id="dry-run-shadow")])
def test_every_request_is_allowed_by_the_shipped_rbac(api: tuple[FakeAPIServer, FakeCloud, list[str]],
                                                      extra: list[str]) -> None:
    server, _, flags = api
    assert main(["run", *flags, f"--address=127.0.0.1:{free_port()}", "--max-loops=4", *extra]) == 0
    objects = render(DEPLOY / "overlays" / "eks")
    cluster_wide = grants(next(o for o in objects if o["kind"] == "ClusterRole")["rules"])
    in_namespace = grants(next(o for o in objects if o["kind"] == "Role")["rules"])
    denied = []
    for request in server.log:
        if request.path == "/version":
            continue  # a non-resource URL every authenticated user may read (system:public-info-viewer)
        namespace, grant = needed(request.method, request.path, request.query)
        if not (allowed(grant, cluster_wide) or (namespace == "kube-system" and allowed(grant, in_namespace))):
            denied.append(f"{request.method} {request.path} -> {grant}")
    assert denied == []


def test_dry_run_changes_nothing_but_events_status_and_the_lease(
        api: tuple[FakeAPIServer, FakeCloud, list[str]]) -> None:
    server, cloud, flags = api
    assert main(["run", *flags, f"--address=127.0.0.1:{free_port()}", "--max-loops=4", "--dry-run"]) == 0
    assert cloud.groups["nvme"].target_size() == 1
    assert cloud.groups["general"].deleted == []
    touched = {needed(r.method, r.path, r.query)[1].resource for r in server.mutations}
    assert touched == {"events", "configmaps", "leases"}
    messages = [e["message"] for e in _events(server)]
    assert messages and all(m.startswith("(dry run) ") for m in messages)


def test_sigterm_stops_cleanly_with_exit_0(api: tuple[FakeAPIServer, FakeCloud, list[str]]) -> None:
    _, _, flags = api
    port = free_port()
    scraper = Scraper(port, "storage_autoscaler_leader 1.0", terminate=True)
    scraper.start()
    started = time.monotonic()
    assert main(["run", *flags, f"--address=127.0.0.1:{port}"]) == 0
    scraper.join()
    assert time.monotonic() - started < 15
    assert scraper.health == 200


def test_a_lost_lease_ends_the_run_with_255_as_upstream(api: tuple[FakeAPIServer, FakeCloud, list[str]]) -> None:
    """Another replica takes the Lease: this one stops acting and exits 255 (upstream's "lost master").

    The restarted pod then waits as a standby; the Lease stays the other replica's.
    """
    server, _, flags = api
    port = free_port()
    stolen = threading.Event()

    def steal() -> None:
        deadline = time.monotonic() + 20
        while "storage_autoscaler_leader 1.0" not in _get(port, "/metrics")[1] and time.monotonic() < deadline:
            time.sleep(0.02)
        lease = server.state.get("Lease", "cluster-autoscaler", "kube-system")
        lease["spec"].update({"holderIdentity": "other-replica", "leaseDurationSeconds": 60,
                              "renewTime": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")})
        server.state.put(lease)
        stolen.set()
        if not stopped.wait(15):  # the run did not end by itself: stop it, and the test fails below
            os.kill(os.getpid(), signal.SIGTERM)

    stopped = threading.Event()
    helper = threading.Thread(target=steal, daemon=True)
    helper.start()
    try:
        status = main(["run", *flags, f"--address=127.0.0.1:{port}", "--leader-elect-lease-duration=1s",
                       "--leader-elect-renew-deadline=600ms", "--leader-elect-retry-period=100ms"])
    finally:
        stopped.set()
        helper.join(timeout=5)
    assert stolen.is_set()
    assert status == 255
    lease = server.state.get("Lease", "cluster-autoscaler", "kube-system")
    assert lease["spec"]["holderIdentity"] == "other-replica", "a replica that lost the Lease leaves it alone"


def test_sigterm_while_waiting_for_the_first_view_exits_0(api: tuple[FakeAPIServer, FakeCloud, list[str]]) -> None:
    server, _, flags = api
    server.fail(r"^/api/v1/nodes$", 500, times=10_000, watch=False)
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGTERM))
    timer.start()
    try:
        assert main(["run", *flags, f"--address=127.0.0.1:{free_port()}"]) == 0
    finally:
        timer.cancel()


def test_no_complete_view_in_time_is_one_line_and_exit_2(api: tuple[FakeAPIServer, FakeCloud, list[str]],
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    server, _, flags = api
    server.fail(r"^/api/v1/nodes$", 500, times=10_000, watch=False)
    assert main(["run", *flags, "--cache-sync-timeout=1s", f"--address=127.0.0.1:{free_port()}"]) == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("autoscaler run: the API server at http://127.0.0.1:")
    assert "no complete view within --cache-sync-timeout=1s" in last


def test_status_config_map_name_is_honoured(api: tuple[FakeAPIServer, FakeCloud, list[str]]) -> None:
    server, _, flags = api
    assert main(["run", *flags, "--status-config-map-name=autoscaler-status", f"--address=127.0.0.1:{free_port()}",
                 "--max-loops=1"]) == 0
    status = server.state.get("ConfigMap", "autoscaler-status", "kube-system")
    assert status["data"]["status"].strip(), "the status text is written"
    assert "cluster-autoscaler-status" not in server.state.names("ConfigMap")


@pytest.mark.parametrize(("flags", "message"), [
    pytest.param(["--kubeconfig=/nonexistent/kubeconfig"], "autoscaler run: --kubeconfig: /nonexistent/kubeconfig:",
                 id="missing-kubeconfig"),
    pytest.param(["--kubeconfig={unreachable}"], "autoscaler run: cannot use the API server:", id="unreachable"),
    pytest.param(["--cloud-config=nope"], "autoscaler run: --cloud-provider=fake: --cloud-config: no fake cloud",
                 id="cloud"),
])
def test_start_up_failures_are_one_line_and_exit_2(
        api: tuple[FakeAPIServer, FakeCloud, list[str]], tmp_path: Path, flags: list[str], message: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    _, _, base = api
    unreachable = tmp_path / "unreachable"
    unreachable.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "x",
        "clusters": [{"name": "x", "cluster": {"server": f"http://127.0.0.1:{free_port()}"}}],
        "users": [{"name": "x", "user": {"token": "t"}}],
        "contexts": [{"name": "x", "context": {"cluster": "x", "user": "x"}}]}))
    flags = [f.format(unreachable=unreachable) for f in flags]
    started = time.monotonic()
    assert main(["run", *base, *flags, f"--address=127.0.0.1:{free_port()}", "--max-loops=1"]) == 2
    assert time.monotonic() - started < 10
    lines = capsys.readouterr().err.strip().splitlines()
    assert [line for line in lines if line.startswith("autoscaler run:")] == lines[-1:]
    assert lines[-1].startswith(message), lines
    assert "Traceback" not in "\n".join(lines)

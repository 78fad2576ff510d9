"""``serve``: the loop on its schedule, the HTTP endpoints, leadership and shutdown.

The cluster and cloud are the simulated world's; the endpoints are real HTTP on
loopback. Every run is bounded (``--max-loops`` or a stop event).
"""

from __future__ import annotations

import socket
import threading
import urllib.error
import urllib.request

import pytest

from app.cli import build_parser
from app.run.command import Live, StartupError, serve
from app.run.flags import RunSettings, settings_from_args
from app.run.leader import AlwaysLeader
from app.run.metrics import Metrics
from app.run.server import Endpoints, Health
from autoscaler.config import Options, options_from_args
from tests.app.run_helpers import free_port
from tests.emulator.worlds import make_world, nvme_group, nvme_node, rok_class, statefulset


def settings(*flags: str) -> tuple[RunSettings, Options]:
    args = build_parser().parse_args(["run", "--nodes=1:10:nvme", "--leader-elect=false", "--scan-interval=20ms",
                                      f"--address=127.0.0.1:{free_port()}", *flags])
    options = options_from_args(args)
    return settings_from_args(args, options.storage), options


def get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()
    except OSError:  # not listening yet
        return 0, ""


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(("monitoring", "elapsed", "status"), [
    pytest.param(False, 10_000.0, 200, id="standby-is-healthy"),
    pytest.param(True, 0.0, 200, id="just-started"),
    pytest.param(True, 900.0, 200, id="at-the-limit"),
    pytest.param(True, 901.0, 500, id="no-success-for-too-long"),
])
def test_health_check_follows_max_failing_time(monitoring: bool, elapsed: float, status: int) -> None:
    clock = _Clock()
    health = Health(900.0, clock)
    if monitoring:
        health.start_monitoring()
    clock.now += elapsed
    endpoints = Endpoints("127.0.0.1", 0, Metrics(), health)
    endpoints.start()
    try:
        code, body = get(endpoints.port, "/health-check")
        assert code == status, body
        assert get(endpoints.port, "/nothing")[0] == 404
    finally:
        endpoints.close()


@pytest.mark.parametrize(("sent", "status"), [
    pytest.param(b"GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n", 400, id="negative-length"),
    pytest.param(b"GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n", 400, id="bad-length"),
    pytest.param(b"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}", 405, id="post"),
    pytest.param(b"GET /health-check HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                 b"400000\r\n", 200, id="a-body-is-never-read"),
])
def test_endpoints_refuse_bad_requests_with_one_answer(sent: bytes, status: int,
                                                        caplog: pytest.LogCaptureFixture) -> None:
    """The endpoints share the scheduling servers' transport (aiohttp with limits): a bad request
    gets one answer and at most one log line, never a traceback."""
    from tests.scheduling.wire import exchange, statuses

    endpoints = Endpoints("127.0.0.1", 0, Metrics(), Health(900.0))
    endpoints.start()
    try:
        answer = exchange(endpoints.port, sent)
    finally:
        endpoints.close()
    assert statuses(answer)[:1] == [status], answer[:200]
    assert all(r.exc_info is None for r in caplog.records)


def test_serve_runs_the_loops_and_serves_metrics() -> None:
    world = make_world(rok_class(), nvme_group(min_size=1), nvme_node("nvme-1", free="300Gi"),
                       statefulset("kafka", 4, "400Gi"))
    world.advance(world.clock.now)
    run_settings, options = settings()
    closed: list[bool] = []
    stop = threading.Event()
    result: list[int] = []
    thread = threading.Thread(target=lambda: result.append(
        serve(run_settings, options, Live(world.cluster, AlwaysLeader(), lambda: closed.append(True)),
              world.cloud, stop)))
    thread.start()
    try:
        port = run_settings.address[1]
        for _ in range(200):
            code, body = get(port, "/metrics")
            if 'cluster_autoscaler_scaled_up_nodes_total{dra_drivers="",gpu_name="",gpu_resource_name=""} 2.0' in body:
                break
            stop.wait(0.02)
        assert code == 200
        assert 'cluster_autoscaler_scaled_up_nodes_total{dra_drivers="",gpu_name="",gpu_resource_name=""} 2.0' in body
        assert "storage_autoscaler_leader 1.0" in body
        assert get(port, "/health-check")[0] == 200
    finally:
        stop.set()
        thread.join(timeout=10)
    assert result == [0]
    assert closed == [True]
    assert world.cloud.group("nvme").target_size() == 3
    assert world.cluster.statuses[0].text.startswith("time:")
    assert "autoscalerStatus: Initializing" in world.cluster.statuses[0].text


class _Flaky:
    """Leader for the first ``terms`` checks, then not (the lease was taken by another replica)."""

    def __init__(self, checks: int) -> None:
        self.checks = checks
        self.stopped = False

    def start(self) -> None:
        return None

    def is_leader(self) -> bool:
        self.checks -= 1
        return self.checks >= 0

    def stop(self) -> None:
        self.stopped = True


def test_a_standby_never_acts_and_max_loops_bounds_the_run() -> None:
    world = make_world(rok_class(), nvme_group(min_size=1), nvme_node("nvme-1", free="300Gi"),
                       statefulset("kafka", 4, "400Gi"))
    world.advance(world.clock.now)
    run_settings, options = settings("--max-loops=2", "--leader-elect-retry-period=10ms")
    leadership = _Flaky(0)
    stop = threading.Event()
    timer = threading.Timer(0.3, stop.set)
    timer.start()
    try:
        assert serve(run_settings, options, Live(world.cluster, leadership, lambda: None), world.cloud, stop) == 0
    finally:
        timer.cancel()
    assert leadership.stopped
    assert world.cloud.group("nvme").target_size() == 1
    assert [s for s in world.cluster.statuses if "Running" in s.text] == []


def test_max_loops_ends_the_run() -> None:
    world = make_world(rok_class(), nvme_group(min_size=1), nvme_node("nvme-1"))
    run_settings, options = settings("--max-loops=3")
    assert serve(run_settings, options, Live(world.cluster, AlwaysLeader(), lambda: None), world.cloud) == 0
    assert len([s for s in world.cluster.statuses if "Running" in s.text]) == 3


def test_a_busy_address_is_one_line_at_start_up() -> None:
    world = make_world(rok_class(), nvme_group(min_size=1), nvme_node("nvme-1"))
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        run_settings, options = settings(f"--address=127.0.0.1:{busy.getsockname()[1]}", "--max-loops=1")
        closed: list[bool] = []
        with pytest.raises(StartupError, match=r"--address: cannot listen on 127\.0\.0\.1:\d+"):
            serve(run_settings, options, Live(world.cluster, AlwaysLeader(), lambda: closed.append(True)),
                  world.cloud)
    assert closed == [True]


@pytest.mark.parametrize(("idle", "healthy"), [
    pytest.param(600.0, True, id="at-the-limit"),
    pytest.param(601.0, False, id="no-loop-started-for-too-long"),
])
def test_health_check_follows_max_inactivity(idle: float, healthy: bool) -> None:
    clock = _Clock()
    health = Health(3600.0, clock, max_inactivity_seconds=600.0)
    health.start_monitoring()
    clock.now += idle
    ok, reason = health.check()
    assert ok is healthy
    assert healthy or "--max-inactivity=600s" in reason

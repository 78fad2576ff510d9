"""``autoscaler run`` never loses a node's data: the live loop over HTTP, as an operator runs it.

``general-1`` is empty and unneeded, but data still lives on it: a bound Rok volume
pinned to it that no driver unpins (no guard pod runs there either), or a volume the
converter refuses (its capacity is not a quantity). Either way the node must stay:
tainted and then untainted with ``ScaleDownFailed`` naming the volume, or never chosen,
with the status ConfigMap naming the unreadable object and a gauge counting it.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from app.cli import main
from cloudproviders.config import PROVIDERS
from kube.names import CA_TO_BE_DELETED_TAINT
from tests.app.fakecloud import CLOUDS, FakeCloud, group_node
from tests.app.run_helpers import free_port
from tests.factories import pod_json, pv_json, pvc_json, storage_class_json
from tests.fakeapi import FakeAPIServer
from tests.fakeapi.resources import resource_for

Json = dict[str, Any]


def _pinned_rok_volume() -> list[Json]:
    return [pvc_json("data", "10Gi", "rok", volume="data-pv"),
            pv_json("data-pv", "10Gi", "rok", hosts=["general-1"], claim=("default", "data"),
                    driver="rok.arrikto.com")]


def _unreadable_volume() -> list[Json]:
    bad = pv_json("odd-pv", "10Gi", "local-storage", hosts=["general-1"], claim=("default", "odd"), driver="local")
    bad["spec"]["capacity"]["storage"] = "a lot"
    return [pvc_json("odd", "10Gi", "local-storage", volume="odd-pv"), bad]


@pytest.fixture
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[FakeAPIServer, FakeCloud, list[str]]]:
    monkeypatch.setitem(PROVIDERS, "fake", "tests.app.fakecloud")
    with FakeAPIServer(bookmark_seconds=0.1) as server:
        server.state.put_all([
            storage_class_json("rok", "rok.arrikto.com"),
            storage_class_json("local-storage", "kubernetes.io/no-provisioner"),
            group_node("general-0", "general"), group_node("general-1", "general"),
            pod_json("busy", "2", "1Gi", "general-0", pending=False),
        ])
        cloud = FakeCloud(server.state)
        CLOUDS["safety"] = cloud
        kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")
        flags = [f"--kubeconfig={kubeconfig}", "--cloud-provider=fake", "--cloud-config=safety",
                 "--nodes=1:10:general", "--kube-client-qps=1000", "--kube-client-burst=1000",
                 "--scan-interval=100ms", "--scale-down-unneeded-time=0s", "--scale-down-delay-after-add=0s",
                 "--leader-elect-lease-duration=3s", "--leader-elect-renew-deadline=2s",
                 "--leader-elect-retry-period=50ms", "--cache-sync-timeout=10s", f"--address=127.0.0.1:{free_port()}"]
        try:
            yield server, cloud, flags
        finally:
            del CLOUDS["safety"]


def _events(server: FakeAPIServer) -> list[Json]:
    _, items = server.state.list_json(resource_for("Event", "v1"), None, {})
    return [json.loads(item) for item in items]


def _tainted(server: FakeAPIServer, node: str) -> bool:
    return any(t.get("key") == CA_TO_BE_DELETED_TAINT
               for t in server.state.get("Node", node)["spec"].get("taints") or [])


def test_a_pinned_volume_without_a_guard_keeps_its_node_and_the_taint_goes_after_the_wait(
        run: tuple[FakeAPIServer, FakeCloud, list[str]]) -> None:
    server, cloud, flags = run
    server.state.put_all(_pinned_rok_volume())
    # A fast --storage-unpin-throughput keeps the drain deadline at --max-pod-eviction-time.
    assert main(["run", *flags, "--max-pod-eviction-time=1s", "--storage-unpin-throughput=1Pi", "--max-loops=25"]) == 0
    assert cloud.groups["general"].deleted == [], "the volume was never unpinned"
    assert "general-1" in server.state.names("Node")
    assert not _tainted(server, "general-1"), "the taint is removed after the wait"
    failed = [e["message"] for e in _events(server)
              if e["reason"] == "ScaleDownFailed" and e["involvedObject"]["name"] == "general-1"]
    assert failed and "data-pv" in failed[0], failed
    assert "not deleted within --max-pod-eviction-time" in failed[0]


def test_the_node_goes_once_the_driver_unpins_the_volume(run: tuple[FakeAPIServer, FakeCloud, list[str]]) -> None:
    """The same cluster after the driver unpinned ``data-pv`` (no node affinity): the node goes."""
    server, cloud, flags = run
    claim, volume = _pinned_rok_volume()
    del volume["spec"]["nodeAffinity"]
    server.state.put_all([claim, volume])
    assert main(["run", *flags, "--max-loops=5"]) == 0
    assert cloud.groups["general"].deleted == ["general-1"]


def test_a_volume_the_converter_refuses_keeps_its_node_and_is_named(
        run: tuple[FakeAPIServer, FakeCloud, list[str]]) -> None:
    server, cloud, flags = run
    server.state.put_all(_unreadable_volume())
    port = int(flags[-1].rsplit(":", 1)[1])
    want = 'storage_autoscaler_unconvertible_objects{kind="PersistentVolume"} 1.0'
    seen = threading.Event()

    def scrape() -> None:
        deadline = time.monotonic() + 20
        while not seen.is_set() and time.monotonic() < deadline:
            with contextlib.suppress(OSError), urllib.request.urlopen(
                    f"http://127.0.0.1:{port}/metrics", timeout=2) as response:
                if want in response.read().decode():
                    seen.set()
            time.sleep(0.02)

    found: list[bool] = []

    def scrape_and_record() -> None:
        scrape()
        found.append(seen.is_set())

    scraper = threading.Thread(target=scrape_and_record, daemon=True)
    scraper.start()
    assert main(["run", *flags, "--max-loops=8"]) == 0
    scraper.join(timeout=25)
    assert found == [True], "the gauge counted the refused PersistentVolume on /metrics"
    assert cloud.groups["general"].deleted == []
    assert not _tainted(server, "general-1"), "never chosen"
    status = yaml.safe_load(server.state.get("ConfigMap", "cluster-autoscaler-status", "kube-system")["data"]["status"])
    assert status["message"].startswith("objects that could not be read: PersistentVolume/odd-pv keeps general-1: ")
    assert "spec.capacity" in status["message"]


def test_the_unconvertible_gauge_counts_by_kind() -> None:
    from app.run.metrics import Metrics

    metrics = Metrics()
    metrics.set_unconvertible({"PersistentVolume": 2, "Pod": 1})
    metrics.set_unconvertible({"PersistentVolume": 1})
    read = metrics.registry.get_sample_value
    assert read("storage_autoscaler_unconvertible_objects", {"kind": "PersistentVolume"}) == 1.0
    assert read("storage_autoscaler_unconvertible_objects", {"kind": "Pod"}) == 0.0, "gone: back to 0"


def test_the_unpin_throughput_of_the_failed_drains_reaches_the_gauge_and_the_status(
        run: tuple[FakeAPIServer, FakeCloud, list[str]]) -> None:
    """The drain of ``general-1`` fails at its deadline every time (nothing unpins ``data-pv``):
    each failure says unpinning runs slower than 10Gi over the time it was given, so
    ``storage_autoscaler_unpin_bytes_per_second`` and the status drop below the flag (1Pi/s)."""
    server, _, flags = run
    server.state.put_all(_pinned_rok_volume())
    port = int(flags[-1].rsplit(":", 1)[1])
    prior = 2.0**50
    seen: list[float] = []

    def scrape() -> None:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not (seen and 0 < seen[-1] < prior):
            with contextlib.suppress(OSError), urllib.request.urlopen(
                    f"http://127.0.0.1:{port}/metrics", timeout=2) as response:
                for line in response.read().decode().splitlines():
                    if line.startswith("storage_autoscaler_unpin_bytes_per_second "):
                        seen.append(float(line.split()[1]))
            time.sleep(0.02)

    scraper = threading.Thread(target=scrape, daemon=True)
    scraper.start()
    assert main(["run", *flags, "--max-pod-eviction-time=1s", "--storage-unpin-throughput=1Pi",
                 "--max-loops=25"]) == 0
    scraper.join(timeout=25)
    assert prior in seen, "the flag before any drain"
    assert 0 < seen[-1] <= 10 * 2**30, "at most 10Gi over the 1s the first drain was given"
    status = yaml.safe_load(server.state.get("ConfigMap", "cluster-autoscaler-status", "kube-system")["data"]["status"])
    throughput = status["clusterWide"]["scaleDown"]["unpinThroughput"]
    assert throughput["source"] == "observed" and throughput["observedDrains"] >= 1
    assert throughput["bytesPerSecond"] <= 10 * 2**30

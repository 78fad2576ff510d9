"""``explain`` with no snapshot: the live cluster through the adapter, read only, at the wire."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.cli import main
from cloudproviders.config import PROVIDERS
from tests.app.fakecloud import CLOUDS, FakeCloud
from tests.app.test_run_e2e import _cluster
from tests.fakeapi import FakeAPIServer


@pytest.fixture
def live(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[FakeAPIServer, list[str]]]:
    monkeypatch.setitem(PROVIDERS, "fake", "tests.app.fakecloud")
    with FakeAPIServer(bookmark_seconds=0.1) as server:
        server.state.put_all(_cluster())
        CLOUDS["explain"] = FakeCloud(server.state)
        kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")
        flags = [f"--kubeconfig={kubeconfig}", "--cloud-provider=fake", "--cloud-config=explain",
                 "--nodes=1:10:nvme", "--nodes=0:10:general", "--cache-sync-timeout=10s",
                 "--kube-client-qps=1000", "--kube-client-burst=1000"]
        try:
            yield server, flags
        finally:
            del CLOUDS["explain"]


def test_live_explain_answers_from_the_cluster_and_changes_nothing(
        live: tuple[FakeAPIServer, list[str]], capsys: pytest.CaptureFixture[str]) -> None:
    server, flags = live
    assert main(["explain", "pods", "node/general-1", "node/general-2", *flags]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert {p["verdict"] for p in doc["pods"]} == {"TriggersScaleUp"}
    assert {p["nodeGroup"] for p in doc["pods"]} == {"nvme"}
    nodes = {n["node"]: (n["verdict"], n["reason"]) for n in doc["nodes"]}
    assert nodes["general-1"][0] in ("Removable", "Unneeded", "NotCandidate")
    assert nodes["general-2"][0] in ("Unremovable", "NotCandidate")
    assert server.requests("GET"), "it read the cluster"
    assert server.mutations == [], "read only"


def test_live_explain_without_an_api_server_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(PROVIDERS, "fake", "tests.app.fakecloud")
    CLOUDS["none"] = FakeCloud(None)  # type: ignore[arg-type]
    try:
        code = main(["explain", "pods", f"--kubeconfig={tmp_path / 'missing'}", "--cloud-provider=fake",
                     "--cloud-config=none", "--nodes=0:3:g"])
    finally:
        del CLOUDS["none"]
    err = capsys.readouterr().err
    assert code == 2 and "--kubeconfig" in err and err.count("\n") == 1, err

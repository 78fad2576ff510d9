"""``run --dry-run`` as a shadow beside a running Cluster Autoscaler, at the wire.

CA holds ``kube-system/cluster-autoscaler`` and writes ``cluster-autoscaler-status``; the
shadow must never touch either (not even read them), must take its own Lease and write
its own status, and must name the idle node it would remove once it has been unneeded
for ``--scale-down-unneeded-time``, which needs the unneeded timers kept between loops.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.cli import main
from cloudproviders.config import PROVIDERS
from tests.app.fakecloud import CLOUDS, FakeCloud, group_node
from tests.app.run_helpers import free_port
from tests.factories import pod_json
from tests.fakeapi import FakeAPIServer
from tests.fakeapi.resources import resource_for

Json = dict[str, Any]

CA_LEASE: Json = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                  "metadata": {"name": "cluster-autoscaler", "namespace": "kube-system"},
                  "spec": {"holderIdentity": "cluster-autoscaler-7d9f_1", "leaseDurationSeconds": 15,
                           "renewTime": "2099-01-01T00:00:00.000000Z", "acquireTime": "2099-01-01T00:00:00.000000Z"}}
CA_STATUS: Json = {"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "cluster-autoscaler-status", "namespace": "kube-system"},
                   "data": {"status": "autoscalerStatus: Running\n"}}


@pytest.fixture
def shadow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[FakeAPIServer, FakeCloud, list[str]]]:
    monkeypatch.setitem(PROVIDERS, "fake", "tests.app.fakecloud")
    with FakeAPIServer(bookmark_seconds=0.1) as server:
        server.state.put_all([copy.deepcopy(CA_LEASE), copy.deepcopy(CA_STATUS), group_node("busy-1", "general"),
                              group_node("idle-1", "general"), pod_json("work", "6", "8Gi", "busy-1")])
        cloud = FakeCloud(server.state)
        CLOUDS["shadow"] = cloud
        kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")
        flags = [f"--kubeconfig={kubeconfig}", "--cloud-provider=fake", "--cloud-config=shadow",
                 "--nodes=1:10:general", "--kube-client-qps=1000", "--kube-client-burst=1000",
                 "--scan-interval=100ms", "--scale-down-delay-after-add=0s", "--leader-elect-lease-duration=3s",
                 "--leader-elect-renew-deadline=2s", "--leader-elect-retry-period=50ms", "--cache-sync-timeout=10s",
                 f"--address=127.0.0.1:{free_port()}", "--dry-run"]
        try:
            yield server, cloud, flags
        finally:
            del CLOUDS["shadow"]


def test_a_shadow_never_touches_cas_lease_or_status(shadow: tuple[FakeAPIServer, FakeCloud, list[str]]) -> None:
    server, cloud, flags = shadow
    before = [copy.deepcopy(server.state.get(kind, name, "kube-system"))
              for kind, name in (("Lease", "cluster-autoscaler"), ("ConfigMap", "cluster-autoscaler-status"))]
    assert main(["run", *flags, "--scale-down-unneeded-time=0s", "--max-loops=3"]) == 0
    touched = [f"{r.method} {r.path}" for r in server.requests()
               if r.path.endswith(("/leases/cluster-autoscaler", "/configmaps/cluster-autoscaler-status"))
               or r.query.get("fieldSelector") in ("metadata.name=cluster-autoscaler",
                                                   "metadata.name=cluster-autoscaler-status")]
    assert touched == []
    after = [server.state.get(kind, name, "kube-system")
             for kind, name in (("Lease", "cluster-autoscaler"), ("ConfigMap", "cluster-autoscaler-status"))]
    assert after == before
    shadow_lease = server.state.get("Lease", "storage-autoscaler-shadow", "kube-system")
    assert shadow_lease["spec"]["holderIdentity"] == "", "its own lease, released at shutdown"
    assert "status" in server.state.get("ConfigMap", "storage-autoscaler-shadow-status", "kube-system")["data"]
    assert cloud.groups["general"].deleted == []
    _, items = server.state.list_json(resource_for("Event", "v1"), None, {})
    events = [json.loads(item) for item in items]
    on_config_maps = {(e["involvedObject"]["name"], e["reason"]) for e in events
                      if e["involvedObject"]["kind"] == "ConfigMap"}
    assert on_config_maps == {("storage-autoscaler-shadow-status", "ScaleDownEmpty")}, "never on CA's ConfigMap"
    assert all(e["message"].startswith("(dry run) ") for e in events)


def test_a_shadow_names_the_idle_node_after_the_unneeded_time(
        shadow: tuple[FakeAPIServer, FakeCloud, list[str]], capsys: pytest.CaptureFixture[str]) -> None:
    server, cloud, flags = shadow
    assert main(["run", *flags, "--scale-down-unneeded-time=300ms", "--max-loops=8"]) == 0
    lines = [line for line in capsys.readouterr().err.splitlines() if "dry run, loop" in line]
    assert len(lines) == 8, "one would-do line per loop"
    assert "node idle-1 unneeded for 0s, removable in " in lines[0]
    assert "would remove" not in lines[0], "not before --scale-down-unneeded-time"
    assert any("would remove node idle-1 of general (empty, 0 pod(s) to move)" in line for line in lines[3:])
    assert not any("busy-1" in line for line in lines)
    assert cloud.groups["general"].deleted == []
    assert server.state.names("Node") == ["busy-1", "idle-1"]


@pytest.mark.parametrize(("extra", "lease", "status"), [
    pytest.param([], "storage-autoscaler-shadow", "storage-autoscaler-shadow-status", id="shadow-defaults"),
    pytest.param(["--leader-elect-resource-name=canary", "--status-config-map-name=canary-status"], "canary",
                 "canary-status", id="overridden"),
    pytest.param(["--lease-resource-name=canary"], "canary", "storage-autoscaler-shadow-status",
                 id="older-cas-flag-name"),
])
def test_shadow_names(extra: list[str], lease: str, status: str) -> None:
    from app.cli import build_parser
    from app.run.flags import settings_from_args
    from autoscaler.config import options_from_args

    args = build_parser().parse_args(["run", "--nodes=1:2:ng", "--dry-run", *extra])
    settings = settings_from_args(args, options_from_args(args).storage)
    assert (settings.leader.resource_name, settings.status_config_map_name) == (lease, status)

"""``run``'s flags: CA's names and defaults, and one clear line with exit 2 for each bad one."""

from __future__ import annotations

import pytest

from app.cli import build_parser, main
from app.run.flags import parse_address, settings_from_args
from app.run.status import NodeView, health_ok
from autoscaler.config import options_from_args


def test_defaults_are_cas() -> None:
    args = build_parser().parse_args(["run", "--nodes=1:10:ng"])
    s = settings_from_args(args, options_from_args(args).storage)
    assert (s.kubeconfig, s.namespace, s.address) == ("", "kube-system", ("0.0.0.0", 8085))
    assert (s.leader.enabled, s.leader.lease_duration, s.leader.renew_deadline, s.leader.retry_period) == (
        True, 15.0, 10.0, 2.0)
    assert (s.leader.resource_name, s.lease_namespace) == ("cluster-autoscaler", "kube-system")
    assert (s.write_status_configmap, s.status_config_map_name) == (True, "cluster-autoscaler-status")
    assert (s.kube_client_qps, s.kube_client_burst, s.max_failing_seconds) == (5.0, 10, 900.0)
    assert (s.dry_run, s.max_loops, s.cloud_provider) == (False, 0, "gce")
    assert s.provider.static_groups[0].name == "ng"


def test_max_loops_is_hidden_from_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--help"]) == 0
    out = capsys.readouterr().out
    assert "--leader-elect-renew-deadline" in out
    assert "--dry-run" in out
    assert "--max-loops" not in out


@pytest.mark.parametrize(("flags", "message"), [
    pytest.param(["--nodes=1:2:ng", "--address=8085"], "--address: '8085' is not HOST:PORT or :PORT", id="address"),
    pytest.param(["--nodes=1:2:ng", "--address=:99999"], "--address: ':99999' is not HOST:PORT", id="address-port"),
    pytest.param(["--nodes=1:x:ng"], "--nodes: '1:x:ng': MIN and MAX must be integers", id="nodes"),
    pytest.param(["--nodes=1:2:ng", "--nodes=0:3:ng"], "--nodes: group 'ng' given twice", id="nodes-twice"),
    pytest.param([], "no node groups: give --nodes=MIN:MAX:NAME", id="no-groups"),
    pytest.param(["--nodes=1:2:ng", "--leader-elect-renew-deadline=20s"],
                 "--leader-elect-lease-duration must be greater than --leader-elect-renew-deadline", id="lease"),
    pytest.param(["--nodes=1:2:ng", "--leader-elect-retry-period=10s"],
                 "--leader-elect-renew-deadline must be greater than --leader-elect-retry-period", id="retry"),
    pytest.param(["--nodes=1:2:ng", "--kube-client-qps=fast"], "argument --kube-client-qps: 'fast' is not a number",
                 id="qps"),
    pytest.param(["--nodes=1:2:ng", "--kube-client-burst=0"], "argument --kube-client-burst: 0 is not positive",
                 id="burst"),
    pytest.param(["--nodes=1:2:ng", "--max-failing-time=0s"], "--max-failing-time: must be positive", id="failing"),
    pytest.param(["--nodes=1:2:ng", "--scan-interval=0s"], "--scan-interval: must be positive", id="scan"),
    pytest.param(["--nodes=1:2:ng", "--leader-elect=maybe"], "'maybe' is not a boolean", id="bool"),
    pytest.param(["--nodes=1:2:ng", "--cloud-provider=openstack"],
                 "--cloud-provider: 'openstack' is not one of aws, azure, gce", id="provider"),
    pytest.param(["--nodes=1:2:ng", "--logging-format=xml"], "argument --logging-format: invalid choice",
                 id="log-format"),
])
def test_bad_flags_are_one_line_and_exit_2(flags: list[str], message: str,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", *flags]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("autoscaler run: ")
    assert message in lines[0]


@pytest.mark.parametrize(("text", "expected"), [
    pytest.param(":8085", ("0.0.0.0", 8085), id="all-interfaces"),
    pytest.param("127.0.0.1:9000", ("127.0.0.1", 9000), id="ipv4"),
    pytest.param("[::1]:9000", ("::1", 9000), id="ipv6"),
    pytest.param("localhost:0", ("localhost", 0), id="any-port"),
])
def test_address(text: str, expected: tuple[str, int]) -> None:
    assert parse_address(text) == expected


@pytest.mark.parametrize(("flags", "unready", "healthy"), [
    pytest.param([], 3, True, id="cas-defaults-allow-3-of-4"),
    pytest.param(["--ok-total-unready-count=0", "--max-total-unready-percentage=50"], 2, True, id="half"),
    pytest.param(["--ok-total-unready-count=0", "--max-total-unready-percentage=20"], 1, False, id="strict"),
])
def test_health_rule_flags(flags: list[str], unready: int, healthy: bool) -> None:
    args = build_parser().parse_args(["run", "--nodes=1:10:ng", *flags])
    rule = settings_from_args(args, options_from_args(args).storage).health
    nodes = [NodeView(f"n{i}", "ng", "Unready" if i < unready else "Ready") for i in range(4)]
    assert health_ok(nodes, rule) is healthy

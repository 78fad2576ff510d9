"""The flag tables against upstream CA's flag list, the parser, ``--help`` and ``docs/flags.md``."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

import pytest

from app.cli import build_parser, main
from app.flagdocs import DOCS_PATH, flags_page
from app.run.flags import settings_from_args
from app.run.flagtable import RUN_FLAGS
from autoscaler.config import Options, options_from_args
from autoscaler.flagspec import Flag, Kind, go_duration
from autoscaler.flagtable import DECISION_FLAGS
from tests.app.ca_flags import CA_FLAGS

TABLE: dict[str, Flag] = {f.name: f for f in (*DECISION_FLAGS, *RUN_FLAGS)}
#: Values for flags whose default would not exercise the parser (empty lists, empty strings).
_SAMPLES = {"nodes": "1:2:ng", "node-group-auto-discovery": "asg:tag=k8s.io/cluster-autoscaler/enabled",
            "gpu-total": "nvidia-tesla-t4:0:4", "vmodule": "loop=4", "leader-elect-resource-name": "my-lease",
            "status-config-map-name": "my-status", "leader-elect-resource-namespace": "ops",
            "cloud-provider": "gce", "log-file": "", "log-dir": ""}


def _plain(shown: str) -> str:
    """A default as the FAQ or our table prints it, with Go's zero values spelled one way."""
    text = shown.strip('"')
    return "" if text in ("", "0", "false", "[]", "0s") else text


def _arg(flag: Flag) -> list[str]:
    if flag.kind is Kind.BOOL:
        return [f"--{flag.name}"]
    value = _SAMPLES.get(flag.name)
    if value is None:
        value = "x" if flag.kind is Kind.LIST else flag.shown_default().strip('"')
        if flag.parse is not str and value == "":
            value = "0"
    return [f"--{flag.name}={value}"]


def test_every_ca_flag_is_in_the_table_once() -> None:
    names = [f.name for f in (*DECISION_FLAGS, *RUN_FLAGS)]
    assert len(names) == len(set(names))
    assert sorted(set(CA_FLAGS) - set(names)) == []
    assert sorted(f.name for f in TABLE.values() if f.name not in CA_FLAGS and not f.ours) == []
    assert len(CA_FLAGS) == 158


def test_ca_flags_keep_cas_defaults() -> None:
    differ = {name: (default, TABLE[name].shown_default()) for name, default in CA_FLAGS.items()
              if _plain(default) != _plain(TABLE[name].shown_default())}
    assert differ == {}


def test_every_flag_is_accepted_by_run_at_once() -> None:
    argv = ["run"] + [a for f in TABLE.values() if not f.hidden for a in _arg(f)]
    args = build_parser().parse_args(argv)
    options = options_from_args(args)
    settings = settings_from_args(args, options.storage)
    assert settings.leader.resource_name == "my-lease"
    assert settings.logging.vmodule == (("loop", 4),)


def test_table_defaults_are_the_options_defaults() -> None:
    args = build_parser().parse_args(["plan", "snapshot.yaml"])
    assert options_from_args(args) == Options()


@pytest.mark.parametrize("argv", [
    pytest.param(["--scale-down-unneeded-time=5m", "--balance-similar-node-groups", "--expander=price"],
                 id="equals"),
    pytest.param(["--scale-down-unneeded-time", "5m", "--balance-similar-node-groups", "--expander", "price"],
                 id="separate"),
])
def test_go_flag_forms(argv: list[str]) -> None:
    options = options_from_args(build_parser().parse_args(["run", "--nodes=1:2:ng", *argv]))
    assert options.scale_down.unneeded_seconds == 300.0
    assert options.scale_up.balance_similar is True
    assert options.scale_up.expanders == ("price",)


def test_no_abbreviations(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--nodes=1:2:ng", "--scale-down-unneeded=5m"]) == 2
    assert "unrecognized arguments: --scale-down-unneeded=5m" in capsys.readouterr().err


def test_startup_and_status_taints_join_ignore_taint() -> None:
    args = build_parser().parse_args(["plan", "s.yaml", "--ignore-taint=a", "--startup-taint=b", "--status-taint=c"])
    assert options_from_args(args).scale_up.ignore_taints == ("a", "b", "c")


def test_the_official_charts_logging_args_map_onto_logging() -> None:
    args = build_parser().parse_args(["run", "--nodes=1:2:ng", "--logtostderr", "--stderrthreshold=info", "--v=4"])
    logs = settings_from_args(args, options_from_args(args).storage).logging
    assert (logs.to_stderr, logs.stderr_threshold, logs.verbosity) == (True, logging.INFO, 4)


def test_help_shows_every_flag_with_its_default(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--help"]) == 0
    out = "".join(capsys.readouterr().out.split())  # argparse wraps lines, at hyphens too
    for flag in TABLE.values():
        if flag.hidden:
            assert f"--{flag.name}" not in out
            continue
        assert "".join(flag.help_text().replace("%%", "%").split()) in out, flag.name


def test_ignored_flags_warn_once_each_at_start_up(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    argv = ["run", "--nodes=1:2:ng", f"--kubeconfig={tmp_path / 'missing'}", "--profiling",
            "--unremovable-node-recheck-timeout=7m", "--enable-provisioning-requests=true", "--v=2"]
    assert main(argv) == 2
    err = capsys.readouterr().err.splitlines()
    warned = [line for line in err if "has no effect here" in line]
    assert len(warned) == 3
    for name in ("profiling", "unremovable-node-recheck-timeout", "enable-provisioning-requests"):
        assert sum(f"flag --{name} " in line for line in warned) == 1


def test_a_bad_value_of_an_accepted_flag_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--nodes=1:2:ng", "--node-deletion-delay-timeout=soon"]) == 2
    assert "argument --node-deletion-delay-timeout: 'soon' is not a duration" in capsys.readouterr().err


@pytest.mark.parametrize(("seconds", "text"), [
    pytest.param(0.0, "0s", id="zero"), pytest.param(10.0, "10s", id="seconds"),
    pytest.param(600.0, "10m0s", id="minutes"), pytest.param(10800.0, "3h0m0s", id="hours"),
    pytest.param(0.5, "500ms", id="millis"), pytest.param(-1.0, "-1s", id="negative"),
])
def test_go_duration(seconds: float, text: str) -> None:
    assert go_duration(seconds) == text


def test_docs_flags_md_is_generated_from_the_tables() -> None:
    assert DOCS_PATH.read_text(encoding="utf-8") == flags_page(), "run: python -m app.flagdocs"


def test_parser_defaults_leave_accepted_flags_unset() -> None:
    args = build_parser().parse_args(["run", "--nodes=1:2:ng"])
    assert not any(hasattr(args, f.dest) for f in TABLE.values() if f.ignored)
    assert isinstance(args, argparse.Namespace)


def test_plan_warns_once_per_accepted_flag_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    snapshot = str(Path(__file__).resolve().parents[2] / "examples" / "storage-scale-up.yaml")
    assert main(["plan", snapshot, "--max-bulk-soft-taint-count=5", "--scale-down-candidates-pool-ratio=0.5"]) == 0
    captured = capsys.readouterr()
    assert captured.err.splitlines() == [
        "autoscaler plan: warning: flag --max-bulk-soft-taint-count has no effect here: no PreferNoSchedule soft "
        "taints are set on unneeded nodes",
        "autoscaler plan: warning: flag --scale-down-candidates-pool-ratio has no effect here: every node is a "
        "scale-down candidate in every loop"]
    assert captured.out.startswith("{")

"""Issue 8, item 19 for ``simulate``: a bad scenario is one line and exit 2; output paths are checked first."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.app.badinput import Run, assert_one_line_error

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "scenarios" / "storage-scale-up.yaml"


def _scenario(tmp_path: Path, old: str = "", new: str = "") -> str:
    text = EXAMPLE.read_text(encoding="utf-8")
    if old:
        assert old in text
        text = text.replace(old, new, 1)
    path = tmp_path / "scenario.yaml"
    path.write_text(text, encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(("old", "new", "parts"), [
    pytest.param("duration: 1h", "duration: [1h]", ("Scenario/storage-scale-up: spec.duration: ",),
                 id="duration-list"),
    pytest.param("provisioningDelay: 3m", "provisioningDelay: -3m", ("spec.provisioningDelay: ",),
                 id="negative-duration"),
    pytest.param("unpinSecondsPerGiB: 0.3", "unpinSecondsPerGiB: .nan", ("spec.unpinSecondsPerGiB: ",),
                 id="nan-rate"),
    pytest.param("kind: StorageClass", "kind: [StorageClass]", ("?/rok: kind: expected a string",),
                 id="kind-list"),
    pytest.param("metadata:\n  name: rok", "metadata: 5", ("StorageClass/?: metadata: expected a map",),
                 id="metadata-number"),
    pytest.param("metadata:\n  name: storage-scale-up", "metadata: {name: [x]}",
                 ("Scenario/?: metadata.name: expected a string",), id="scenario-name-list"),
    pytest.param("- at: 5m\n", "- at: 5m\n    create: [{kind: Pod, metadata: {name: x}, spec: {containers: "
                 "[{resources: {requests: {cpu: '-1'}}}]}}]\n",
                 ("spec.events[0].create", "Pod/x: spec.containers[0].resources.requests.cpu: "),
                 id="created-pod-negative-cpu"),
    pytest.param("apiVersion: autoscaler.storage.dev/v1alpha1\nkind: Scenario",
                 "apiVersion: autoscaler.storage.dev/v1alpha1\nkind: Scenario\nkind: Other",
                 ("invalid YAML at line", "duplicate key 'kind'"), id="duplicate-key"),
    pytest.param("duration: 1h", "duration: &a [*a]", ("alias refers to a node that contains it",),
                 id="recursive-alias"),
])
def test_bad_scenario(cli: Run, tmp_path: Path, old: str, new: str, parts: tuple[str, ...]) -> None:
    scenario = _scenario(tmp_path, old, new)
    assert_one_line_error(cli(["simulate", scenario, "--quiet"]), f"autoscaler simulate: {scenario}: ", *parts)


@pytest.mark.parametrize(("flag", "target", "parts"), [
    pytest.param("--report", "missing-dir/report.json", ("--report", "does not exist"), id="report-no-dir"),
    pytest.param("--report", ".", ("--report", "is a directory"), id="report-directory"),
    pytest.param("--chart", "missing-dir/chart.png", ("--chart", "does not exist"), id="chart-no-dir"),
    pytest.param("--chart", "chart.xyz", ("--chart", "unknown image format .xyz"), id="chart-format"),
])
def test_output_paths_are_checked_before_the_run(cli: Run, tmp_path: Path, flag: str, target: str,
                                                 parts: tuple[str, ...]) -> None:
    started = time.monotonic()
    result = cli(["simulate", _scenario(tmp_path), "--quiet", f"{flag}={tmp_path / target}"])
    assert_one_line_error(result, "autoscaler simulate: ", *parts)
    assert time.monotonic() - started < 5  # refused before the (much longer) run

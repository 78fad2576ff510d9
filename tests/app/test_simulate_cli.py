"""``simulate`` on the command line: flags that shape the run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.cli import main

SCENARIO = str(Path(__file__).resolve().parents[2] / "examples" / "scenarios" / "storage-scale-up.yaml")


@pytest.mark.parametrize(("flags", "step"), [
    pytest.param([], 10.0, id="scenario-scan-interval-by-default"),
    pytest.param(["--scan-interval=5m"], 300.0, id="flag-overrides-the-scenario"),
])
def test_scan_interval(tmp_path: Path, flags: list[str], step: float) -> None:
    report = tmp_path / "report.json"
    assert main(["simulate", SCENARIO, "--quiet", "--report", str(report), *flags]) == 0
    times = [p["time"] for p in json.loads(report.read_text())["timeline"]]
    assert times[1] - times[0] == step


DOWN = str(Path(__file__).resolve().parents[2] / "examples" / "scenarios" / "storage-scale-down.yaml")


def test_the_timeline_has_the_bytes_in_flight_and_the_chart_draws_them(tmp_path: Path) -> None:
    report, chart = tmp_path / "report.json", tmp_path / "chart.png"
    assert main(["simulate", DOWN, "--quiet", "--report", str(report), "--chart", str(chart)]) == 0
    timeline = json.loads(report.read_text())["timeline"]
    in_flight = [p["unpinBytesInFlight"] for p in timeline]
    assert in_flight[0] == 0, "nothing drains at the start"
    # Each nvme node drained holds 200Gi Cassandra volumes; none is left in flight at the end.
    assert max(in_flight) >= 200 * 2**30
    assert in_flight[-1] == 0
    png = chart.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    assert height == width, "four panels: as tall as wide (10x10 in)"

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

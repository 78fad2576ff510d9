"""``simulate`` refuses up front a run that would take hours (issue 16, item 9).

A duration / scan-interval ratio in the millions used to run silently for hours; the
refusal comes before any loop runs, says how long the run would take and names the
flags that change it.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.app.badinput import Run, assert_one_line_error

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "scenarios" / "storage-scale-up.yaml"


def _scenario(tmp_path: Path, duration: str, scan: str) -> str:
    text = EXAMPLE.read_text(encoding="utf-8")
    text = text.replace("duration: 1h", f"duration: {duration}", 1)
    text = text.replace("scanInterval: 10s", f"scanInterval: {scan}", 1)
    path = tmp_path / "scenario.yaml"
    path.write_text(text, encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(("duration", "scan", "flags", "parts"), [
    pytest.param("100000h", "1s", (), ("360,000,001 loops per run (1 run)", "at least 100.0 hours",
                                        "--max-simulated-loops"), id="ratio-in-the-hundreds-of-millions"),
    pytest.param("1h", "10s", ("--scan-interval=1ms",), ("3,600,000 loops", "--scan-interval"),
                 id="scan-interval-flag-counts"),
    pytest.param("2h", "1s", ("--max-simulated-loops=1000", "--compare"), ("7,201 loops per run (2 runs)",
                                                                            "more than the limit of 1,000"),
                 id="lowered-limit-and-compare"),
])
def test_refused_up_front(cli: Run, tmp_path: Path, *, duration: str, scan: str, flags: tuple[str, ...],
                          parts: tuple[str, ...]) -> None:
    started = time.perf_counter()
    result = cli(["simulate", _scenario(tmp_path, duration, scan), "--quiet", *flags])
    assert time.perf_counter() - started < 20, "refused before running"
    assert_one_line_error(result, "autoscaler simulate: --max-simulated-loops: ", *parts)


@pytest.mark.parametrize(("limit", "code"), [
    pytest.param(361, 0, id="at-the-limit-runs"),
    pytest.param(360, 2, id="one-over-is-refused"),
])
def test_the_limit_is_the_loop_count(cli: Run, tmp_path: Path, limit: int, code: int) -> None:
    """The shipped hour at 10 s is 361 loops."""
    result = cli(["simulate", _scenario(tmp_path, "1h", "10s"), "--quiet", f"--max-simulated-loops={limit}"])
    assert result[0] == code, result[2]

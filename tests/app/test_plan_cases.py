"""The plan contract's example cases (``examples/cases``), checked the way CI checks them.

Each case is a snapshot plus the decision it must give (``docs/plan-contract.md``);
``tools/check-plan-cases`` runs ``python -m autoscaler plan`` on each and compares.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_example_case_gives_its_expected_decision() -> None:
    cases_dir = ROOT / "examples" / "cases"
    command = [sys.executable, str(ROOT / "tools" / "check-plan-cases"), sys.executable, str(cases_dir)]
    done = subprocess.run(command, check=False, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    cases = len(list(cases_dir.glob("*.expect.json")))
    assert f"{cases} passed, 0 failed" in done.stdout.splitlines(), done.stdout

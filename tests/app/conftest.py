"""Fixtures of the command tests."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from app.cli import main
from tests.app.badinput import Run


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Run:
    """Run ``main`` in-process; returns (exit status, stdout, stderr)."""

    def run(argv: Sequence[str]) -> tuple[int, str, str]:
        try:
            code: Any = main(list(argv))
        except SystemExit as exc:
            code = exc.code
        out, err = capsys.readouterr()
        return int(code or 0), out, err

    return run

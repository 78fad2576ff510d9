"""``python -m app.flagdocs [PATH]``: write ``docs/flags.md`` from the flag tables.

The page is generated, never edited: ``tests/app/test_flag_table.py`` fails when it
differs from what the tables (``autoscaler.flagtable``, ``app.run.flagtable``) say.
"""

from __future__ import annotations

import sys
from pathlib import Path

from app.run.flagtable import RUN_FLAGS
from autoscaler.flagspec import markdown
from autoscaler.flagtable import DECISION_FLAGS

__all__ = ["DOCS_PATH", "flags_page"]

DOCS_PATH = Path(__file__).resolve().parents[1] / "docs" / "flags.md"


def flags_page() -> str:
    return markdown([("Decisions (plan, simulate and run)", DECISION_FLAGS),
                     ("run: API server, cloud, leader election, status, endpoints, logging", RUN_FLAGS)])


def main(argv: list[str]) -> int:
    path = Path(argv[0]) if argv else DOCS_PATH
    path.write_text(flags_page(), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

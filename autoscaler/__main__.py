"""``python -m autoscaler``: see ``autoscaler.cli``."""

from autoscaler.cli import main

raise SystemExit(main())

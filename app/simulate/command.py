"""``python -m autoscaler simulate SCENARIO [flags]``: run, summarize, report, chart, compare."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from typing import Any

from app.simulate.report import events_text, report, summary, summary_table
from app.simulate.runner import RunResult, run_scenario, stderr_progress
from autoscaler.config import Options
from emulator.scenario import load_scenario
from kube.convert import InputError

__all__ = ["simulate"]

EXIT_BAD_INPUT = 2


def simulate(args: argparse.Namespace, options: Options) -> int:
    try:
        scenario = load_scenario(args.scenario)
    except InputError as exc:
        sys.stderr.write(f"autoscaler simulate: {exc}\n")
        return EXIT_BAD_INPUT
    if args.scan_interval is not None:  # the flag, when given, overrides the scenario's scanInterval
        scenario = dataclasses.replace(scenario, scan_interval=options.scan_interval)
    variants = [("storage-aware" if options.storage_aware else "upstream", options)]
    if args.compare:
        variants = [("storage-aware", dataclasses.replace(options, storage_aware=True)),
                    ("upstream", dataclasses.replace(options, storage_aware=False))]
    runs: list[tuple[str, RunResult]] = []
    for label, opts in variants:
        if not args.quiet:
            stderr_progress(f"{scenario.name}: {label} (scan every {scenario.scan_interval:g}s, "
                            f"{scenario.duration / 3600:g}h simulated)")
        progress = None if args.quiet else stderr_progress
        runs.append((label, run_scenario(scenario, opts, progress=progress, seed=args.seed)))
    out = sys.stdout
    out.write(f"Scenario {scenario.name}\n\n")
    out.write(summary_table([(label, summary(run)) for label, run in runs]) + "\n")
    for label, run in runs:
        lines = events_text(run)
        if lines:
            out.write(f"\n{label}: scaling events\n" + "\n".join(lines) + "\n")
    if args.report:
        payload: dict[str, Any] = report(runs[0][1])
        if len(runs) > 1:
            payload["compare"] = {label: report(run) for label, run in runs}
        with open(args.report, "w", encoding="utf-8") as handle:
            json.dump(payload, handle, indent=1)
        out.write(f"\nreport written to {args.report}\n")
    if args.chart:
        from app.simulate.chart import write_chart

        write_chart(runs, args.chart, f"{scenario.name}")
        out.write(f"chart written to {args.chart}\n")
    return 0

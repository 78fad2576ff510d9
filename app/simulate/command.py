"""``python -m autoscaler simulate SCENARIO [flags]``: run, summarize, report, chart, compare (``--compare``:
storage-aware against upstream CA; ``--compare-order``: the two scale-down orders, both storage-aware)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from typing import Any

from app.gc import collector_paused
from app.simulate.report import events_text, report, summary, summary_table
from app.simulate.runner import RunResult, run_scenario, stderr_progress
from autoscaler.config import ConfigError, Options, ScaleDownOrder
from emulator.scenario import load_scenario
from kube.convert import InputError

__all__ = ["simulate"]

EXIT_BAD_INPUT = 2


def _check_output(path: str | None, flag: str) -> None:
    """Refuse, before a long run, an output path that cannot be written."""
    if path is None:
        return
    if not path or os.path.isdir(path):
        raise ConfigError(f"{flag}: {path!r} is a directory, not a file")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise ConfigError(f"{flag}: cannot write {path}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        raise ConfigError(f"{flag}: cannot write {path}: permission denied")


_CHART_FORMATS = ("png", "pdf", "svg", "svgz", "jpg", "jpeg", "eps", "ps", "tif", "tiff", "webp")


def simulate(args: argparse.Namespace, options: Options) -> int:
    _check_output(args.report, "--report")
    _check_output(args.chart, "--chart")
    if args.chart is not None:
        ext = os.path.splitext(args.chart)[1].lstrip(".").lower()
        if ext and ext not in _CHART_FORMATS:
            raise ConfigError(f"--chart: unknown image format .{ext} (one of {', '.join(_CHART_FORMATS)})")
    try:
        return _simulate(args, options)
    except InputError as exc:
        sys.stderr.write(f"autoscaler simulate: {exc}\n")
        return EXIT_BAD_INPUT


#: What one loop of a small simulated cluster costs at least (the shipped scenarios: ~1 ms).
SECONDS_PER_LOOP = 0.001


def check_loop_count(duration: float, scan_interval: float, variants: int, limit: int) -> None:
    """Refuse up front a run whose loop count would take hours: say how long, and which flags change it."""
    loops = int(duration // scan_interval) + 1
    if loops <= limit:
        return
    hours = loops * variants * SECONDS_PER_LOOP / 3600
    raise ConfigError(
        f"--max-simulated-loops: a duration of {duration:g}s at a scan interval of {scan_interval:g}s is "
        f"{loops:,} loops per run ({variants} run{'s' if variants > 1 else ''}), more than the limit of {limit:,}; "
        f"at ~{SECONDS_PER_LOOP * 1000:g} ms a loop that is at least {hours:,.1f} hours. Raise --scan-interval "
        f"(or the scenario's scanInterval), shorten the duration, or raise --max-simulated-loops")


def _variants(args: argparse.Namespace, options: Options) -> list[tuple[str, Options]]:
    """The runs to compare: one; storage-aware and upstream (``--compare``); or both scale-down orders."""
    if args.compare:
        return [("storage-aware", dataclasses.replace(options, storage_aware=True)),
                ("upstream", dataclasses.replace(options, storage_aware=False))]
    if args.compare_order:
        return [(order.value, dataclasses.replace(options, storage_aware=True,
                                                  scale_down=dataclasses.replace(options.scale_down, order=order)))
                for order in (ScaleDownOrder.DISRUPTION_COST, ScaleDownOrder.UPSTREAM)]
    return [("storage-aware" if options.storage_aware else "upstream", options)]


def _simulate(args: argparse.Namespace, options: Options) -> int:
    with collector_paused():  # the parsed file is one big acyclic tree (app/gc.py)
        scenario = load_scenario(args.scenario)
    if args.scan_interval is not None:  # the flag, when given, overrides the scenario's scanInterval
        scenario = dataclasses.replace(scenario, scan_interval=options.scan_interval)
    variants = _variants(args, options)
    check_loop_count(scenario.duration, scenario.scan_interval, len(variants), args.max_simulated_loops)
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
        try:
            with open(args.report, "w", encoding="utf-8") as handle:
                json.dump(payload, handle, indent=1)
        except OSError as exc:
            raise ConfigError(f"--report: cannot write {args.report}: {exc.strerror or exc}") from None
        out.write(f"\nreport written to {args.report}\n")
    if args.chart:
        from app.simulate.chart import write_chart

        try:
            write_chart(runs, args.chart, f"{scenario.name}")
        except (OSError, ValueError) as exc:
            raise ConfigError(f"--chart: cannot write {args.chart}: {exc}") from None
        out.write(f"chart written to {args.chart}\n")
    return 0

"""Phase breakdown of one ``plan`` run, in this process: ``python -m bench.phases FILE [PLAN FLAGS...]``.

Does what ``autoscaler plan FILE --output=json`` does, step by step, with a
``perf_counter`` around each step, and prints one JSON object of seconds on stdout.
``bench.run`` starts it in a fresh subprocess so that the measurement never inherits
another run's heap. No ``tracemalloc`` (it slows everything down several times); time
spent in the cyclic garbage collector is measured with ``gc.callbacks``, which costs
two ``perf_counter`` calls per collection.
"""

from __future__ import annotations

import datetime as dt
import gc
import json
import resource
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["NOW", "GcTimer", "measure_phases"]

#: The loop's clock for every benchmark run (``--now``), so that runs are comparable.
NOW = "2026-06-01T12:00:00Z"


class GcTimer:
    """Seconds and collections of the cyclic GC, via ``gc.callbacks``."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.collections = 0
        self._started: float | None = None
        self._callback: Callable[[str, dict[str, Any]], None] = self._on_gc

    def _on_gc(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        elif self._started is not None:
            self.seconds += time.perf_counter() - self._started
            self.collections += 1
            self._started = None

    def install(self) -> None:
        gc.callbacks.append(self._callback)

    def remove(self) -> None:
        if self._callback in gc.callbacks:
            gc.callbacks.remove(self._callback)

    def snapshot(self) -> tuple[float, int]:
        return self.seconds, self.collections


def _max_rss_kib() -> int:
    # Linux reports ru_maxrss in KiB.
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def measure_phases(path: str, flags: Sequence[str] = ()) -> dict[str, Any]:
    """Run ``plan`` on ``path`` once, timing each phase; returns seconds per phase and GC figures."""
    gc_timer = GcTimer()
    gc_timer.install()
    try:
        return _measure(path, flags, gc_timer)
    finally:
        gc_timer.remove()


def _measure(path: str, flags: Sequence[str], gc_timer: GcTimer) -> dict[str, Any]:
    seconds: dict[str, float] = {}
    gc_seconds: dict[str, float] = {}
    gc_counts: dict[str, int] = {}

    def record(name: str, start: float, gc_before: tuple[float, int]) -> None:
        seconds[name] = time.perf_counter() - start
        gc_after = gc_timer.snapshot()
        gc_seconds[name] = gc_after[0] - gc_before[0]
        gc_counts[name] = gc_after[1] - gc_before[1]

    start, gc_before = time.perf_counter(), gc_timer.snapshot()
    from app.cli import build_parser, load_without_collector
    from app.plan_output import dumps, to_json
    from autoscaler.config import options_from_args
    from autoscaler.runonce import run_once
    from cloudproviders.snapshot import SnapshotProvider

    args = build_parser().parse_args(["plan", path, "--output=json", f"--now={NOW}", *flags])
    options = options_from_args(args)
    now = dt.datetime.fromisoformat(NOW.replace("Z", "+00:00")).timestamp()
    record("imports", start, gc_before)

    start, gc_before = time.perf_counter(), gc_timer.snapshot()
    objects = load_without_collector(args.snapshots, options)  # as plan loads: the collector paused
    if options.priority_config_file is not None:
        with open(options.priority_config_file, encoding="utf-8") as handle:
            objects.priority_config = handle.read()
    record("load", start, gc_before)

    start, gc_before = time.perf_counter(), gc_timer.snapshot()
    provider = SnapshotProvider(objects.node_groups, objects.nodes)
    record("provider", start, gc_before)

    start, gc_before = time.perf_counter(), gc_timer.snapshot()
    decision = run_once(objects, provider, options, now, steady_state=True)
    record("run_once", start, gc_before)

    start, gc_before = time.perf_counter(), gc_timer.snapshot()
    text = dumps(to_json(decision))
    record("render", start, gc_before)

    rss_after_plan = _max_rss_kib()
    run_once_phases = {name: float(value) for name, value in decision.timings.items()}
    summary = {"scaleUp": decision.scale_up.result, "scaleDown": decision.scale_down.result,
               "outputBytes": len(text.encode("utf-8"))}
    del objects, provider, decision, text
    gc.collect()

    # The JSON parse alone, as load_snapshot does it (read, then json.loads with the GC paused),
    # so that "load" splits into parse and conversion. Measured after the plan, so it never
    # disturbs the plan's own phases.
    start = time.perf_counter()
    with open(path, encoding="utf-8") as handle:
        raw = handle.read()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        parsed = json.loads(raw)
    finally:
        if was_enabled:
            gc.enable()
    parse_seconds = time.perf_counter() - start
    del raw, parsed

    return {
        "seconds": seconds,
        "run_once_timings": run_once_phases,
        "json_parse_seconds": parse_seconds,
        "convert_seconds": max(0.0, seconds["load"] - parse_seconds),
        "total_seconds": sum(seconds.values()),
        "gc_seconds": gc_seconds,
        "gc_collections": gc_counts,
        "max_rss_kib_after_plan": rss_after_plan,
        "summary": summary,
    }


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args:
        sys.stderr.write("usage: python -m bench.phases SNAPSHOT [PLAN FLAGS...]\n")
        return 2
    result = measure_phases(args[0], args[1:])
    sys.stdout.write(json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

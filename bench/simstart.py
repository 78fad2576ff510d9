"""``simulate`` start-up at scale: ``python -m bench.simstart [--nodes 10000 --pods-per-node 10 ...]``.

``tools/gen-bench-snapshot NODES PODS_PER_NODE 0 FILE --scenario DURATION,SCAN`` writes a
cluster with no pending pods plus a ``Scenario`` object (cached in ``--out``). Then, each in
a fresh process, median of ``--repeat``:

* ``json.load`` of the file with the collector off: the baseline;
* start-up: what ``python -m autoscaler simulate FILE`` does before its first loop (read
  the scenario, decode its objects, build the simulated cluster, build the autoscaler),
  in a child that stops there and prints its phases (``--child``);
* the whole run: ``python -m autoscaler simulate FILE --quiet`` over ``DURATION``.

Reported as seconds and as ratios to the baseline (issue 21's bar: start-up within 5x);
``results-simstart.json`` in ``--out`` keeps every raw number. See ``bench/README.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.run import DEFAULT_OUT, GENERATOR, JSON_LOAD_GC_OFF, BenchError, measure, run_measured

__all__ = ["main", "startup_phases"]

#: Issue 21: start-up within 5x of ``json.load`` (collector off) of the same file.
STARTUP_TARGET = 5.0


def startup_phases(path: str) -> dict[str, float]:
    """Start ``simulate`` on ``path`` as the command does, up to its first loop; seconds per phase."""
    began = time.perf_counter()
    from app.cli import build_parser
    from app.gc import collector_paused
    from autoscaler.config import options_from_args
    from autoscaler.loop import Autoscaler
    from emulator.scenario import load_scenario
    from emulator.world import World

    options = options_from_args(build_parser().parse_args(["simulate", path, "--quiet"]))
    phases = {"imports": time.perf_counter() - began}
    start = time.perf_counter()
    with collector_paused():  # as app/simulate/command.py and runner.py do
        scenario = load_scenario(path)
        phases["read"] = time.perf_counter() - start
        world = World(scenario, options.storage, gates=options.feature_gates)
        phases.update(world.build_seconds)
        start = time.perf_counter()
        Autoscaler(world.cluster, world.cloud, options)
        phases["autoscaler"] = time.perf_counter() - start
    phases["total"] = time.perf_counter() - began
    return phases


def _scenario(out: Path, args: argparse.Namespace) -> Path:
    path = out / (f"scenario-n{args.nodes}-ppn{args.pods_per_node}-seed{args.seed}-"
                  f"{args.duration}-{args.scan_interval}.json")
    if path.is_file() and path.stat().st_size > 0:
        print(f"reusing {path.name}", file=sys.stderr)
        return path
    print(f"generating {path.name} ...", file=sys.stderr)
    tmp = path.with_name(path.name + ".tmp")
    argv = [sys.executable, str(GENERATOR), str(args.nodes), str(args.pods_per_node), "0", str(tmp),
            "--seed", str(args.seed), "--scenario", f"{args.duration},{args.scan_interval}"]
    done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        tmp.unlink(missing_ok=True)
        raise BenchError(f"gen-bench-snapshot failed (exit status {done.returncode}): {done.stderr.strip()[-300:]}")
    tmp.replace(path)
    return path


def _phases(path: Path, out: Path, repeat: int, timeout: float) -> tuple[list[float], list[dict[str, float]]]:
    """Start-up in fresh children: the wall of each (spawn to exit) and the phases each printed."""
    walls: list[float] = []
    phases: list[dict[str, float]] = []
    stdout, stderr = out / "simstart-child.json", out / "simstart-child.stderr"
    for i in range(repeat):
        print(f"  {'start-up':<22} run {i + 1}/{repeat} ...", end="", flush=True, file=sys.stderr)
        wall, _, code = run_measured([sys.executable, "-m", "bench.simstart", "--child", str(path)],
                                     stdout, stderr, timeout)
        if code != 0:
            raise BenchError(f"start-up child failed (exit status {code}): "
                             f"{stderr.read_text(encoding='utf-8', errors='replace')[-500:]}")
        walls.append(wall)
        phases.append(json.loads(stdout.read_text(encoding="utf-8")))
        print(f" {wall:.2f}s", file=sys.stderr)
    stdout.unlink(missing_ok=True)
    stderr.unlink(missing_ok=True)
    return walls, phases


def _median_phases(runs: list[dict[str, float]]) -> dict[str, float]:
    return {name: statistics.median(run[name] for run in runs) for name in runs[0]}


def run_bench(args: argparse.Namespace) -> dict[str, Any]:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / ".gitignore").write_text("*\n", encoding="utf-8")
    path = _scenario(out, args)
    py = sys.executable
    base = measure("json.load (gc off)", [py, "-c", JSON_LOAD_GC_OFF, str(path)], args.repeat, out,
                   "simstart-json", timeout=args.timeout)
    walls, phases = _phases(path, out, args.repeat, args.timeout)
    after = measure("json.load (gc off)", [py, "-c", JSON_LOAD_GC_OFF, str(path)], args.repeat, out,
                    "simstart-json-after", timeout=args.timeout)
    run = measure("simulate (whole run)", [py, "-m", "autoscaler", "simulate", str(path), "--quiet"],
                  args.repeat, out, "simstart-run", timeout=args.timeout)
    baseline = statistics.median(base.seconds + after.seconds)
    startup = statistics.median(walls)
    result: dict[str, Any] = {
        "file": path.name, "bytes": path.stat().st_size, "nodes": args.nodes, "podsPerNode": args.pods_per_node,
        "duration": args.duration, "scanInterval": args.scan_interval,
        "jsonLoadGcOffSeconds": baseline, "jsonLoadGcOffAll": base.seconds + after.seconds,
        "startupSeconds": startup, "startupAll": walls, "startupRatio": startup / baseline,
        "phases": _median_phases(phases), "phasesAll": phases,
        "runSeconds": run.median_seconds, "runAll": run.seconds, "runError": run.error,
        "runRatio": run.median_seconds / baseline if run.median_seconds else None,
    }
    (out / "results-simstart.json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return result


def _print(result: dict[str, Any]) -> None:
    base = result["jsonLoadGcOffSeconds"]
    print(f"{result['file']} ({result['bytes'] / 1e6:.1f} MB)")
    print(f"  json.load (gc off)   {base:8.2f}s   1.00x")
    print(f"  simulate start-up    {result['startupSeconds']:8.2f}s  {result['startupRatio']:5.2f}x"
          f"  (target <= {STARTUP_TARGET:g}x)")
    for name, seconds in result["phases"].items():
        print(f"    {name:<18} {seconds:8.2f}s  {seconds / base:5.2f}x")
    if result["runSeconds"] is not None:
        print(f"  simulate whole run   {result['runSeconds']:8.2f}s  {result['runRatio']:5.2f}x"
              f"  ({result['duration']} at {result['scanInterval']})")
    else:
        print(f"  simulate whole run   FAILED: {result['runError']}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.simstart", description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--pods-per-node", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--duration", default="10m", help="the scenario's duration (Go duration)")
    parser.add_argument("--scan-interval", default="1m", help="the scenario's scanInterval")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=1800.0)
    parser.add_argument("--out", default=str(DEFAULT_OUT))
    parser.add_argument("--child", metavar="FILE", help=argparse.SUPPRESS)  # one start-up, phases as JSON
    args = parser.parse_args(argv)
    if args.child is not None:
        print(json.dumps(startup_phases(args.child)), flush=True)
        # The first loop would start here: what the interpreter spends freeing the world at
        # exit is no part of start-up (a real run frees it after its last loop).
        os._exit(0)
    try:
        result = run_bench(args)
    except BenchError as exc:
        print(f"bench.simstart: {exc}", file=sys.stderr)
        return 2
    _print(result)
    return 0 if result["startupRatio"] <= STARTUP_TARGET and result["runError"] is None else 1


if __name__ == "__main__":
    sys.exit(main())

"""The large synthetic cluster benchmark: ``python -m bench.run [options] [--flags PLAN FLAGS...]``.

Generates a cluster with ``tools/gen-bench-snapshot`` (cached in the output
directory, keyed by its parameters), then for the scale-up snapshot (with pending pods)
and the scale-down snapshot (the same cluster, no pending pods) measures, each command in
a fresh subprocess, wall time and peak RSS of:

* ``python -c pass`` (interpreter start-up, for reference),
* ``json.load`` of the file (the baseline), and ``json.load`` with the GC disabled,
* ``python -m autoscaler plan FILE --output=json --now=...`` (stdout to a file).

Then it runs ``bench.phases`` once per snapshot for a phase breakdown, prints a table and
writes ``results.json``. See ``bench/README.md``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.phases import NOW

__all__ = ["main"]

REPO = Path(__file__).resolve().parent.parent
GENERATOR = REPO / "tools" / "gen-bench-snapshot"
DEFAULT_OUT = REPO / "bench" / "out"

#: Targets of issue 11: plan within 2.5x the time of json.load with the collector off, and 0.75x its peak memory.
TIME_TARGET = 2.5
RSS_TARGET = 0.75

EXIT_FAILED = 1
EXIT_BAD_SETUP = 2

JSON_LOAD = "import json, sys; json.load(open(sys.argv[1]))"
JSON_LOAD_GC_OFF = "import gc, json, sys; gc.disable(); json.load(open(sys.argv[1]))"


class BenchError(Exception):
    """A problem that ends the benchmark with one line on stderr."""


@dataclass(slots=True)
class Measurement:
    """Repeated runs of one command: every wall time and peak RSS, or the failure."""

    label: str
    argv: list[str]
    seconds: list[float] = field(default_factory=list)
    max_rss_kib: list[int] = field(default_factory=list)
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and bool(self.seconds)

    @property
    def median_seconds(self) -> float | None:
        return statistics.median(self.seconds) if self.seconds else None

    @property
    def peak_rss_kib(self) -> int | None:
        return max(self.max_rss_kib) if self.max_rss_kib else None

    def to_json(self) -> dict[str, Any]:
        return {"argv": self.argv, "median_seconds": self.median_seconds, "max_rss_kib": self.peak_rss_kib,
                "seconds_all": self.seconds, "max_rss_kib_all": self.max_rss_kib, "error": self.error}


@dataclass(slots=True)
class SnapshotResult:
    name: str
    path: Path
    pending: int
    generated_seconds: float | None
    measurements: dict[str, Measurement] = field(default_factory=dict)
    phases: dict[str, Any] | None = None
    phases_error: str | None = None
    plan_output: Path | None = None
    plan_summary: dict[str, Any] | None = None


# ---------------------------------------------------------------------------- running commands


def run_measured(argv: Sequence[str], stdout_path: Path | None, stderr_path: Path,
                 timeout: float) -> tuple[float, int, int]:
    """Run ``argv`` once; returns (wall seconds, the child's peak RSS in KiB, exit status).

    ``os.wait4`` returns the resource usage of exactly that child. The child's peak RSS
    includes this (small) process's RSS at the time of the fork, so the runner keeps no
    big data while it measures.
    """
    with open(stdout_path if stdout_path is not None else os.devnull, "wb") as out, \
            open(stderr_path, "wb") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=out, stderr=err, cwd=REPO)
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        elapsed = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    proc.returncode = code  # reaped by wait4; tell Popen so it does not wait again
    return elapsed, int(usage.ru_maxrss), code


def _tail(path: Path, lines: int = 15) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(text.rstrip().splitlines()[-lines:])


def measure(label: str, argv: list[str], repeat: int, out_dir: Path, stem: str, *,
            stdout_path: Path | None = None, timeout: float) -> Measurement:
    result = Measurement(label, argv)
    stderr_path = out_dir / f"{stem}.stderr"
    for i in range(repeat):
        print(f"  {label:<22} run {i + 1}/{repeat} ...", end="", flush=True, file=sys.stderr)
        seconds, rss, code = run_measured(argv, stdout_path, stderr_path, timeout)
        if code != 0:
            why = f"killed after {timeout:.0f}s (--timeout)" if seconds >= timeout else f"exit status {code}"
            result.error = f"{why} after {seconds:.2f}s; stderr tail:\n{_tail(stderr_path)}"
            print(f" FAILED ({why})", file=sys.stderr)
            break
        result.seconds.append(seconds)
        result.max_rss_kib.append(rss)
        print(f" {seconds:.2f}s {rss / 1024:.0f} MiB", file=sys.stderr)
    if result.error is None:
        stderr_path.unlink(missing_ok=True)
    return result


# ---------------------------------------------------------------------------- snapshots


def snapshot_path(out_dir: Path, nodes: int, pods_per_node: int, pending: int, seed: int) -> Path:
    return out_dir / f"snapshot-n{nodes}-ppn{pods_per_node}-pending{pending}-seed{seed}.json"


def ensure_snapshot(path: Path, nodes: int, pods_per_node: int, pending: int, seed: int) -> float | None:
    """Generate ``path`` unless it is cached; returns the generation time, or None when reused."""
    if path.is_file() and path.stat().st_size > 0:
        print(f"reusing {path.name}", file=sys.stderr)
        return None
    print(f"generating {path.name} ...", end="", flush=True, file=sys.stderr)
    tmp = path.with_name(path.name + ".tmp")
    argv = [sys.executable, str(GENERATOR), str(nodes), str(pods_per_node), str(pending), str(tmp),
            "--seed", str(seed)]
    start = time.perf_counter()
    done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        tmp.unlink(missing_ok=True)
        last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise BenchError(f"gen-bench-snapshot failed (exit status {done.returncode}): {last}")
    os.replace(tmp, path)
    print(f" {elapsed:.1f}s, {path.stat().st_size / 1e6:.1f} MB", file=sys.stderr)
    return elapsed


# ---------------------------------------------------------------------------- one snapshot


def bench_snapshot(snap: SnapshotResult, flags: list[str], repeat: int, out_dir: Path, timeout: float) -> None:
    py = sys.executable
    file = str(snap.path)
    print(f"{snap.name}: {snap.path.name}", file=sys.stderr)
    snap.measurements["startup"] = measure("python startup", [py, "-c", "pass"], repeat, out_dir,
                                           f"{snap.name}-startup", timeout=timeout)
    snap.measurements["json_load"] = measure("json.load", [py, "-c", JSON_LOAD, file], repeat, out_dir,
                                             f"{snap.name}-json-load", timeout=timeout)
    snap.measurements["json_load_gc_off"] = measure("json.load (gc off)", [py, "-c", JSON_LOAD_GC_OFF, file],
                                                    repeat, out_dir, f"{snap.name}-json-load-gc-off",
                                                    timeout=timeout)
    snap.plan_output = out_dir / f"plan-{snap.name}.json"
    plan_argv = [py, "-m", "autoscaler", "plan", file, "--output=json", f"--now={NOW}", *flags]
    plan = measure("plan", plan_argv, repeat, out_dir, f"{snap.name}-plan", stdout_path=snap.plan_output,
                   timeout=timeout)
    snap.measurements["plan"] = plan
    if plan.ok:
        snap.plan_summary = summarize_plan(snap.plan_output)

    print(f"  {'phase breakdown':<22} ...", end="", flush=True, file=sys.stderr)
    stderr_path = out_dir / f"{snap.name}-phases.stderr"
    phases_out = out_dir / f"{snap.name}-phases.json"
    seconds, _, code = run_measured([py, "-m", "bench.phases", file, *flags], phases_out, stderr_path, timeout)
    phases_text = phases_out.read_text(encoding="utf-8")
    phases_out.unlink(missing_ok=True)
    if code == 0:
        snap.phases = json.loads(phases_text)
        stderr_path.unlink(missing_ok=True)
        print(f" {seconds:.2f}s", file=sys.stderr)
    else:
        snap.phases_error = f"exit status {code} after {seconds:.2f}s; stderr tail:\n{_tail(stderr_path)}"
        print(" FAILED", file=sys.stderr)


def summarize_plan(path: Path) -> dict[str, Any] | None:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    up, down = doc.get("scaleUp", {}), doc.get("scaleDown", {})
    return {
        "output_bytes": path.stat().st_size,
        "scale_up_result": up.get("result"),
        "increases": up.get("increases", []),
        "triggered_by": len(up.get("triggeredBy", [])),
        "still_unschedulable": len(up.get("stillUnschedulable", [])),
        "fits_existing_nodes": up.get("fitsExistingNodes"),
        "scale_down_result": down.get("result"),
        "removed": len(down.get("removed", [])),
        "unneeded": len(down.get("unneeded", [])),
        "unremovable": len(down.get("unremovable", [])),
        "nodes": len(doc.get("nodes", [])),
        "warnings": len(doc.get("warnings", [])),
    }


def ratios(snap: SnapshotResult) -> dict[str, dict[str, Any]]:
    plan = snap.measurements.get("plan")
    out: dict[str, dict[str, Any]] = {}
    for key, base_name in (("gc_on", "json_load"), ("gc_off", "json_load_gc_off")):
        base = snap.measurements.get(base_name)
        entry: dict[str, Any] = {"baseline": base_name, "time": None, "rss": None, "time_ok": None, "rss_ok": None}
        if plan is not None and base is not None and plan.ok and base.ok:
            t_plan, t_base = plan.median_seconds, base.median_seconds
            r_plan, r_base = plan.peak_rss_kib, base.peak_rss_kib
            if t_plan is not None and t_base:
                entry["time"] = t_plan / t_base
                entry["time_ok"] = entry["time"] <= TIME_TARGET
            if r_plan is not None and r_base:
                entry["rss"] = r_plan / r_base
                entry["rss_ok"] = entry["rss"] <= RSS_TARGET
        out[key] = entry
    return out


# ---------------------------------------------------------------------------- reporting


def runner_rss_kib() -> int:
    """This process's peak RSS: a child's reported peak RSS is never below it (the fork shares our pages)."""
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def machine() -> dict[str, Any]:
    return {"nproc": os.cpu_count(), "sched_affinity": len(os.sched_getaffinity(0)),
            "python": platform.python_version(), "implementation": platform.python_implementation(),
            "executable": sys.executable, "platform": platform.platform(), "machine": platform.machine()}


def _fmt_s(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _fmt_mib(kib: int | None) -> str:
    return "-" if kib is None else f"{kib / 1024:.0f}"


def _fmt_ratio(value: float | None, ok: bool | None, target: float) -> str:
    if value is None:
        return "-"
    return f"{value:.2f}x (<= {target:g}x {'ok' if ok else 'MISSED'})"


def render_table(results: dict[str, Any], snaps: list[SnapshotResult]) -> str:
    m, p = results["machine"], results["parameters"]
    lines = [
        f"machine: {m['nproc']} CPUs, Python {m['python']} ({m['implementation']}), {m['platform']}",
        f"cluster: {p['nodes']} nodes x {p['pods_per_node']} pods/node, {p['pending']} pending, seed {p['seed']}; "
        f"{p['repeat']} run(s) per command (median time, max peak RSS)"
        + (f"; plan flags: {' '.join(p['flags'])}" if p["flags"] else ""),
        "",
        f"{'snapshot':<12}{'size MB':>9}  {'command':<20}{'time s':>9}{'peak RSS MiB':>14}",
    ]
    for snap in snaps:
        size = f"{snap.path.stat().st_size / 1e6:.1f}" if snap.path.exists() else "-"
        for i, (_, meas) in enumerate(snap.measurements.items()):
            head = f"{snap.name:<12}{size:>9}" if i == 0 else " " * 21
            if meas.ok:
                lines.append(f"{head}  {meas.label:<20}{_fmt_s(meas.median_seconds):>9}"
                             f"{_fmt_mib(meas.peak_rss_kib):>14}")
            else:
                lines.append(f"{head}  {meas.label:<20}{'FAILED':>9}{'-':>14}")
    lines += ["", f"{'snapshot':<12}{'baseline':<20}{'time ratio':<28}{'RSS ratio':<28}"]
    for snap in snaps:
        rs = ratios(snap)
        for i, (key, label) in enumerate((("gc_on", "json.load"), ("gc_off", "json.load (gc off)"))):
            r = rs[key]
            head = f"{snap.name:<12}" if i == 0 else " " * 12
            lines.append(f"{head}{label:<20}{_fmt_ratio(r['time'], r['time_ok'], TIME_TARGET):<28}"
                         f"{_fmt_ratio(r['rss'], r['rss_ok'], RSS_TARGET):<28}")
    lines += ["", "phase breakdown (one in-process run each; seconds, of which in the cyclic GC):"]
    names = [s.name for s in snaps]
    lines.append(f"  {'phase':<26}" + "".join(f"{n:>22}" for n in names))
    rows: list[tuple[str, list[str]]] = []
    keys = [("imports + options", "imports"), ("load (parse + convert)", "load"), ("provider", "provider"),
            ("run_once", "run_once"), ("render (to_json+dumps)", "render")]
    sub = [("snapshot", "snapshot"), ("scaleUp", "scaleUp"), ("scaleDown", "scaleDown"), ("report", "report")]

    def cell(ph: dict[str, Any] | None, key: str) -> str:
        if ph is None:
            return "-"
        sec = ph["seconds"].get(key)
        g = ph["gc_seconds"].get(key, 0.0)
        return "-" if sec is None else f"{sec:.2f} (gc {g:.2f})"

    for label, key in keys:
        rows.append((label, [cell(s.phases, key) for s in snaps]))
        if key == "load":
            rows.append(("  json parse (gc off)", [_fmt_s(s.phases["json_parse_seconds"]) if s.phases else "-"
                                                   for s in snaps]))
            rows.append(("  convert (load - parse)", [_fmt_s(s.phases["convert_seconds"]) if s.phases else "-"
                                                      for s in snaps]))
        if key == "run_once":
            for sublabel, subkey in sub:
                rows.append((f"  {sublabel}", [_fmt_s(s.phases["run_once_timings"].get(subkey)) if s.phases
                                               else "-" for s in snaps]))
    rows.append(("total", [_fmt_s(s.phases["total_seconds"]) if s.phases else "-" for s in snaps]))
    rows.append(("peak RSS MiB (after plan)", [_fmt_mib(s.phases["max_rss_kib_after_plan"]) if s.phases else "-"
                                               for s in snaps]))
    for label, cells in rows:
        lines.append(f"  {label:<26}" + "".join(f"{c:>22}" for c in cells))

    lines.append("")
    for snap in snaps:
        if snap.plan_summary:
            s = snap.plan_summary
            incs = ", ".join(f"+{i.get('delta')} {i.get('nodeGroup')}" for i in s["increases"]) or "none"
            lines.append(f"{snap.name} plan: scaleUp {s['scale_up_result']} ({incs}; {s['triggered_by']} triggering, "
                         f"{s['still_unschedulable']} still unschedulable, {s['fits_existing_nodes']} fit existing "
                         f"nodes), scaleDown {s['scale_down_result']} ({s['removed']} removed, {s['unneeded']} "
                         f"unneeded, {s['unremovable']} unremovable), output {s['output_bytes'] / 1e3:.0f} kB")
        for meas in snap.measurements.values():
            if meas.error:
                lines.append(f"{snap.name} {meas.label} FAILED: {meas.error}")
        if snap.phases_error:
            lines.append(f"{snap.name} phase breakdown FAILED: {snap.phases_error}")
    lines.append(f"targets: plan time <= {TIME_TARGET:g}x json.load, plan peak RSS <= {RSS_TARGET:g}x json.load")
    return "\n".join(lines)


def snapshot_json(snap: SnapshotResult) -> dict[str, Any]:
    return {
        "file": str(snap.path),
        "bytes": snap.path.stat().st_size if snap.path.exists() else None,
        "pending": snap.pending,
        "generated_seconds": snap.generated_seconds,
        "measurements": {k: v.to_json() for k, v in snap.measurements.items()},
        "ratios": ratios(snap),
        "phases": snap.phases,
        "phases_error": snap.phases_error,
        "plan_output": str(snap.plan_output) if snap.plan_output else None,
        "plan_summary": snap.plan_summary,
    }


# ---------------------------------------------------------------------------- command line


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods-per-node", type=int, default=30)
    parser.add_argument("--pending", type=int, default=2000, help="pending pods of the scale-up snapshot")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=3, help="runs per command (median time, max RSS)")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds before a run is killed")
    parser.add_argument("--keep", action="store_true",
                        help="keep the snapshots generated by this run (default: delete them at the end; "
                             "snapshots already in the output directory are always reused and kept)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output directory (default: bench/out)")
    parser.add_argument("--flags", nargs=argparse.REMAINDER, default=[],
                        help="everything after --flags is passed to plan (must come last)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return run(args)
    except BenchError as exc:
        sys.stderr.write(f"bench: {exc}\n")
        return EXIT_BAD_SETUP


def run(args: argparse.Namespace) -> int:
    if not GENERATOR.is_file():
        raise BenchError(f"snapshot generator not found: {GENERATOR} (expected tools/gen-bench-snapshot "
                         "in the repository)")
    for name in ("nodes", "pods_per_node", "pending", "repeat"):
        if getattr(args, name) < (1 if name in ("nodes", "repeat") else 0):
            raise BenchError(f"--{name.replace('_', '-')}: out of range: {getattr(args, name)}")
    out_dir: Path = args.out.resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    ignore = out_dir / ".gitignore"
    if not ignore.exists():
        ignore.write_text("*\n", encoding="utf-8")
    flags: list[str] = list(args.flags)
    started = time.time()

    snaps: list[SnapshotResult] = []
    generated: list[Path] = []
    try:
        for name, pending in (("scale-up", args.pending), ("scale-down", 0)):
            path = snapshot_path(out_dir, args.nodes, args.pods_per_node, pending, args.seed)
            gen_seconds = ensure_snapshot(path, args.nodes, args.pods_per_node, pending, args.seed)
            if gen_seconds is not None:
                generated.append(path)
            snaps.append(SnapshotResult(name, path, pending, gen_seconds))
        for snap in snaps:
            bench_snapshot(snap, flags, args.repeat, out_dir, args.timeout)

        results: dict[str, Any] = {
            "started_at": dt.datetime.fromtimestamp(started, dt.UTC).isoformat(timespec="seconds"),
            "elapsed_seconds": time.time() - started,
            "machine": machine(),
            "parameters": {"nodes": args.nodes, "pods_per_node": args.pods_per_node, "pending": args.pending,
                           "seed": args.seed, "repeat": args.repeat, "flags": flags, "now": NOW,
                           "rss_method": "os.wait4 ru_maxrss of each child",
                           "rss_floor_kib": runner_rss_kib()},
            "targets": {"time_ratio_max": TIME_TARGET, "rss_ratio_max": RSS_TARGET},
            "snapshots": {snap.name: snapshot_json(snap) for snap in snaps},
        }
        table = render_table(results, snaps)
        results_path = out_dir / "results.json"
        results_path.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    finally:
        if not args.keep:
            for path in generated:
                path.unlink(missing_ok=True)
    print(table)
    print(f"\nresults: {results_path}")
    failed = any(not m.ok for s in snaps for m in s.measurements.values()) or any(s.phases_error for s in snaps)
    return EXIT_FAILED if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())

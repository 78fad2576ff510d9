"""Upstream's benchmark scale: ``python -m bench.scale [pending|loop] [options]``.

Two cases beside ``bench.run``'s 5,000-node snapshot, both reported as ratios against
the same machine's ``json.load`` of the same file with the collector off:

* ``pending``: ``tools/gen-pending-snapshot`` writes 50,000 pending pods of 14
  shapes (a sixth with local claims) across 4 groups; ``plan`` runs with no node cap
  (``--max-nodes-per-scaleup=1000000 --max-nodegroup-binpacking-duration=1h``) and with
  default limits, each in a fresh process (median of ``--repeat``). The chosen group's
  node count is compared with the resource lower bound of the pods it was chosen for
  (the largest of the CPU, memory, pods and local-storage totals over one node's room).
* ``loop``: ``gen-bench-snapshot`` writes a 10,000-node cluster with no pending pods;
  in this process the real ``Autoscaler`` loop runs over a cluster API that returns the
  converted objects (as the live adapter's caches would): one first loop, then
  ``--loops`` steady-state loops. Reported: mean and max loop time against the parse
  time of the file. ``--churn N`` relabels N random pods before each of those loops, so the
  loop sees a cluster that changed: the candidates whose verdicts stand are replayed,
  the rest simulated (``candidatesReplayed``).
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import random
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec.structs

from bench.phases import NOW
from bench.run import DEFAULT_OUT, JSON_LOAD_GC_OFF, REPO, BenchError, ensure_snapshot, measure, snapshot_path

__all__ = ["main"]

PENDING_GENERATOR = REPO / "tools" / "gen-pending-snapshot"
NO_CAP = ["--max-nodes-per-scaleup=1000000", "--max-nodegroup-binpacking-duration=1h"]


def _pending_snapshot(out_dir: Path, pending: int) -> Path:
    import subprocess

    path = out_dir / f"pending-{pending}.json"
    if not path.is_file():
        if not PENDING_GENERATOR.is_file():
            raise BenchError(f"generator not found: {PENDING_GENERATOR}")
        print(f"generating {path.name} ...", file=sys.stderr)
        subprocess.run([sys.executable, str(PENDING_GENERATOR), str(pending), str(path)], check=True)
    return path


def _lower_bound(snapshot: Path, plan: dict[str, Any]) -> dict[str, Any] | None:
    """Nodes the chosen group needs at least for the pods it was chosen for."""
    increases = plan["scaleUp"].get("increases") or []
    if not increases:
        return None
    from kube.load import load_snapshot
    from kube.names import StorageNames

    objects = load_snapshot([str(snapshot)], StorageNames())
    group = next(g for g in objects.node_groups if g.name == increases[0]["nodeGroup"])
    template = group.template or next(n for n in objects.nodes if group.selects(n))
    pods = {p.ref: p for p in objects.pods}
    claims = objects.claims
    chosen = [pods[ref] for ref in plan["scaleUp"]["triggeredBy"] if ref in pods]
    alloc = template.allocatable
    local = sum(claims[(p.namespace, c)].request for p in chosen for c in p.claims if (p.namespace, c) in claims)
    bounds = {
        "cpu": sum(p.requests.cpu for p in chosen) / alloc.cpu if alloc.cpu else 0.0,
        "memory": sum(p.requests.memory for p in chosen) / alloc.memory if alloc.memory else 0.0,
        "pods": len(chosen) / alloc.pods if alloc.pods else 0.0,
        "storage": local / template.max_local_bytes if template.max_local_bytes else 0.0,
    }
    bound = math.ceil(max(bounds.values()))
    nodes = int(increases[0]["delta"])
    return {"group": group.name, "nodes": nodes, "lowerBound": bound, "overLowerBound": nodes / bound - 1,
            "pods": len(chosen)}


def bench_pending(args: argparse.Namespace, out_dir: Path) -> dict[str, Any]:
    path = _pending_snapshot(out_dir, args.pending)
    py = sys.executable
    base = measure("json.load (gc off)", [py, "-c", JSON_LOAD_GC_OFF, str(path)], args.repeat, out_dir,
                   "pending-json", timeout=args.timeout)
    result: dict[str, Any] = {"file": path.name, "bytes": path.stat().st_size,
                              "jsonLoadGcOffSeconds": base.median_seconds}
    for label, flags in (("noCap", NO_CAP), ("defaultLimits", [])):
        output = out_dir / f"plan-pending-{label}.json"
        plan = measure(f"plan ({label})", [py, "-m", "autoscaler", "plan", str(path), f"--now={NOW}", *flags],
                       args.repeat, out_dir, f"pending-{label}", stdout_path=output, timeout=args.timeout)
        entry: dict[str, Any] = {"seconds": plan.median_seconds, "peakRssMiB": (plan.peak_rss_kib or 0) / 1024}
        if plan.median_seconds and base.median_seconds:
            entry["ratio"] = plan.median_seconds / base.median_seconds
        if plan.ok:
            entry["packing"] = _lower_bound(path, json.loads(output.read_text(encoding="utf-8")))
        result[label] = entry
    return result


class _StaticCluster:
    """The cluster API of a loop whose caches hold these objects (reads only; acting is recorded)."""

    def __init__(self, objects: Any) -> None:
        self.objects = objects
        self.calls: list[str] = []

    def list_objects(self) -> Any:
        return self.objects

    def pods_on_node(self, node: str) -> Sequence[Any]:
        return [p for p in self.objects.pods if p.node_name == node]

    def __getattr__(self, name: str) -> Any:
        def record(*args: Any, **kwargs: Any) -> None:
            self.calls.append(name)

        return record


def _churn(objects: Any, count: int, step: int) -> None:
    """Replace ``count`` pods, anywhere in the cluster, by copies with a new label, as a watch event would."""
    pods = objects.pods
    rng = random.Random(step)
    for i in rng.sample(range(len(pods)), count):
        pods[i] = msgspec.structs.replace(pods[i], labels={**pods[i].labels, "bench-churn": str(step)})


def bench_loop(args: argparse.Namespace, out_dir: Path) -> dict[str, Any]:
    from app.gc import collector_paused
    from autoscaler.config import options_from_args
    from autoscaler.loop import Autoscaler
    from cloudproviders.snapshot import SnapshotProvider
    from kube.load import load_snapshot

    path = snapshot_path(out_dir, args.nodes, 30, 0, 1)
    ensure_snapshot(path, args.nodes, 30, 0, 1)
    gc.disable()
    start = time.perf_counter()
    with open(path, encoding="utf-8") as handle:
        json.load(handle)
    parse = time.perf_counter() - start
    gc.enable()
    gc.collect()
    from app.cli import build_parser

    options = options_from_args(build_parser().parse_args(["plan", str(path)]))
    objects = load_snapshot([str(path)], options.storage)
    provider = SnapshotProvider(objects.node_groups, objects.nodes)
    loop = Autoscaler(_StaticCluster(objects), provider, options)
    now = time.time()
    # As the commands run it: the collector paused while a loop runs (app/gc.py).
    with collector_paused():
        first = loop.run_once(now).wall_seconds
    times: list[float] = []
    phases: list[dict[str, float]] = []
    replayed: list[int] = []
    for i in range(args.loops):
        if args.churn:
            _churn(objects, args.churn, i)
        with collector_paused():
            record = loop.run_once(now + 10.0 * (i + 1))
        times.append(record.wall_seconds)
        phases.append(record.decision.timings)
        kept = record.decision.scale_down.last_pass
        replayed.append(kept.replayed if kept is not None else 0)
    mean = statistics.mean(times)
    return {"nodes": args.nodes, "pods": len(objects.pods), "churn": args.churn, "parseSeconds": parse,
            "firstLoopSeconds": first,
            "meanLoopSeconds": mean, "maxLoopSeconds": max(times), "ratioToParse": mean / parse,
            "loopSeconds": times, "candidatesReplayed": replayed,
            "meanPhases": {k: statistics.mean(p.get(k, 0.0) for p in phases) for k in phases[0]}}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.scale", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("cases", nargs="*", choices=("pending", "loop"), default=["pending", "loop"])
    parser.add_argument("--pending", type=int, default=50000)
    parser.add_argument("--nodes", type=int, default=10000, help="nodes of the loop case")
    parser.add_argument("--loops", type=int, default=5, help="steady-state loops of the loop case")
    parser.add_argument("--churn", type=int, default=0,
                        help="loop case: pods changed (relabelled) before each steady-state loop")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=1800.0)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    out_dir: Path = args.out.resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {}
    try:
        if "pending" in args.cases:
            results["pending"] = bench_pending(args, out_dir)
        if "loop" in args.cases:
            results["loop"] = bench_loop(args, out_dir)
    except BenchError as exc:
        sys.stderr.write(f"bench: {exc}\n")
        return 2
    (out_dir / "scale-results.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
